#!/bin/sh
# Expert parallelism on the thread-GPUs (train --experts E --ep P, with DDP or ZeRO-1): each
# GPU holds E / P of a layer's experts, tokens travel to their experts' GPUs and back by
# all-to-alls, the experts' gradients reduce over the GPUs holding the same experts and the
# rest over every data rank (ZeRO-1 shards each over its group):
# the same training as one GPU holding every expert, the all-to-alls' bytes and the experts'
# memory per GPU as derived, layouts refused with their reason. With a capacity factor the
# all-to-alls send the static [E, cap, d] rows; without one (the default) they are dropless:
# the counts first, then the routing's own rows (its section below).
. "$srcdir/tests/lib.sh"

slow=$quick

# tiny-moe (8 experts, top-2, 4 expert layers, d 64, seq 64), batch 16, with a capacity that
# drops no token (factor 4 = E / k: cap = the GPU's tokens) and no load-balancing loss: the
# loss then is the mean over the batch of terms each GPU computes for its own tokens, as one GPU
# does. (The load-balancing loss is not: Switch Transformer's f_i P_i is taken over the tokens
# a GPU routes, so P GPUs sum P such products where one GPU takes one over the whole batch;
# with it, P expert-parallel GPUs train as P data-parallel GPUs holding every expert, below.)
moe="--model tiny-moe --capacity-factor 4"

# --- Equivalence: losses within 1e-5 relative per step over 10 steps of one GPU (fp32). The
# experts' matmuls run on other groupings of rows (each source GPU's block, padding included)
# and the gradients add over the GPUs in another order: a few ulps a step; the development host
# sees ~1e-8. The global sum of squares is compared within 3e-5 (tests/lib.sh's AGREE_TOL is
# 1e-6 for the dense tiny): tiny-moe's moves that much on data-parallel GPUs that each hold
# every expert, as it does with ep (on the development host, step 26: 0.265207207 on one GPU,
# 0.265210005 with --dp 4, 0.265209924 with --ep 4, 1.1e-5 apart; step 3: 2.40710503, 2.40711759
# with --dp 2, 2.40711646 with --ep 2).
AGREE_TOL=3e-5
steps=10
layouts="--ep=2 --ep=4 --ep=8 --dp=4:--ep=2 --dp=8:--ep=4 --ep=2:--checkpoint=full
--ep=2:--zero=1 --dp=4:--ep=2:--zero=1 --dp=8:--ep=4:--zero=1"
$slow && steps=4 && layouts="--ep=2 --dp=4:--ep=2:--zero=1"
$tsan && layouts="--dp=4:--ep=2:--zero=1"
run train $moe --aux-loss-coef 0 --steps $steps --clip 1 --json
check_status 0 "one GPU, every expert: the reference"
check_jsonl "all(s['dropped'] == 0 for s in d[:-1])" "the reference drops no token"
save ref
for l in $layouts; do
    args=$(printf '%s' "$l" | tr ':' ' ')
    run train $moe --aux-loss-coef 0 --steps $steps --clip 1 $args --json
    check_status 0 "train $args"
    check_jsonl "all(s['dropped'] == 0 for s in d[:-1])" "$args drops no token"
    check_losses ref $steps 1e-5 "$args"
done

# With the load-balancing loss: P expert-parallel GPUs train as P data-parallel GPUs that each
# hold every expert (the same tokens per GPU, the same routing).
for P in 2 4; do
    run train $moe --steps $steps --clip 1 --dp $P --json
    save dp$P
    run train $moe --steps $steps --clip 1 --ep $P --json
    check_losses dp$P $steps 1e-5 "--ep $P with the aux loss, against --dp $P"
done

# --- Step 1's gradients equal one GPU's: 1e-6 relative to the largest gradient (fp32; the
# same batch and initial weights; each GPU's experts gathered where the whole model has them).
run train $moe --aux-loss-coef 0 --steps 1 --dump "$T_TMP/dump0" --json
check_status 0 "--dump on one GPU"
i=0
dumps="--ep=2 --ep=4 --dp=4:--ep=2 --dp=4:--ep=2:--zero=1 --dp=8:--ep=4:--zero=1"
$slow && dumps="--ep=2 --dp=4:--ep=2:--zero=1"
for l in $dumps; do
    args=$(printf '%s' "$l" | tr ':' ' ')
    i=$((i + 1))
    run train $moe --aux-loss-coef 0 --steps 1 $args --dump "$T_TMP/dump$i" --json
    check_status 0 "--dump with $args"
    check_grads "$T_TMP/dump0" "$T_TMP/dump$i" 1e-6 "$args"
