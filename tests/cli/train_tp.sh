#!/bin/sh
# Tensor parallelism on the thread-GPUs (train --tp T), alone and combined with data and
# pipeline parallelism (3D): the same training as one GPU, every measured byte the
# calculator's, one verdict for all GPUs, layouts refused with their reason.
. "$srcdir/tests/lib.sh"

# Under the sanitizers a run is ~10 times slower: the same checks on fewer layouts.
slow=$quick

# --- Equivalence: T ranks of each layer train as one GPU does (fp32; the row-parallel
# matmuls' partial sums are added across the group, in another order than one GPU's sgemm: a
# few ulps). 1e-5 relative per step over 10 steps; the development host sees ~1e-8.
steps=10
layouts="--tp=2 --tp=4 --dp=2:--tp=2 --tp=2:--micro-batches=4 --tp=2:--pp=2:--micro-batches=4
--tp=2:--pp=2:--micro-batches=4:--schedule=interleaved --dp=2:--tp=2:--pp=2:--micro-batches=2:--zero=1
--tp=2:--checkpoint=full --tp=4:--checkpoint=selective --tp=2:--sequence-parallel
--tp=4:--sequence-parallel:--checkpoint=full --dp=2:--tp=2:--pp=2:--micro-batches=2:--sequence-parallel
--tp=2:--pp=2:--micro-batches=4:--schedule=interleaved:--sequence-parallel --dp=2:--tp=2:--zero=3"
$slow && steps=4 && layouts="--tp=2 --dp=2:--tp=2:--pp=2:--micro-batches=2:--zero=1 --tp=2:--sequence-parallel"
$tsan && layouts="--dp=2:--tp=2:--pp=2:--micro-batches=2:--zero=1:--sequence-parallel"
losses_per_layout $steps 1e-5 "$layouts"

# --- Step 1's gradients, gathered from every rank's shards (the norms once), equal one
# GPU's: 1e-5 relative to the largest gradient; the same batch and initial weights.
dumps="--tp=4 --dp=2:--tp=2:--pp=2:--micro-batches=2:--zero=1 --tp=2:--pp=2:--micro-batches=2:--sequence-parallel"
$slow && dumps="--dp=2:--tp=2:--pp=2:--micro-batches=2:--zero=1"
$tsan && dumps=""
grads_per_layout 1e-5 "$dumps"

numeric_done # (tests/as_cpu.sh: what follows is the same on every CPU)

# --- Measured = predicted: every GPU's ledger peaks (its shards; activations with the split
# tensors divided by T) and its bytes sent, data-parallel, tensor-parallel and pipeline, equal
# the calculator's for its stage.
cases="tiny:fp32:--tp=2 tiny:bf16:--tp=4:--checkpoint=full small:bf16:--tp=2:--dp=2:--zero=1
small:fp32:--tp=2:--pp=3:--micro-batches=3:--batch=6 tiny:bf16:--dp=2:--tp=2:--pp=2:--micro-batches=4:--checkpoint=selective
tiny:fp16:--tp=2:--pp=2:--micro-batches=4:--schedule=interleaved tiny:bf16:--tp=2:--sequence-parallel:--checkpoint=full
small:bf16:--dp=2:--tp=2:--sequence-parallel:--zero=1 tiny:bf16:--tp=4:--pp=2:--micro-batches=2:--sequence-parallel:--grad-accum=fp32
tiny:fp32:--tp=2:--pp=2:--micro-batches=4:--schedule=interleaved:--sequence-parallel
tiny:bf16:--tp=2:--dp=2:--zero=2 tiny:bf16:--tp=2:--dp=2:--zero=3:--sequence-parallel small:fp32:--tp=2:--dp=2:--zero=3:--prefetch=0"
$slow && cases="tiny:bf16:--dp=2:--tp=2:--pp=2:--micro-batches=4:--checkpoint=selective tiny:bf16:--tp=2:--sequence-parallel:--checkpoint=full"
predicted_per_case "$cases"
# The bytes against the formula, tiny in fp32 on 2 ranks, one micro-batch of 16 x 64 tokens
# (s b h p = 262,144 B; an all-reduce over 2 sends its buffer once): 4 all-reduces per layer
# x 4 layers, the embedding's and the head input's, and three fp32 numbers per token.
run train --steps 1 --tp 2 --json --summary
check_json "all(g['comm_bytes_per_step']['tensor_parallel'] == (16 + 2) * 262144 + 3 * 16 * 64 * 4 for g in d['summary']['per_gpu'])" \
    "tensor-parallel bytes: (4 x 4 + 2) x sbh p + 3 sb x 4 per GPU"
