#!/bin/sh
# The training runs' figures, held still: a sweep of layouts (one GPU and every precision, DDP
# and ZeRO 1-3, tensor and sequence parallelism, pipelines with every schedule, 3D, checkpoint
# policies, injections, a constant scaler) gives the figures recorded in
# tests/data/train_bits.json. A change meant to move code, not numbers (the layout's home, the
# communication's file, the settings' table), must leave them as they were: exactly, where no
# rounding can move them (ledger peaks, bytes sent, the pipeline's order, parameter counts,
# skipped steps, loss scales), and within the tolerance the file states where the CPU's own
# kernels move them (losses, norms, clip coefficients, underflow: tests/train_figures.py says
# why, and how each tolerance was measured). A loss moved by 1e-5 relative, one byte of a
# ledger or two operations of a pipeline swapped fails the test on any CPU (planted below).
# The figures are the run's own, never its times: the simulated clock and the host's seconds
# may change with the cost model, the losses and ledgers may not.
#
# After a change meant to move the numbers, UPDATE_TRAIN_BITS=1 records the file anew (say why
# in the commit): each layout under every CPU configuration this machine can run, so that the
# tolerances are measured again.
. "$srcdir/tests/lib.sh"
threadless "numbers only: the recorded figures"

ref="$srcdir/tests/data/train_bits.json"
figs="python3 $srcdir/tests/train_figures.py"
steps=4

layouts="
--precision=fp32
--precision=bf16
--precision=fp16
--precision=fp16:--loss-scale=1024
--precision=bf16:--grad-accum=fp32
--precision=fp16:--inject=nan@2:--inject=spike@3:3
--precision=bf16:--clip=0.5:--checkpoint=full
--checkpoint=every:2:--precision=bf16
--checkpoint=selective
--checkpoint=sqrt:--micro-batches=2
--gpus=2
--gpus=4:--zero=1:--precision=bf16
--gpus=4:--zero=2:--bucket=64KiB:--precision=fp16
--gpus=8:--zero=3:--precision=bf16
--gpus=4:--zero=3:--prefetch=0
--gpus=2:--zero=2:--precision=bf16:--grad-accum=fp32
--gpus=4:--precision=fp16:--inject=inf@2:gpu=3
--tp=2
--tp=4:--precision=bf16
--tp=2:--sequence-parallel:--precision=bf16
--tp=4:--sequence-parallel:--checkpoint=full
--dp=2:--tp=2:--zero=3
--pp=2:--micro-batches=4
--pp=4:--micro-batches=4:--schedule=gpipe:--precision=bf16
--pp=2:--micro-batches=4:--schedule=interleaved
--pp=2:--micro-batches=2:--dp=2:--zero=1
--dp=2:--tp=2:--pp=2:--micro-batches=2:--precision=bf16
--dp=2:--tp=2:--pp=2:--micro-batches=2:--sequence-parallel:--zero=1
--tp=2:--pp=2:--micro-batches=4:--schedule=interleaved:--sequence-parallel:--precision=fp16
--gpus=4:--nodes=2:--precision=bf16
--model=small:--gpus=2:--zero=1:--precision=bf16
"
# step 1's gradients (--dump), as the norms of 64 runs of them, for a few of them
dumps="--precision=bf16 --gpus=4:--zero=3:--prefetch=0 --tp=4:--sequence-parallel:--checkpoint=full
--dp=2:--tp=2:--pp=2:--micro-batches=2:--precision=bf16"
# Under the sanitizers a run is ~10 times slower: the normal build holds every layout.
if $sanitized; then
    layouts="--precision=bf16 --dp=2:--tp=2:--pp=2:--micro-batches=2:--sequence-parallel:--zero=1"
    dumps=""
fi

# figures_of KIND ARGS: the figures of one run (KIND run or dump) in $T_TMP/figs, status in $status
figures_of() {
    k=$1; shift
    if [ "$k" = run ]; then
        run train --steps $steps --batch 8 --json "$@"
        [ "$status" -eq 0 ] && printf '%s\n' "$out" | $figs figures >"$T_TMP/figs"
    else
        rm -rf "$T_TMP/dump"
        run train --steps 1 --batch 8 --json --dump "$T_TMP/dump" "$@"
        [ "$status" -eq 0 ] && $figs dumpfig "$T_TMP/dump" >"$T_TMP/figs"
    fi
}