done

numeric_done # (tests/as_cpu.sh: what follows is the same on every CPU)

# --- The all-to-alls' bytes. A GPU routes its n = 16 / D x 64 tokens into the static
# [E, cap, d] rows, cap = ceil(C k n / E) (C 4, k 2, E 8: cap = n); the rows bound for the
# P - 1 other GPUs of its expert group are (P - 1) / P of them, sent in the dispatch, and as
# many come back in the combine; the backward pass sends the outputs' gradients and the
# inputs' gradients the same ways: per expert layer, 4 (P - 1)/P E cap d b bytes per GPU.
for lay in "2 2" "4 4" "4 2" "8 4"; do
    set -- $lay
    D=$1 P=$2
    run train $moe --steps 1 --dp $D --ep $P --json --summary
    check_json "all(g['comm_bytes_per_step']['expert_parallel'] == 4 * 4 * ($P - 1) * 8 * (16 // $D * 64) * 64 * 4 // $P for g in d['summary']['per_gpu']) and d['summary']['layout']['ep'] == $P" \
        "dp $D ep $P: 4 layers x 4 (P-1)/P E cap d b per GPU"
done
# Full checkpointing runs each expert layer's forward again before its backward: its dispatch
# and combine again. bf16: the same rows in 2 bytes; a capacity factor of 1 sends a quarter.
run train $moe --steps 1 --ep 2 --checkpoint full --json --summary
check_json "all(g['comm_bytes_per_step']['expert_parallel'] == 4 * 6 * 8 * 512 * 64 * 4 // 2 for g in d['summary']['per_gpu'])" \
    "ep 2, full checkpointing: the forward's two all-to-alls again"
run train --model tiny-moe --capacity-factor 1 --steps 1 --ep 2 --precision bf16 --json --summary
check_json "all(g['comm_bytes_per_step']['expert_parallel'] == 4 * 4 * 8 * 128 * 64 * 2 // 2 for g in d['summary']['per_gpu'])" \
    "ep 2, capacity factor 1, bf16: cap = 2 x 512 / 8 = 128 rows of 2-byte values"

# --- Memory: a GPU holds the dense weights and router whole and E / P experts of each layer
# (3 d F each, F 86); DDP keeps fp32 weights, gradients and Adam's two moments of them; the
# all-to-alls' send and receive buffers are E cap d b each.
dense=$((64 * 64 + 4 * (2 * 64 + 4 * 64 * 64 + 8 * 64) + 64))
for P in 2 4; do
    run train $moe --steps 1 --ep $P --json --summary
    params=$((dense + 4 * 8 / P * 3 * 64 * 86))
    check_json "all(g['peak']['weights'] == g['peak']['gradients'] == 4 * $params and g['peak']['optimizer'] == 8 * $params and g['peak']['communication'] == 2 * 8 * (16 // $P * 64) * 64 * 4 for g in d['summary']['per_gpu'])" \
        "ep $P: E / P experts' weights, gradients and moments per GPU, two all-to-all buffers"
done

# --- Measured = predicted, to the byte: every GPU's ledger peaks and bytes sent by kind
# (data_parallel: the other weights' gradients all-reduced over dp, the experts' over dp / ep;
# expert_parallel: the all-to-alls) equal the calculator's (calc/memory.h's ep, calc/traffic.h).
cases="tiny-moe:fp32:--capacity-factor=4:--ep=2 tiny-moe:fp32:--capacity-factor=4:--ep=4
tiny-moe:fp32:--capacity-factor=4:--dp=4:--ep=2 tiny-moe:fp32:--capacity-factor=4:--dp=8:--ep=4
tiny-moe:bf16:--capacity-factor=1.25:--ep=2 tiny-moe:fp16:--capacity-factor=2:--dp=4:--ep=4
tiny-moe:fp32:--capacity-factor=4:--ep=4:--checkpoint=full
tiny-moe:bf16:--capacity-factor=1:--dp=4:--ep=2:--checkpoint=selective:--top-k=1
tiny:fp32:--experts=4:--top-k=1:--moe-every=2:--capacity-factor=2:--dp=4:--ep=2
tiny-moe:fp32:--capacity-factor=4:--dp=4:--ep=2:--zero=1 tiny-moe:bf16:--capacity-factor=2:--dp=8:--ep=4:--zero=1
tiny-moe:fp16:--capacity-factor=1.25:--ep=2:--zero=1:--checkpoint=full
tiny:bf16:--experts=4:--top-k=2:--moe-every=2:--capacity-factor=1:--dp=4:--ep=4:--zero=1"
$slow && cases="tiny-moe:fp32:--capacity-factor=4:--dp=4:--ep=2 tiny-moe:bf16:--capacity-factor=2:--dp=8:--ep=4:--zero=1"
predicted_per_case "$cases"

