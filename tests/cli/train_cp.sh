#!/bin/sh
# Context parallelism on the thread-GPUs (train --cp C): every sequence cut over C GPUs, its
# attention computed by passing keys and values round a ring (ring attention), alone and with
# data, tensor and pipeline parallelism (4D): the same training as one GPU, the bytes of the
# ring as derived, layouts refused with their reason.
. "$srcdir/tests/lib.sh"

slow=$quick

# --- Equivalence: C GPUs of a sequence train as one GPU does (fp32). The online softmax sums a
# row's terms block by block, rescaled as a later block raises the row's maximum, in another
# order than one GPU's softmax, and the weights' gradients add over the GPUs of the ring: a few
# ulps a step. 1e-5 relative per step over 10 steps (as train_tp and train_pp); the development
# host sees ~1e-8 over 30.
steps=10
layouts="--cp=2 --cp=4 --cp=2:--cp-naive --cp=4:--cp-naive --cp=8 --dp=2:--cp=2 --cp=2:--tp=2
--cp=2:--tp=2:--sequence-parallel --cp=2:--checkpoint=full --cp=2:--dp=2:--zero=3
--cp=2:--pp=2:--micro-batches=2 --dp=2:--tp=2:--cp=2:--pp=2:--micro-batches=4:--zero=1"
$slow && steps=4 && layouts="--cp=2 --dp=2:--tp=2:--cp=2:--pp=2:--micro-batches=4:--zero=1"
$tsan && layouts="--dp=2:--tp=2:--cp=2:--pp=2:--micro-batches=2"
losses_per_layout $steps 1e-5 "$layouts"

# --- Step 1's gradients equal one GPU's: 1e-6 relative to the largest gradient (fp32; the
# same batch and initial weights).
dumps="--cp=2 --cp=4 --cp=4:--cp-naive --dp=2:--tp=2:--cp=2:--pp=2:--micro-batches=2"
$slow && dumps="--cp=2"
$tsan && dumps=""
grads_per_layout 1e-6 "$dumps"

numeric_done # (tests/as_cpu.sh: what follows is the same on every CPU)

# --- The ring's bytes, tiny in fp32 (batch 16, sequence 64, d 64, 4 layers): one of a layer's
# K or V over the whole batch is S = b s h p = 16 x 64 x 64 x 4 = 262,144 B, a GPU's block
# S / C. Forward, C - 1 sends of the block's K and V: 2 (C-1)/C S; backward, K and V again and
# their gradients as often: 4 (C-1)/C S. Per layer 6 (C-1)/C S, on every GPU of the ring.
S=262144
for C in 2 4; do
    run train --steps 1 --cp $C --json --summary
    check_json "all(g['comm_bytes_per_step']['context_parallel'] == 4 * 6 * ($C - 1) * $S // $C for g in d['summary']['per_gpu']) and d['summary']['layout']['cp'] == $C" \
        "cp $C: 4 layers x 6 (C-1)/C x b s h p round the ring per GPU"
done
# Full checkpointing runs each layer's forward again before its backward: its ring again.
run train --steps 1 --cp 2 --checkpoint full --json --summary
check_json "all(g['comm_bytes_per_step']['context_parallel'] == 4 * (6 + 2) * $S // 2 for g in d['summary']['per_gpu'])" \
    "cp 2, full checkpointing: the forward's 2 (C-1)/C S again per layer"
# bf16: the same elements in 2 bytes; with tp 2 a GPU's K and V hold half the heads.
run train --steps 1 --cp 2 --tp 2 --precision bf16 --json --summary
check_json "all(g['comm_bytes_per_step']['context_parallel'] == 4 * 6 * $S // 2 // 2 // 2 for g in d['summary']['per_gpu'])" \
    "cp 2 x tp 2 in bf16: a GPU's heads, 2-byte values"