if [ -n "${UPDATE_TRAIN_BITS:-}" ]; then
    # Every configuration this machine runs: scalelab's vector path (SCALELAB_CPU) with an
    # OpenBLAS core type (OPENBLAS_CORETYPE; one this CPU cannot run dies or is not taken).
    configs=""
    for c in native:native avx2:Haswell avx2:Zen avx2:Sandybridge portable:Nehalem \
        portable:Core2 portable:Prescott portable:Barcelona; do
        core=${c#*:}
        [ "$core" = native ] && { configs="$configs $c"; continue; }
        if OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=$core "$SCALELAB" train --steps 1 --batch 2 \
            >/dev/null 2>"$T_TMP/core" && grep -q "Core: $core" "$T_TMP/core"; then
            configs="$configs $c"
        fi
    done
    echo "# recording under:$configs"
    {
        printf '{"configs": ['
        sep=""
        for c in $configs; do printf '%s"%s"' "$sep" "$c"; sep=", "; done
        printf '],\n'
        for section in runs dumps; do
            [ $section = runs ] && list=$layouts kind=run || list=$dumps kind=dump
            printf '"%s": [\n' $section
            sep=""
            for l in $list; do
                args=$(printf '%s' "$l" | sed 's/:--/ --/g')
                printf '%s{"args": "%s", "figures": {' "$sep" "$args"
                csep=""
                for c in $configs; do
                    path=${c%%:*} core=${c#*:}
                    [ "$core" = native ] && core=""
                    SCALELAB_CPU=$path OPENBLAS_CORETYPE=$core figures_of $kind $args
                    [ "$status" -eq 0 ] || { echo "train $args under $c: exit $status: $err" >&2; exit 1; }
                    printf '%s"%s": %s' "$csep" "$c" "$(cat "$T_TMP/figs")"
                    csep=", "
                done
                printf '}}\n'
                sep=","
            done
            [ $section = runs ] && printf '],\n' || printf ']}\n'
        done
    } >"$T_TMP/spreads.json" || exit 1
    $figs record "$ref" "$T_TMP/spreads.json" || exit 1
    echo "1..0 # SKIP recorded $ref"
    exit 0
fi

for l in $layouts; do
    args=$(printf '%s' "$l" | sed 's/:--/ --/g')
    figures_of run $args
    if [ "$status" -ne 0 ]; then
        not_ok "train $args: the figures as recorded" "exit $status" "stderr: $err"
        continue
    fi
    if $figs check "$ref" "$args" "$T_TMP/figs" >"$T_TMP/moved"; then
        ok "train $args: the figures as recorded"
    else
        not_ok "train $args: the figures as recorded" "$(cat "$T_TMP/moved")"
    fi
    [ -z "${first:-}" ] && cp "$T_TMP/figs" "$T_TMP/first" && first=$args
    cp "$T_TMP/figs" "$T_TMP/last"; last=$args
    case "$args" in *--pp*) cp "$T_TMP/figs" "$T_TMP/last-pp"; last_pp=$args ;; esac
done

# The guard can fail: step 1's loss moved by 1e-5 relative (in the first layout), one ledger byte
# more (the last), one pipeline stage's operations in another order (the last pipeline), each
# planted in the figures of a run above, differ from the record.
for p in loss byte order; do
    case $p in loss) f=first a=$first ;; byte) f=last a=$last ;; order) f=last-pp a=$last_pp ;; esac
    $figs plant "$T_TMP/$f" $p >"$T_TMP/planted"
    if $figs check "$ref" "$a" "$T_TMP/planted" >"$T_TMP/moved"; then
        not_ok "a planted change ($p) in train $a: found" "the check passed"
    else
        ok "a planted change ($p) in train $a: found ($(head -n 1 "$T_TMP/moved"))"
    fi
done

for l in $dumps; do
    args=$(printf '%s' "$l" | sed 's/:--/ --/g')
    figures_of dump $args
    if [ "$status" -eq 0 ] && $figs check "$ref" "$args" "$T_TMP/figs" >"$T_TMP/moved"; then
        ok "train --dump $args: step 1's gradients and loss as recorded"
    else
        not_ok "train --dump $args: step 1's gradients and loss as recorded" \
            "exit $status; $(cat "$T_TMP/moved" 2>/dev/null)" "stderr: $err"
    fi
done
done_testing