# `memory --ep` is the same calculator: its figures for that layout are train's ledger and
# bytes (a GPU's micro-batch: 16 / 4 = 4 sequences).
run train $moe --steps 1 --dp 4 --ep 2 --json --summary
save ep_train
run memory --model tiny-moe --capacity-factor 4 --gpus 4 --ep 2 --micro-batch 4 --precision fp32 --attention eager --json
out=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))')
save ep_memory
PYCODE="
t, m = load('ep_train')[-1]['summary'], load('ep_memory')[-1]
g, p = t['per_gpu'][0], m['per_gpu']
for k in ('weights', 'gradients', 'master_weights', 'optimizer', 'activations', 'communication'):
    assert g['peak'][k] == p[k], (k, g['peak'][k], p[k])
assert g['comm_bytes_per_step']['expert_parallel'] == m['communication']['expert_parallel']['bytes']
assert g['comm_bytes_per_step']['data_parallel'] == m['communication']['data_parallel']['bytes']
assert m['layout']['ep'] == 2
" py "memory --ep 2 gives train's ledger and bytes"
refused "memory: ep not dividing dp" "dp must be a multiple of it (not 6)" memory --model tiny-moe --capacity-factor 1 --gpus 6 --ep 4
refused "memory: a capacity factor on a dense model" "--capacity-factor" memory --model tiny --capacity-factor 1

# --- plan --ep-max: layouts with the experts over 2, 4, 8 of the dp GPUs weighed too; by
# default none (the plan is as before). Mixtral 8x7B on 64 H100s at sequence 4096: its
# experts' weights do not fit replicated over dp, and the best layout splits them 8 ways.
mix="--model mixtral-8x7b --nodes 8 --seq 4096 --global-batch 256 --capacity-factor 1.25"
run plan $mix --json
check_json "all('ep' not in l for l in d['layouts'])" "plan without --ep-max weighs no expert parallelism"
run plan $mix --ep-max 8 --json
check_json "d['layouts'][0]['ep'] == 8 and d['layouts'][0]['pp'] == 1 and all(l.get('ep', 1) in (1, 2, 4, 8) for l in d['layouts'])" \
    "plan --ep-max 8: Mixtral's best layout on 64 GPUs splits the experts 8 ways"
refused "plan: a capacity factor on a dense model" "--capacity-factor" plan --model tiny --capacity-factor 1
# Without a capacity factor (the preset has none) the ep layouts are dropless, weighed at the
# all-to-all buffers' and activations' bound and uniform routing's time: offered with no other
# option, their memory what `memory` gives the same layout dropless.
run plan --model mixtral-8x7b --nodes 8 --seq 4096 --ep-max 8 --json
check_status 0 "plan --ep-max 8 for mixtral-8x7b, no capacity factor"
save dplan
check_json "any(l.get('ep', 1) == 8 for l in d['layouts']) and all(l.get('ep', 1) in (1, 2, 4, 8) for l in d['layouts'])" \
    "... offers dropless layouts with the experts over 8 GPUs"
l8=$(printf '%s' "$out" | python3 -c "import json, sys; l = [l for l in json.load(sys.stdin)['layouts'] if l.get('ep', 1) == 8][0]; print('--dp %d --zero %d --checkpoint %s --micro-batch %d --micro-batches %d %d' % (l['dp'], l['zero'], l['checkpoint'], l['micro_batch'], l['micro_batches'], l['per_gpu_bytes']))")
set -- $l8
run memory --model mixtral-8x7b --nodes 8 --gpus 64 --seq 4096 --ep 8 $1 $2 $3 $4 $5 $6 $7 $8 $9 ${10} --json
check_json "d['per_gpu']['total'] == ${11} and 'expert_buffers' in d" "... its memory per GPU the dropless calculator's"