# The causal mask's work per GPU, measured: the scores each GPU's ring blocks computed in a step
# (forward and backward, 4 layers, batch 16 x 4 heads, n = 64 / C tokens a GPU), only the pairs
# the mask leaves. Naive: GPU r computes the blocks of GPUs 0 to r - 1 whole and its own
# triangle, r n^2 + n (n + 1) / 2 each pass; balanced: half of every block, its own two triangles
# and the late queries against the early keys, C n^2 / 2 + n / 2 on every GPU, the mean
# (test_ringattn derives both). The naive split's busiest GPU does ((2C - 1) n + 1) / (C n + 1)
# times the mean: (2C - 1)/C for long blocks, TransformerEngine's causal halves.
for C in 2 4; do
    n=$((64 / C))
    run train --steps 1 --cp $C --json --summary
    check_json "all(g['ring_scores_per_step'] == 4 * 2 * 16 * 4 * ($C * $n * $n + $n) // 2 for g in d['summary']['per_gpu'])" \
        "cp $C balanced: every GPU computes C/2 blocks' scores and half a row of them"
    run train --steps 1 --cp $C --cp-naive --json --summary
    check_json "[g['ring_scores_per_step'] for g in d['summary']['per_gpu']] == [4 * 2 * 16 * 4 * (r * $n * $n + $n * ($n + 1) // 2) for r in range($C)] and d['summary']['layout']['cp_split'] == 'naive'" \
        "cp $C naive: GPU r computes r blocks and its own triangle"
done
# Ranks: tensor-parallel innermost, then context, data, pipeline (Megatron-LM's order).
run train --steps 1 --dp 2 --tp 2 --cp 2 --pp 2 --micro-batches 2 --json --summary
check_json "[(g['coord']['pp'], g['coord']['dp'], g['coord']['cp'], g['coord']['tp']) for g in d['summary']['per_gpu']] == [(p, q, c, t) for p in range(2) for q in range(2) for c in range(2) for t in range(2)]" \
    "dp 2 x cp 2 x tp 2 x pp 2: GPU r is (stage, data rank, context rank, tensor rank)"
# One attention model for every layout: flash at cp 1 is the ring's kernel on a GPU's own block.
# It trains as eager attention does (3 steps within 1e-6 relative: the same sums in another
# order), keeps what the calculator says to the byte, and cp 2 keeps exactly half of it per GPU
# (every token's tensors, the ends too), where eager's probabilities made it a 30th.
run train --steps 3 --json
eager=$(printf '%s' "$out" | python3 -c "import json,sys; print([json.loads(l)['loss'] for l in sys.stdin if '\"step\"' in l][:3])")
run train --steps 3 --attention flash --json
check_jsonl "all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip([x['loss'] for x in d if 'step' in x], $eager))" \
    "flash at cp 1 trains as eager does, within 1e-6"
run train --steps 1 --attention flash --json --summary
check_json "d['summary']['measured_minus_predicted']['memory_bytes'] == 0" \
    "flash at cp 1: the ledger equals memory --attention flash"
flash=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['summary']['per_gpu'][0]['peak']['activations'])")
run train --steps 1 --cp 2 --json --summary
check_json "all(g['peak']['activations'] * 2 == $flash for g in d['summary']['per_gpu'])" \
    "cp 2 keeps half of one GPU's flash activations"

# Each GPU keeps the activations of its T / C tokens.
run train --steps 1 --json --summary
one=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['summary']['per_gpu'][0]['peak']['activations'])")
run train --steps 1 --cp 2 --json --summary
check_json "d['summary']['per_gpu'][0]['peak']['activations'] * 2 < $one" \
    "cp 2 keeps less than half one GPU's activations (no probabilities, half the tokens)"

# --- Measured = predicted: every GPU's ledger peaks (activations of its s / C tokens, the
# log-sum-exp instead of the probabilities; the ring's two buffers in communication) and its
# bytes sent by kind, context-parallel included, equal the calculator's for its stage.
cases="tiny:fp32:--cp=2 tiny:bf16:--cp=4 tiny:fp16:--cp=2:--cp-naive tiny:bf16:--cp=2:--checkpoint=full
tiny:fp32:--cp=4:--checkpoint=sqrt small:bf16:--cp=2 tiny:bf16:--dp=2:--cp=2:--zero=1
tiny:bf16:--dp=2:--cp=2:--zero=2 tiny:bf16:--dp=2:--cp=2:--zero=3 tiny:bf16:--cp=2:--tp=2:--sequence-parallel
tiny:bf16:--cp=2:--pp=2:--micro-batches=4 tiny:fp32:--cp=2:--pp=2:--micro-batches=4:--schedule=interleaved
tiny:bf16:--dp=2:--tp=2:--cp=2:--pp=2:--micro-batches=2:--zero=1 tiny:bf16:--cp=2:--grad-accum=fp32"
$slow && cases="tiny:bf16:--cp=2 tiny:bf16:--dp=2:--tp=2:--cp=2:--pp=2:--micro-batches=2:--zero=1"
predicted_per_case "$cases"

