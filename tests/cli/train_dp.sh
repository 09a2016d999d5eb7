#!/bin/sh
# Data parallelism on the thread-GPUs (train --gpus N --zero S): the same training as one GPU,
# every stage the same bits, every measured byte the calculator's, one verdict for all GPUs,
# failures that end the run, layouts refused with their reason.
. "$srcdir/tests/lib.sh"

# Under the sanitizers a run is ~10 times slower: the same checks on fewer layouts.
slow=$quick

# --- Equivalence: N GPUs train as one does (fp32; only the order of the sums differs).
# Tolerance 1e-5 relative per step: the ring adds N shares in another order than one GPU's
# matmul does, a few fp32 ulps per gradient; over 30 steps of AdamW the losses stay within
# ~1e-7 of each other on the development host, a hundred times inside the bound. 10 steps are
# run, as train_tp and train_pp run: a sum or a shard out of place shows from step 1 or 2.
steps=10
gpus_list="2 3 4 8"
$slow && steps=6 && gpus_list="2 3"
$tsan && gpus_list=3
run train --steps $steps --batch 24 --clip 1 --json
check_status 0 "one GPU, the reference"
save g1
for n in $gpus_list; do
    run train --steps $steps --batch 24 --clip 1 --gpus $n --json
    check_status 0 "--gpus $n trains"
    check_losses g1 $steps 1e-5 "--gpus $n" $n
done

# --- Gradient accumulation: the batch of each data-parallel rank run as m micro-batches
# trains as one GPU with the whole batch, at every ZeRO stage (the same tolerance: the
# micro-batches' sums come in another order). Stages 0 and 1 reduce once every micro-batch's
# gradients are in; a model small enough for one bucket, whose embedding's gradients complete
# a backward pass, once reduced that bucket after the next-to-last micro-batch (a norm of
# 0.89 for 1.17 at m 2), so the run is tiny's, in one bucket. Stages 2 and 3 reduce-scatter
# each micro-batch's and add their part to their shard.
accum_ms="2 4"
$slow && accum_ms=2
for z in 0 1 2 3; do
    for m in $accum_ms; do
        run train --steps $steps --batch 24 --clip 1 --gpus 2 --zero $z --micro-batches $m --json
        check_status 0 "--gpus 2 --zero $z --micro-batches $m trains"
        check_losses g1 $steps 1e-5 "--gpus 2 --zero $z --micro-batches $m" 2
    done
done

# --- Every stage the same bits: they reduce each element around the same ring, in order.
same_ns="2 3" same_precs="fp32 bf16"
$slow && same_ns=3 same_precs=bf16
for prec in $same_precs; do
    for n in $same_ns; do
        for z in 0 1 2 3; do
            run train --steps 5 --batch 12 --gpus $n --zero $z --precision $prec --json
            check_status 0 "--gpus $n --zero $z --precision $prec"
            save "s$prec$n$z"
        done
        PYCODE="
runs = [load('s$prec$n%d' % z) for z in range(4)]
keys = ('loss', 'grad_norm', 'loss_scale')
for z in (1, 2, 3):
    for a, b in zip(runs[0][:-1], runs[z][:-1]):
        assert all(a[k] == b[k] for k in keys), (z, a, b)
" py "$prec, $n GPUs: stages 0, 1, 2 and 3 give bit-identical losses and norms at every step"
    done
done

# --- Gradients of step 1, gathered from the shards, equal one GPU's (so train_torch.sh's
# PyTorch check covers the data-parallel runs too). 1e-6 relative to the largest gradient:
# the sums differ in order only.
run train --steps 1 --batch 12 --dump "$T_TMP/d1" --json
check_status 0 "--dump on one GPU"
for z in 0 3; do
    run train --steps 1 --batch 12 --gpus 3 --zero $z --dump "$T_TMP/d3z$z" --json
    check_status 0 "--dump on 3 GPUs at stage $z"
    check_grads "$T_TMP/d1" "$T_TMP/d3z$z" 1e-6 "stage $z on 3 GPUs"
done

numeric_done # (tests/as_cpu.sh: what follows is the same on every CPU)

# --- Measured = predicted: every GPU's ledger peaks and bytes sent equal the calculator's.
models="tiny small"
ns="2 3 4 8"
precs="bf16 fp32"
if $slow; then models=tiny ns=3; fi
$tsan && precs=bf16
for model in $models; do
    for prec in $precs; do
        for n in $ns; do
            for z in 0 1 2 3; do
                run train --model $model --steps 1 --batch $n --gpus $n --zero $z --precision $prec --json --summary
                check_predicted "$model $prec, $n GPUs, stage $z" $n
            done
        done
    done
