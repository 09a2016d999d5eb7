#!/bin/sh
# The training runs' bits, held still: a sweep of layouts (one GPU and every precision, DDP and
# ZeRO 1-3, tensor and sequence parallelism, pipelines with every schedule, 3D, checkpoint
# policies, injections, a constant scaler) gives exactly the figures recorded in
# tests/data/train_bits.txt. A change meant to move code, not numbers (the layout's home, the
# communication's file, the settings' table), must leave every loss, norm, scale, verdict,
# underflow count, ledger peak and byte sent as it was, and step 1's gradients (--dump) to the
# bit. The figures digested are the run's own, never its times: the simulated clock and the
# host's seconds may change with the cost model, the losses and ledgers may not.
#
# After a change meant to move the numbers, UPDATE_TRAIN_BITS=1 writes the file anew (say why in
# the commit).
. "$srcdir/tests/lib.sh"

ref="$srcdir/tests/data/train_bits.txt"
steps=4

# What is digested of a run's JSON lines: each step's figures, and the summary's per GPU place,
# peaks and bytes sent, scalars, underflow by layer, the pipeline's executed order.
DIGEST='
import json, sys, hashlib
lines = [json.loads(l) for l in sys.stdin if l.strip()]
keep = ("step", "loss", "grad_norm", "clip_coef", "loss_scale", "skipped", "overflow",
        "nonfinite", "nonfinite_gpu", "underflow_frac", "act_peak_bytes", "comm_bytes_per_gpu")
out = [{k: s[k] for k in keep if k in s} for s in lines[:-1]]
m = lines[-1]["summary"]
out.append({k: m[k] for k in ("first_loss", "skipped_steps", "overflow_steps", "spikes",
                              "final_loss_scale", "max_grad_norm", "min_clip_coef",
                              "max_underflow_frac", "underflow_by_layer", "first_nonfinite",
                              "act_peak_bytes", "memory_peak_bytes", "scalar_bytes_per_step",
                              "parameters")})
out.append([{k: g[k] for k in ("gpu", "coord", "peak", "sent_bytes_per_step",
                               "comm_bytes_per_step")} for g in m["per_gpu"]])
if "pipeline" in m:
    out.append([[(o["kind"], o["micro"], o["chunk"]) for o in st] for st in m["pipeline"]["ops"]])
    out.append(m["pipeline"]["peak_in_flight"])
print(hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest())
'

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
# step 1's gradients, to the bit, for a few of them
dumps="--precision=bf16 --gpus=4:--zero=3:--prefetch=0 --tp=4:--sequence-parallel:--checkpoint=full
--dp=2:--tp=2:--pp=2:--micro-batches=2:--precision=bf16"
# Under the sanitizers a run is ~10 times slower: the normal build holds every layout.
if $sanitized; then
    layouts="--precision=bf16 --dp=2:--tp=2:--pp=2:--micro-batches=2:--sequence-parallel:--zero=1"
    dumps=""
fi

if [ -n "${UPDATE_TRAIN_BITS:-}" ]; then
    : >"$ref.new"
fi
for l in $layouts; do
    args=$(printf '%s' "$l" | sed 's/:--/ --/g')
    run train --steps $steps --batch 8 --json $args
    d=""
    [ "$status" -eq 0 ] && d=$(printf '%s\n' "$out" | python3 -c "$DIGEST")
    if [ -n "${UPDATE_TRAIN_BITS:-}" ]; then
        printf 'run %s %s\n' "$d" "$args" >>"$ref.new"
        continue
    fi
    want=$(awk -v a="$args" '$1 == "run" { $1 = ""; d = $2; $2 = ""; sub(/^  /, ""); if ($0 == a) print d }' "$ref")
    if [ -z "$want" ]; then
        not_ok "train $args: recorded in $ref"
    elif [ "$d" = "$want" ]; then
        ok "train $args: every step's figures, ledger and bytes as recorded"
    else
        not_ok "train $args: every step's figures, ledger and bytes as recorded" \
            "exit $status; digest $d, recorded $want" "stderr: $err"
    fi
done
for l in $dumps; do
    args=$(printf '%s' "$l" | sed 's/:--/ --/g')
    rm -rf "$T_TMP/dump"
    run train --steps 1 --batch 8 --json --dump "$T_TMP/dump" $args
    d=""
    [ "$status" -eq 0 ] && d=$(cat "$T_TMP/dump/grads.f32" "$T_TMP/dump/loss.txt" | sha256sum | cut -d' ' -f1)
    if [ -n "${UPDATE_TRAIN_BITS:-}" ]; then
        printf 'dump %s %s\n' "$d" "$args" >>"$ref.new"
        continue
    fi
    want=$(awk -v a="$args" '$1 == "dump" { $1 = ""; d = $2; $2 = ""; sub(/^  /, ""); if ($0 == a) print d }' "$ref")
    if [ -n "$want" ] && [ "$d" = "$want" ]; then
        ok "train --dump $args: step 1's gradients and loss to the bit"
    else
        not_ok "train --dump $args: step 1's gradients and loss to the bit" \
            "exit $status; digest $d, recorded ${want:-nothing}" "stderr: $err"
    fi
done
if [ -n "${UPDATE_TRAIN_BITS:-}" ]; then
    mv "$ref.new" "$ref"
    echo "# wrote $ref"
fi
done_testing