# --- memory --cp: the calculator alone. synthetic-7b at sequence 8192 with full
# checkpointing: the activations of s / C tokens (the layer inputs kept, and one layer's list
# at the peak, flash attention's at cp 1 and 4 alike), the ring's buffers, and the ring's bytes,
# 8 (C-1)/C b s h p per layer (S = 8192 x 4096 x 2 B = 64 MiB).
run memory --model synthetic-7b --seq 8192 --checkpoint full --json
full=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['per_gpu']['activations'])")
run memory --model synthetic-7b --seq 8192 --checkpoint full --cp 4 --json
check_json "d['per_gpu']['activations'] * 4 == $full and d['layout']['cp'] == 4 and d['gpus'] == 4" \
    "memory --cp 4: a quarter of one GPU's activations at sequence 8192, one attention model"
check_json "d['communication']['context_parallel']['bytes'] == 32 * 8 * 3 * 8192 * 4096 * 2 // 4 and d['per_gpu']['communication'] == 2 * 4 * 2048 * 4096 * 2" \
    "memory --cp 4: 32 layers x 8 (C-1)/C S round the ring; 2 x 4 b s/C h p of ring buffers"
run memory --model synthetic-7b --json
check_json "'cp' not in d['layout'] and 'context_parallel' not in d['communication']" \
    "memory without --cp says nothing of it"

# --- plan --cp-max: context parallelism is weighed where asked. At sequence 32768 on 8 GPUs,
# where one GPU's activations of a whole sequence do not fit beside the states, the best
# layouts split the sequence; the ring's bytes are in the layout's communication.
run plan --model synthetic-7b --gpus 8 --seq 32768 --global-batch 8 --cp-max 8 --json
check_json "d['layouts'][0].get('cp', 1) > 1" \
    "plan --cp-max 8 at sequence 32768: the best layout splits the sequence"
run plan --model synthetic-7b --gpus 8 --seq 32768 --global-batch 8 --cp-max 8 --top 0 --json
check_json "any(l.get('cp', 1) == 8 for l in d['layouts'])" "plan --cp-max 8: cp 8 weighed too"
run plan --model synthetic-7b --gpus 8 --seq 32768 --global-batch 8 --json
check_json "not any('cp' in l for l in d['layouts'] + d['rejected'])" \
    "plan without --cp-max weighs no context parallelism"
run plan --model synthetic-7b --gpus 8 --seq 32768 --global-batch 8 --cp-max 8 --emit megatron
check_contains "$out" "--context-parallel-size" "plan --cp-max --emit megatron writes --context-parallel-size"

# --- One verdict: a NaN in one GPU's attention makes every GPU skip the step.
run train --steps 3 --cp 2 --precision fp16 --inject nan@2 --json
check_status 0 "a NaN under context parallelism"
check_jsonl "d[1]['skipped'] and d[1]['overflow'] and d[2]['loss_scale'] == d[1]['loss_scale'] / 2 and not d[2]['skipped']" \
    "every GPU of the ring skips step 2 and halves the scale"

# --- Layouts refused with their reason (exit 2).
bad() { w=$1 n=$2; shift 2; refused "$w" "$n" train "$@"; } # WHAT NEEDLE ARGS...
bad "--cp 3 with 64 tokens" "--cp 3 cuts the sequence of 64 tokens in 6 chunks" --cp 3
bad "--cp 64 with 64 tokens" "in 128 chunks" --cp 64
bad "--cp with selective recomputation" "--checkpoint selective with flash attention (--cp's ring)" --cp 2 --checkpoint selective
bad "flash with selective recomputation" "the trainer's flash kernel keeps no probabilities" --attention flash --checkpoint selective
bad "eager attention with cp" "--attention eager with --cp 2: ring attention is a flash-style kernel" --attention eager --cp 2
bad "--cp-naive without cp" "--cp-naive splits a sequence over the context-parallel GPUs" --cp-naive
bad "--gpus not dp x cp x tp x pp" "--gpus 6 is not --dp 2 x --tp 1 x --cp 2 x --pp 1" --gpus 6 --dp 2 --cp 2

# train --seq, as lesson 6's panel runs its sequences: the model's sequence over the preset's,
# measured = predicted for the run's own sequence.
run train --cp 4 --seq 128 --batch 8 --steps 1 --json --summary
check_json "d['summary']['measured_minus_predicted'] == {'memory_bytes': 0, 'comm_bytes': 0} and d['summary']['per_gpu'][0]['comm_bytes_per_step']['context_parallel'] == 4 * 6 * 3 * 8 * 128 * 64 * 4 // 4" \
    "--seq 128: the ring's bytes of 128-token sequences, as the calculator says"
bad "--seq past the lab's" "--seq: '100000' is not allowed" --seq 100000

done_testing