done
# The bytes, against the textbook formula: (N-1) ceil(Ψ/N) x 2 B per pass, 2 passes at stages
# 0-2, 3 at stage 3 (tiny: Ψ = 202,304).
for spec in "0 2" "3 3"; do
    set -- $spec
    run train --steps 1 --batch 12 --gpus 3 --zero $1 --precision bf16 --json --summary
    check_json "all(g['sent_bytes_per_step'] == $2 * 2 * 67435 * 2 for g in d['summary']['per_gpu'])" \
        "stage $1 on 3 GPUs sends $2 passes of 2 x 67,435 bf16 elements (the padding counted)"
done
# --grad-accum fp32: 4-byte gradients, reduced as such, at every stage.
run train --steps 1 --batch 12 --gpus 2 --zero 3 --precision bf16 --grad-accum fp32 --json --summary
check_json "(lambda s: all(g['sent_bytes_per_step'] == s['predicted']['comm_bytes_per_gpu'] == 101152 * (2 * 2 + 4) and g['peak']['gradients'] == 101152 * 4 for g in s['per_gpu']))(d['summary'])" \
    "ZeRO-3 with fp32 gradients reduce-scatters 4-byte gradients: (2 x 2 + 4) B per element"
# ZeRO-3 without prefetch holds one gathered unit, not two.
run train --steps 1 --batch 12 --gpus 2 --zero 3 --prefetch 0 --json --summary
check_json "(lambda s: s['per_gpu'][0]['peak']['communication'] == s['predicted']['per_gpu']['communication'] and s['layout']['prefetch'] == 0)(d['summary'])" \
    "--prefetch 0: one gathered unit, as the calculator says"
run memory --model tiny --gpus 2 --zero 3 --precision fp32 --micro-batch 6 --json
one=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['per_gpu']['communication'])")
run memory --model tiny --gpus 2 --zero 3 --precision fp32 --micro-batch 6 --prefetch 0 --json
check_json "d['per_gpu']['communication'] < $one" "memory --prefetch 0 counts fewer buffers than prefetching"

# --- One verdict: a NaN on one GPU makes every GPU skip that step and halve the scale.
run train --steps 4 --batch 8 --gpus 4 --zero 2 --precision fp16 --inject nan@2:gpu=3 --json
check_status 0 "a NaN on GPU 3"
check_jsonl "d[1]['skipped'] and d[1]['overflow'] and d[1]['nonfinite_gpu'] == 3 and d[1]['nonfinite'] == 'layer 2 attn scores' and d[2]['loss_scale'] == d[1]['loss_scale'] / 2 and not d[2]['skipped'] and d[0]['nonfinite_gpu'] == -1" \
    "every GPU skips step 2 and halves the scale; the step names GPU 3 and the tensor"
run train --steps 3 --batch 8 --gpus 2 --precision fp16 --inject nan@2:gpu=1
check_contains "$out" "non-finite on GPU 1: layer 2 attn scores" "the text names the GPU and the tensor"
# An inf injected on one GPU (in its last layer's MLP gradient, before the reduce-scatter):
# every GPU skips step 2 with the same scale, each read from its own record.
run train --steps 4 --batch 8 --gpus 4 --zero 2 --precision fp16 --inject inf@2:gpu=2 --json
check_status 0 "an inf on GPU 2 at ZeRO-2"
check_jsonl "[x['skipped'] for x in d[:4]] == [False, True, False, False] and all(g['skipped'] == x['skipped'] and g['next_scale'] == y['loss_scale'] for x, y in zip(d[:3], d[1:4]) for g in x['per_gpu']) and d[2]['loss_scale'] == d[1]['loss_scale'] / 2" \
    "every GPU skips step 2 alone and halves the scale, per GPU"
# fp16 at ZeRO-2 with the scale at 2^20: step 1's gradients overflow in GPU 0's shard only, so
# the other GPUs find nothing themselves; they skip with it because the GPUs agree on the
# verdict. Every step's verdict and scale are one GPU's, on every GPU.
for z in 1 2 3; do
    run train --steps 4 --batch 8 --precision fp16 --init-scale 1048576 --json
    save f1
    run train --steps 4 --batch 8 --gpus 4 --zero $z --precision fp16 --init-scale 1048576 --json
    check_status 0 "fp16 at ZeRO-$z, scale 2^20"
    save f4
    PYCODE="
a, b = load('f1')[:-1], load('f4')[:-1]
assert [(x['skipped'], x['loss_scale']) for x in a] == [(x['skipped'], x['loss_scale']) for x in b], (a, b)
own = [g['overflow_own'] for g in b[0]['per_gpu']]
assert a[0]['skipped'] and any(own) and not all(own), own  # step 1: some shards only
for x, y in zip(b, b[1:]):
    for g in x['per_gpu']:
        assert g['skipped'] == x['skipped'] and g['next_scale'] == y['loss_scale'], (x['step'], g)