# The text's table has the all-to-alls' bytes per GPU beside the calculator's, and the formula.
run train $moe --steps 1 --ep 2
check_contains "$out" "expert/step" "the text's table has a column for the all-to-alls"
check_contains "$out" "expert parallel: m x 4 expert layers x 4 x (P-1)/P x E cap d p" "the text gives their formula"

# --- Ranks: expert rank = data rank % P (Megatron-LM's tp-cp-ep-dp-pp order).
run train $moe --steps 1 --dp 4 --ep 2 --json --summary
check_json "[g['coord']['ep'] for g in d['summary']['per_gpu']] == [0, 1, 0, 1]" \
    "dp 4 ep 2: GPUs 0 and 2 hold experts 0-3, 1 and 3 experts 4-7"

# --- Refused, with the reason.
refused "ep without experts" "--experts" train --ep 2
refused "ep not dividing the experts" "divide the 8 experts" train $moe --ep 3 --dp 3 --batch 18
refused "ep not dividing the data ranks" "data-parallel ranks" train $moe --dp 2 --ep 4
refused "ep with ZeRO-2" "--zero 0 or 1" train $moe --ep 2 --zero 2

# --- Dropless (no --capacity-factor, the default): each GPU sends each GPU of its expert group
# its token counts for that GPU's experts, then exactly those rows, no drop, no padding
# (model/gpt.h). Losses within 1e-5 of one GPU holding every expert (also dropless: no capacity)
# over 30 steps, fp32, no load-balancing loss (as above: with it, P GPUs train as P data-parallel
# GPUs, each its own f_i P_i).
dsteps=30
dlayouts="--ep=2 --ep=4 --dp=4:--ep=2 --ep=2:--checkpoint=full --dp=4:--ep=2:--zero=1"
$slow && dsteps=4 && dlayouts="--ep=2 --dp=4:--ep=2"
$tsan && dlayouts="--dp=4:--ep=2"
run train --model tiny-moe --aux-loss-coef 0 --steps $dsteps --clip 1 --json
check_status 0 "dropless: one GPU, every expert, no capacity: the reference"
save dref
for l in $dlayouts; do
    args=$(printf '%s' "$l" | tr ':' ' ')
    run train --model tiny-moe --aux-loss-coef 0 --steps $dsteps --clip 1 $args --json
    check_status 0 "dropless train $args"
    check_jsonl "all(s['dropped'] == 0 for s in d[:-1])" "dropless $args drops no token"
    check_losses dref $dsteps 1e-5 "dropless $args"
done
run train --model tiny-moe --gpus 2 --ep 2 --steps 2
check_status 0 "train --model tiny-moe --gpus 2 --ep 2 runs with no other option"
check_contains "$out" "expert parallel: dropless" "... and says it ran dropless"
check_contains "$out" "the predicted comm and activations are the bound" "... and what its predicted figures are"
check_contains "$out" "uniform routing's activations" "... uniform routing's activations beside"