check_json "[(g['coord']['tp'], g['coord']['dp'], g['coord']['pp']) for g in d['summary']['per_gpu']] == [(0, 0, 0), (1, 0, 0)] and d['summary']['layout']['tp'] == 2" \
    "each GPU's coordinates: tensor-parallel rank innermost"
# Sequence parallelism, the same run: per layer a reduce-scatter and an all-gather for each
# all-reduce and the two norms' outputs gathered again (5 all-reduces' worth, each 262,144 B
# here), the embedding's 1 and the head's 1.5, the loss's 3 sb x 4, and once per step the
# norms' weight gradients (2 x 4 + 1 of 64 fp32 values); the activations between the matmuls
# are each GPU's half of the tokens.
run train --steps 1 --tp 2 --sequence-parallel --json --summary
check_json "all(g['comm_bytes_per_step']['tensor_parallel'] == (5 * 4 + 1 + 1.5) * 262144 + 3 * 16 * 64 * 4 + 9 * 64 * 4 for g in d['summary']['per_gpu']) and d['summary']['layout']['sequence_parallel']" \
    "sequence-parallel bytes: (5 x 4 + 2.5) x sbh p + 3 sb x 4 + the norms' 9 d x 4 per GPU"
one=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['summary']['per_gpu'][0]['peak']['activations'])")
run train --steps 1 --tp 2 --json --summary
check_json "d['summary']['per_gpu'][0]['peak']['activations'] > $one" \
    "sequence parallelism keeps fewer activations than tensor parallelism alone"
run train --steps 1 --tp 2 --pp 2 --micro-batches 2 --sequence-parallel --json --summary
check_json "d['summary']['per_gpu'][0]['comm_bytes_per_step']['pipeline'] == 2 * (8 * 64 * 64 * 4) // 2 + 32 * 64 * 4" \
    "sequence parallelism sends each GPU's half of the activations between stages"
# Ranks are placed tensor-parallel innermost, then data, then pipeline (Megatron-LM's order).
run train --steps 1 --dp 2 --tp 2 --pp 2 --micro-batches 2 --json --summary
check_json "[(g['coord']['pp'], g['coord']['dp'], g['coord']['tp']) for g in d['summary']['per_gpu']] == [(p, q, t) for p in range(2) for q in range(2) for t in range(2)]" \
    "dp 2 x tp 2 x pp 2: GPU r is (stage, data rank, tensor rank) in that order"

# --- One verdict: a NaN in one rank's heads makes every GPU skip the step.
run train --steps 3 --tp 2 --precision fp16 --inject nan@2 --json
check_status 0 "a NaN under tensor parallelism"
check_jsonl "d[1]['skipped'] and d[1]['overflow'] and d[2]['loss_scale'] == d[1]['loss_scale'] / 2 and not d[2]['skipped']" \
    "every rank skips step 2 and halves the scale"

# --- Layouts refused with their reason (exit 2).
bad() { w=$1 n=$2; shift 2; refused "$w" "$n" train "$@"; } # WHAT NEEDLE ARGS...
bad "--tp 3 with 4 heads" "the attention heads (4) and the FFN width (172)" --tp 3
bad "--tp 4 with small's 6 heads" "the attention heads (6)" --model small --tp 4
bad "--gpus not dp x tp x pp" "--gpus 6 is not --dp 2 x --tp 2 x --pp 2" --gpus 6 --dp 2 --tp 2 --pp 2
bad "sequence parallelism without tensor parallelism" "--sequence-parallel goes with --tp" --sequence-parallel

done_testing