" py "ZeRO-$z: an overflow in some shards only is every GPU's verdict, one GPU's, with one scale"
done

# --- Failure: the GPU fails in the step's gradient sync; every thread ends, exit 1, fast.
start=$(date +%s)
run train --steps 50 --batch 8 --gpus 4 --zero 1 --fail 2@3
end=$(date +%s)
check_status 1 "--fail 2@3"
check_contains "$err" "GPU 2" "the message names the GPU"
check_contains "$err" "step 3" "and the step"
# Not a timing: a hang would wait out the 600 s deadline; 60 s (300 s under a sanitizer),
# far more than the run takes on a loaded host, tells a run that ended at once from one
# that waited for it.
limit=60
$slow && limit=300
[ $((end - start)) -le $limit ] && ok "the failed run ends within seconds ($((end - start)) s)" ||
    not_ok "the failed run took $((end - start)) s"

# --- 64 GPUs on 2 cores: waits block, the run completes (one step under the sanitizers,
# where the second took 11 s of TSan's CPU and met no wait the first had not).
n64=2; $slow && n64=1
run train --steps $n64 --batch 64 --gpus 64 --zero 3 --json --summary
check_status 0 "64 GPUs at stage 3"
check_json "len(d['summary']['per_gpu']) == 64 and d['summary']['steps'] == $n64" "64 GPUs report"

# --- Overlap in simulated time: a bucket is reduced on its own stream as soon as its
# gradients exist, while the backward pass goes on. With one bucket for the whole model (25
# MiB) nothing overlaps; 2 MiB buckets hide part of it behind the backward pass (A100s, so
# that the compute is long enough to hide anything).
# (Simulated time does not depend on the build: the sanitizer builds skip this heavy run.)
if ! $slow; then
    run train --model small --gpus 2 --batch 64 --steps 1 --cluster a100-40gb --json --summary
    one=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['summary']['comm_exposed_s'])")
    run train --model small --gpus 2 --batch 64 --steps 1 --cluster a100-40gb --bucket 2MiB --json --summary
    check_json "0 < d['summary']['comm_exposed_s'] < 0.8 * $one" \
        "2 MiB buckets overlap the backward pass: less communication exposed than one bucket"
    run train --model small --gpus 4 --batch 8 --steps 1 --zero 3 --nodes 2 --json --summary
    pf=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['summary']['comm_exposed_s'])")
    run train --model small --gpus 4 --batch 8 --steps 1 --zero 3 --nodes 2 --prefetch 0 --json --summary
    check_json "d['summary']['comm_exposed_s'] > $pf" "ZeRO-3's prefetch hides gathers: more exposed without it"
fi

# One GPU sends nothing: no communication is exposed, 0 exactly (the step's span less its
# compute time is a difference of clock readings, which once showed as -1e-20 s).
run train --model torch-compare --batch 16 --steps 3 --json --summary
check_json "d['summary']['comm_exposed_s'] == 0" "one GPU: no communication exposed, 0 s exactly"

# --- A trace of a data-parallel run shows the sends of every GPU.
run train --steps 2 --batch 4 --gpus 2 --zero 1 --trace "$T_TMP/dp.json"
check_status 0 "--trace with 2 GPUs"
out=$(cat "$T_TMP/dp.json")
check_json "len({e.get('pid') for e in d['traceEvents'] if e.get('cat') == 'compute'}) == 2 and any('reduce-scatter' in str(e.get('name')) for e in d['traceEvents'])" \
    "the trace holds both GPUs' compute and their reduce-scatters"

# --- The text output: a table per GPU beside the prediction.
run train --steps 2 --batch 8 --gpus 2 --zero 2
check_contains "$out" "predicted" "text: the calculator's row"
check_contains "$out" "sent/step" "text: bytes sent per GPU"

# --- Layouts refused with their reason (exit 2).
bad() { w=$1 n=$2; shift 2; refused "$w" "$n" train "$@"; } # WHAT NEEDLE ARGS...
bad "a batch that does not split" "does not split over 3 data-parallel ranks" --gpus 3 --batch 16
bad "65 GPUs" "--gpus" --gpus 65
bad "stage 4" "--zero" --zero 4
bad "an injection on a GPU not in the run" "GPU 5" --gpus 2 --inject nan@1:gpu=5
bad "a failure on a GPU not in the run" "GPU 4" --gpus 2 --fail 4@1
bad "ZeRO-3 with segments" "gather each layer a third time" --gpus 2 --zero 3 --checkpoint every:2
bad "fp32 gradients in fp32" "--grad-accum" --grad-accum fp32
bad "a bucket of 2 bytes" "--bucket" --gpus 2 --bucket 2
bad "nodes that do not split the GPUs" "--nodes" --gpus 4 --nodes 3
bad "a spike threshold beyond reach" "can never be reached" --spike-window 4 --spike-z 100

done_testing