# Bytes: what the step's own routing implies. Each GPU reports the rows its dispatches sent
# the other GPUs of its group and received from them (expert_rows_per_step; a recomputed
# forward dispatches again, f forward passes a layer); the combine sends back what came, and
# the backward pass sends the outputs' gradients the dispatch's way and the inputs' gradients
# the combine's, once: (sent + received) (1 + 1/f) d p bytes, plus the counts, (P - 1) E/P
# 4-byte words per expert layer and forward pass. Every row sent is received. The buffers:
# one block for an exchange's rows out and in, charged to communication while it runs, so the
# ledger's communication peak (DDP has no other buffer) is the largest exchange the GPU
# reported, within the calculator's bound (k n + P n min(k, E/P)) d p, the stage's prediction;
# the calculator given that exchange's rows (predicted_communication) gives the peak to the
# byte, so every GPU's memory is measured = predicted (measured_minus_predicted's memory_bytes
# 0). train's prediction of the bytes is uniform routing's, the worst case beside, and the
# calculator given the rows a GPU's dispatches moved gives its bytes to the byte
# (predicted_expert_parallel_bytes; measured_minus_predicted's comm_bytes 0).
# Activations: an expert layer's kept expert tensors (its input and output rows, d each, and
# gate, up and hidden, F = 86 each) are booked at the rows its experts held that step, not the
# arena's room; each GPU reports them per layer for the pass of its peak (expert_rows_kept) and
# its peak is the calculator's at those rows (predicted_activations); without checkpointing,
# every expert layer's set is held at the end of the forward pass, so the peak is uniform
# routing's plus (rows - L k n)(2d + 3F) p, derived here. The group's rows average k n a layer
# (every row sent is received), so its busiest GPU's peak is at least uniform routing's (a
# peak is a convex function of the layers' rows), and none above the bound.
dcases="2:2:fp32 4:4:fp32 4:2:bf16 2:2:fp32:--checkpoint=full 8:4:fp16:--zero=1 4:2:fp32:--top-k=1"
$slow && dcases="4:2:bf16 2:2:fp32:--checkpoint=full"
for c in $dcases; do
    D=${c%%:*} rest=${c#*:} P=${rest%%:*} rest=${rest#*:} prec=${rest%%:*} extra=""
    [ "$rest" != "$prec" ] && extra=$(printf '%s' "${rest#*:}" | tr ':' ' ')
    run train --model tiny-moe --dp $D --ep $P --precision $prec $extra --steps 2 --json --summary
    check_status 0 "dropless dp $D ep $P $prec $extra"
    save dbytes
    PYCODE="
s = load('dbytes')[-1]['summary']
D, P, E, d, L = $D, $P, 8, 64, 4
k = s['moe']['top_k']
p = {'fp32': 4, 'bf16': 2, 'fp16': 2}['$prec']
f = 2 if 'full' in '$extra' else 1
n = 16 // D * 64
pred = s['predicted']['per_gpu']
out = sum(g['expert_rows_per_step']['sent'] for g in s['per_gpu'])
assert out == sum(g['expert_rows_per_step']['received'] for g in s['per_gpu']), 'rows sent = rows received'
bound = (k * n + P * n * min(k, E // P)) * d * p
assert pred['communication'] == bound, (pred['communication'], bound)
for g in s['per_gpu']:
    r = g['expert_rows_per_step']
    want = (r['sent'] + r['received']) * (f + 1) // f * d * p + f * L * (P - 1) * (E // P) * 4
    assert (r['sent'] + r['received']) % f == 0, r
    assert g['comm_bytes_per_step']['expert_parallel'] == want, (g['gpu'], g['comm_bytes_per_step'], want)
    assert g['comm_bytes_per_step']['expert_parallel'] == g['predicted_expert_parallel_bytes'], (g['gpu'], g['predicted_expert_parallel_bytes'])
    assert g['peak']['communication'] == g['expert_rows_held_peak'] * d * p == g['predicted_communication'], (g['gpu'], g['peak'], g['expert_rows_held_peak'], g['predicted_communication'])
    assert k * n < g['expert_rows_held_peak'] <= k * n + P * n * min(k, E // P), g['expert_rows_held_peak']
    for key in ('weights', 'gradients', 'master_weights', 'optimizer'):
        assert g['peak'][key] == pred[key], (g['gpu'], key, g['peak'][key], pred[key])
    kept = g['expert_rows_kept']
    assert len(kept) == L and g['peak']['activations'] == g['predicted_activations'], (g['gpu'], g['peak'], g['predicted_activations'], kept)
    assert g['peak']['activations'] <= pred['activations'], (g['gpu'], g['peak'], pred['activations'])
    if f == 1:
        assert g['peak']['activations'] == pred['activations_uniform'] + (sum(kept) - L * k * n) * (2 * d + 3 * 86) * p, (g['gpu'], kept)
assert max(g['peak']['activations'] for g in s['per_gpu']) >= pred['activations_uniform']
assert s['measured_minus_predicted'] == {'memory_bytes': 0, 'comm_bytes': 0}, s['measured_minus_predicted']
" py "dropless dp $D ep $P $prec $extra: bytes = (sent + received) x d x p + the counts, the buffers' peak its largest exchange, the calculator's at it, within the bound; activations by the step's rows, the calculator's at them, within uniform and the bound; bytes the calculator's at the rows moved; measured - predicted 0"
done

# The calculator: memory --ep without a capacity factor is dropless. Its per-GPU figures are
# train's ledger (communication: the bound), its expert bytes uniform routing's, with the worst
# case: 4 layers x 4 passes x (P-1)/P k n d p + the counts, and (n min(k, E - E/P) + (P-1) n
# min(k, E/P)) d p x 2 passes a layer (n = 4 x 64 tokens, k 2, E 8, d 64, fp32).
run train --model tiny-moe --dp 4 --ep 2 --steps 1 --json --summary
save dl_train
run memory --model tiny-moe --gpus 4 --ep 2 --micro-batch 4 --precision fp32 --attention eager --json
check_status 0 "memory --ep 2 without a capacity factor: dropless"
out=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))')
save dl_memory
PYCODE="
t, m = load('dl_train')[-1]['summary'], load('dl_memory')[-1]
g, p, x = t['per_gpu'][0], m['per_gpu'], m['communication']['expert_parallel']
for k in ('weights', 'gradients', 'master_weights', 'optimizer'):
    assert g['peak'][k] == p[k], (k, g['peak'][k], p[k])
n, k, E, P, d, b = 256, 2, 8, 2, 64, 4
assert p['activations'] == m['expert_activations']['worst'] == t['predicted']['per_gpu']['activations']
assert m['expert_activations']['uniform'] == t['predicted']['per_gpu']['activations_uniform'] < p['activations']
assert p['activations'] - m['expert_activations']['uniform'] == 4 * (P * n * min(k, E // P) - k * n) * (2 * d + 3 * 86) * b
assert p['communication'] == m['expert_buffers']['worst'] == (k * n + P * n * min(k, E // P)) * d * b
assert m['expert_buffers']['uniform'] == 2 * k * n * d * b
assert x['bytes'] == 4 * 4 * (P - 1) * k * n * d * b // P + 4 * (P - 1) * (E // P) * 4, x
assert x['worst_bytes'] == 4 * 2 * (n * min(k, E - E // P) + (P - 1) * n * min(k, E // P)) * d * b + 4 * (P - 1) * (E // P) * 4, x
assert x['bytes'] == t['predicted']['per_gpu']['comm_bytes_per_step']['expert_parallel']
assert all(q['comm_bytes_per_step']['expert_parallel'] <= x['worst_bytes'] for q in t['per_gpu'])
assert t['predicted']['per_gpu']['expert_parallel_worst'] == x['worst_bytes']
" py "memory --ep 2, dropless: train's ledger, the buffers' bound and uniform routing's, the bytes uniform and worst"
run memory --model tiny-moe --gpus 4 --ep 2 --micro-batch 4
check_contains "$out" "dropless, at worst" "memory's text gives the all-to-all buffers' worst case"
check_contains "$out" "under uniform routing 2 k n d p" "... and uniform routing's"
check_contains "$out" "expert parallel" "... and the bytes"

# --- One definition of the routing, every GPU's, in train and the window: a step's routed and
# dropped choices are every GPU's (they were GPU 0's: 1024 of 4096), the busiest expert over the
# mean is over those, and the aux loss is the mean of the GPUs' (each part of its loss), a sum
# over the 4 expert layers given per layer too, and α per layer when the routing is even
# (test_moe's aux_loss_and_capacity).
run train --model tiny-moe --gpus 4 --ep 4 --capacity-factor 1.25 --batch 8 --steps 1 --json
check_jsonl "d[0]['routed'] == 4 * 2 * 64 * 2 * 4" \
    "routed: 4 GPUs x 2 sequences x 64 tokens x top-2 x 4 expert layers"
check_jsonl "abs(d[0]['aux_loss_per_layer'] * 4 - d[0]['aux_loss']) < 1e-9" \
    "the aux loss: the 4 layers' sum, and a layer's"
run train --model tiny-moe --gpus 4 --ep 4 --capacity-factor 1.25 --batch 8 --steps 1 --json --summary
check_json "d['summary']['moe']['routed'] == 4096 and d['summary']['moe']['aux_loss_per_layer_even'] == 0.01" \
    "the summary: every GPU's choices, and α = 0.01 a layer when the routing is even"
run train --model tiny-moe --gpus 4 --ep 4 --capacity-factor 1.25 --batch 8 --steps 1
check_contains "$out" "routing: aux is the load-balancing loss, part of the loss" "the header says what the routing figures count"
check_contains "$out" "over every GPU's tokens" "... every GPU's tokens"
check_contains "$out" "(4 layers x " "the step line gives the aux loss per layer"
check_contains "$out" "busiest/mean" "the busiest expert over the mean, named as the window names it"

done_testing
