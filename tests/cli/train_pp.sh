#!/bin/sh
# Pipeline parallelism on the thread-GPUs (train --pp P --micro-batches M --schedule S, with
# --dp D): the same training as one GPU, the schedule `scalelab pipeline` teaches executed in
# its order, every measured byte the calculator's, one verdict for all GPUs, layouts refused
# with their reason.
. "$srcdir/tests/lib.sh"

# Under the sanitizers a run is ~10 times slower: the same checks on fewer layouts.
slow=$quick

# --- Equivalence: P stages and M micro-batches train as one GPU does (fp32; the gradients
# add up over micro-batches, and the tied embedding's two halves between the ends, in another
# order than one GPU's matmul: a few ulps). Tolerance 1e-5 relative per step over 10 steps;
# the development host sees ~1e-8.
steps=10
layouts="--pp=2:--micro-batches=1 --pp=2:--micro-batches=4 --pp=2:--micro-batches=8:--schedule=gpipe
--pp=4:--micro-batches=1:--schedule=gpipe --pp=4:--micro-batches=4 --pp=4:--micro-batches=8
--pp=2:--micro-batches=4:--schedule=gpipe --pp=4:--micro-batches=8:--schedule=gpipe
--micro-batches=4 --dp=2:--pp=2:--micro-batches=4 --dp=2:--pp=2:--micro-batches=2:--zero=1
--pp=2:--micro-batches=4:--schedule=interleaved --pp=2:--micro-batches=8:--schedule=interleaved:--chunks=2
--pp=2:--micro-batches=2:--schedule=interleaved
--pp=2:--micro-batches=4:--schedule=zb-h1 --pp=4:--micro-batches=8:--schedule=zb-h1
--dp=2:--pp=2:--micro-batches=4:--schedule=zb-h1 --dp=2:--pp=4:--micro-batches=4:--schedule=zb-h1:--batch=16
--dp=2:--pp=2:--micro-batches=4:--schedule=zb-h2 --tp=2:--pp=4:--micro-batches=8:--schedule=zb-h2
--dp=2:--pp=2:--micro-batches=4:--schedule=zbv --tp=2:--pp=2:--micro-batches=1:--schedule=zbv"
$slow && steps=4 && layouts="--pp=2:--micro-batches=4 --pp=4:--micro-batches=8:--schedule=gpipe --dp=2:--pp=2:--micro-batches=2:--zero=1 --pp=2:--micro-batches=4:--schedule=interleaved --dp=2:--pp=2:--micro-batches=4:--schedule=zb-h1 --pp=4:--micro-batches=8:--schedule=zb-h2 --pp=2:--micro-batches=4:--schedule=zbv"
$tsan && layouts="--dp=2:--pp=2:--micro-batches=2:--zero=1 --pp=2:--micro-batches=4:--schedule=interleaved"
losses_per_layout $steps 1e-5 "$layouts"
# zbv over 4 stages needs 2 x 4 chunks of layers: the tiny shape with 8, its losses to the
# same tolerance. Not its norms to AGREE_TOL: 8 layers' sum of squares over 8 micro-batches is
# 5e-6 from one GPU's under 1F1B and zb-h1 too (the same figure: the accumulation's order).
# Four steps: the losses part from step 2 on if anything is wrong.
sed "s/^name = tiny/name = tiny8/; s/^layers = .*/layers = 8/" "$srcdir/assets/models/tiny.ini" \
    >"$T_TMP/tiny8.ini"
if ! $slow; then # under the sanitizers, pp 2 holds zbv
    run train --model "$T_TMP/tiny8.ini" --steps 4 --clip 1 --json
    check_status 0 "one GPU, 8 layers"
    save ref8
    run train --model "$T_TMP/tiny8.ini" --steps 4 --clip 1 --pp 4 --micro-batches 8 --schedule zbv --json
    check_status 0 "zbv, pp 4, 8 layers"
    save zbv8
    PYCODE="
a, b = load('ref8'), load('zbv8')
assert len(a) == len(b) == 4 + 1, (len(a), len(b))
worst = max(abs(x['loss'] - y['loss']) / abs(x['loss']) for x, y in zip(a[:-1], b[:-1]))
assert worst < 1e-5, worst
" py "--pp 4 --micro-batches 8 --schedule zbv, 8 layers: every step's loss within 1e-5 of one GPU's"
fi

# --- Step 1's gradients, gathered from every stage (and shard), equal one GPU's: 1e-5
# relative to the largest gradient; the batch and the initial weights are the same bits.
dumps="--pp=2:--micro-batches=4:--schedule=gpipe --pp=4:--micro-batches=8 --dp=2:--pp=2:--micro-batches=2:--zero=1 --pp=2:--micro-batches=4:--schedule=interleaved --pp=4:--micro-batches=8:--schedule=zb-h1 --dp=2:--pp=2:--micro-batches=4:--schedule=zb-h1:--zero=1 --pp=4:--micro-batches=8:--schedule=zb-h2 --pp=2:--micro-batches=4:--schedule=zbv"
$slow && dumps="--dp=2:--pp=2:--micro-batches=2:--zero=1"
$tsan && dumps=""
grads_per_layout 1e-5 "$dumps"

numeric_done # (tests/as_cpu.sh: what follows is the same on every CPU)

# --- The executed schedule is the taught one: each stage's order of (kind, micro-batch,
# chunk), read from the operations' start times (the records are kept in the schedule's
# order: read as they are, two operations run the other way round looked right), is
# `scalelab pipeline --json`'s, one after the other; the micro-batches it held at once its
# peak_in_flight (and the calculator's in_flight for the stage's activations); the bubble
# measured is the one the operations' times give (idle time of the stages between the first
# start and the last end, over their compute and over the wall), to 1e-6 relative (the times
# are printed with 10 digits), and the step's predicted bubble the taught timeline's. With
# tensor and data parallelism too (a fifth field, commas for spaces), each stage is read from
# its own GPUs, rank (stage x dp + dprank) x tp + tprank: stage 1 once showed stage 0's order.
scheds="gpipe:2:4:1 1f1b:2:4:1 1f1b:4:8:1 gpipe:4:8:1 1f1b:4:2:1 interleaved:2:4:2 interleaved:2:8:2
1f1b:2:4:1:--tp,2,--dp,2 gpipe:2:2:1:--tp,2 zb-h1:2:4:1 zb-h1:4:8:1 zb-h1:4:4:1 zb-h1:2:4:1:--dp,2
zb-h1:2:4:1:--tp,2,--sequence-parallel zb-h2:4:8:1 zb-h2:2:4:1:--tp,2,--dp,2 zbv:2:4:2 zbv:2:4:2:--tp,2,--dp,2"
$slow && scheds="gpipe:2:4:1 1f1b:4:8:1 interleaved:2:4:2 1f1b:2:4:1:--tp,2,--dp,2 zb-h1:4:8:1 zb-h2:4:8:1 zbv:2:4:2"
$tsan && scheds="1f1b:4:8:1"
for sp in $scheds; do
    IFS=: read -r sch p m v extra <<EOF
$sp
EOF
    chunks=""
    [ "$sch" = interleaved ] && chunks="--chunks $v"
    extra=$(printf '%s' "$extra" | tr , ' ')
    run pipeline --stages "$p" --micro-batches "$m" --schedule "$sch" $chunks --json
    printf '%s\n' "$out" >"$T_TMP/sched.json"
    run train --steps 2 --batch 8 --pp "$p" --micro-batches "$m" --schedule "$sch" $chunks $extra --json --summary
    check_status 0 "train --pp $p --micro-batches $m --schedule $sch $chunks $extra"
    save "x"
    PYCODE="
want = json.load(open(os.path.join(T, 'sched.json')))
s = load('x')[0]['summary']
got = s['pipeline']
assert len(got['ops']) == $p
busy, t0, t1 = 0, math.inf, -math.inf
for st in range($p):
    ran = sorted(got['ops'][st], key=lambda o: (o['start_s'], o['end_s']))
    a = [(o['kind'], o['micro'], o['chunk']) for o in ran]
    b = [(o['kind'], o['micro'], o['chunk']) for o in want['ops'][st]]
    assert a == b, (st, a, b)
    assert all(o['end_s'] >= o['start_s'] for o in ran)
    assert all(x['end_s'] <= y['start_s'] for x, y in zip(ran, ran[1:])), st  # one at a time
    busy += sum(o['end_s'] - o['start_s'] for o in ran)
    t0, t1 = min(t0, ran[0]['start_s']), max(t1, ran[-1]['end_s'])
idle = (t1 - t0) * $p - busy
assert abs(got['bubble_over_ideal'] - idle / busy) <= 1e-6 * idle / busy, (got['bubble_over_ideal'], idle / busy)
assert abs(got['bubble_over_wall'] - idle / ((t1 - t0) * $p)) <= 1e-6 * idle / ((t1 - t0) * $p), got['bubble_over_wall']
assert got['peak_in_flight'] == want['peak_in_flight'], (got['peak_in_flight'], want['peak_in_flight'])
assert [x['in_flight'] for x in s['predicted']['per_stage']] == want['peak_in_flight']
# the step's bubble as the schedule's timeline has it: the formula's, but for zb-h2's
# parallelogram ends (calc/sched.h)
assert abs(got['predicted']['bubble_over_wall'] - want['measured_bubble_over_wall']) < 1e-9
" py "$sch, $p stages, $m micro-batches $extra: the executed order, the micro-batches held and the bubble are the schedule's and the operations'"
done

# --- Measured = predicted: every GPU's ledger peaks equal the calculator's for its stage to
# the byte (model states, activations with the micro-batches in flight), and its bytes sent,
# data-parallel and pipeline, too.
cases="tiny:fp32:--pp=2:--micro-batches=4 tiny:bf16:--pp=4:--micro-batches=8:--schedule=gpipe
tiny:bf16:--dp=2:--pp=2:--micro-batches=4:--zero=1 small:fp32:--pp=2:--micro-batches=2
small:bf16:--dp=2:--pp=2:--micro-batches=2 tiny:fp16:--pp=2:--micro-batches=4:--checkpoint=full
tiny:bf16:--dp=3:--micro-batches=2:--batch=12:--grad-accum=fp32
tiny:bf16:--pp=2:--micro-batches=4:--schedule=interleaved small:fp32:--pp=3:--micro-batches=3:--batch=6:--schedule=interleaved:--checkpoint=full
tiny:bf16:--pp=2:--micro-batches=4:--schedule=zb-h1 tiny:fp32:--pp=4:--micro-batches=8:--schedule=zb-h1
tiny:bf16:--dp=2:--pp=2:--micro-batches=4:--schedule=zb-h1:--checkpoint=full
tiny:bf16:--pp=2:--micro-batches=4:--schedule=zb-h1:--checkpoint=selective
small:bf16:--pp=3:--micro-batches=6:--batch=6:--schedule=zb-h1:--tp=2:--sequence-parallel
small:fp32:--pp=2:--micro-batches=4:--schedule=zb-h1:--checkpoint=sqrt
tiny:bf16:--pp=2:--cp=2:--micro-batches=2:--schedule=zb-h1
tiny:fp32:--dp=2:--pp=2:--micro-batches=4:--schedule=zb-h2:--checkpoint=full
small:bf16:--pp=2:--micro-batches=4:--batch=8:--schedule=zb-h2:--tp=2:--sequence-parallel
tiny:bf16:--pp=2:--micro-batches=4:--schedule=zbv tiny:fp32:--dp=2:--pp=2:--micro-batches=4:--schedule=zbv:--checkpoint=full
tiny:bf16:--pp=2:--micro-batches=4:--schedule=zbv:--checkpoint=selective:--tp=2:--sequence-parallel"
$slow && cases="tiny:bf16:--dp=2:--pp=2:--micro-batches=4:--zero=1 tiny:bf16:--pp=2:--micro-batches=4:--schedule=interleaved"
predicted_per_case "$cases"
# The pipeline's bytes against the formula: stage 0 sends m micro-batches' activations
# (2 x 64 tokens x 64 x 4 B each) and sums the tied embedding with the last stage (a ring of
# two sends the whole 64 x 64 x 4 B); a middle stage sends both ways and no embedding.
run train --steps 1 --pp 4 --micro-batches 4 --batch 8 --json --summary
check_json "[g['comm_bytes_per_step']['pipeline'] for g in d['summary']['per_gpu']] == [4*2*64*64*4 + 64*64*4, 2*4*2*64*64*4, 2*4*2*64*64*4, 4*2*64*64*4 + 64*64*4]" \
    "pipeline bytes: m sbh p one way at the ends (+ the tied embedding's V d g), both ways in the middle"

# --- One verdict: a NaN in the middle layer (stage 1 of 2 holds it) makes every GPU skip
# the step and halve the scale.
run train --steps 3 --pp 2 --micro-batches 2 --precision fp16 --inject nan@2 --json
check_status 0 "a NaN in a pipeline"
check_jsonl "d[1]['skipped'] and d[1]['overflow'] and d[1]['nonfinite_gpu'] == 1 and d[1]['nonfinite'] == 'layer 2 attn scores' and d[2]['loss_scale'] == d[1]['loss_scale'] / 2 and not d[2]['skipped']" \
    "every stage skips step 2 and halves the scale; the step names stage 1's GPU and the tensor"

# --- Failure: a GPU fails; every thread ends, exit 1, fast.
start=$(date +%s)
run train --steps 50 --pp 2 --dp 2 --micro-batches 4 --fail 3@3
end=$(date +%s)
check_status 1 "--fail 3@3 in a pipeline"
check_contains "$err" "GPU 3" "the message names the GPU"
# Not a timing: a hang would wait out the 600 s deadline; 60 s (300 s under a sanitizer),
# far more than the run takes on a loaded host, tells a run that ended at once from one
# that waited for it.
limit=60
$slow && limit=300
[ $((end - start)) -le $limit ] && ok "the failed pipeline ends within seconds ($((end - start)) s)" ||
    not_ok "the failed pipeline took $((end - start)) s"

# --- A trace shows the activations going forward and their gradients back.
run train --steps 1 --pp 2 --micro-batches 2 --trace "$T_TMP/pp.json"
check_status 0 "--trace with 2 stages"
out=$(cat "$T_TMP/pp.json")
check_json "len({e.get('pid') for e in d['traceEvents'] if e.get('cat') == 'compute'}) == 2 and any('activation gradients' in str(e.get('name')) for e in d['traceEvents']) and any(str(e.get('name', '')).startswith('activations') for e in d['traceEvents'])" \
    "the trace holds both stages' compute and the sends both ways"
check_json "sorted({(e['pid'], e['args']['micro']) for e in d['traceEvents'] if e.get('cat') == 'compute'}) == [(0, 0), (0, 1), (1, 0), (1, 1)] and len([e for e in d['traceEvents'] if e.get('cat') == 'pipeline']) == 8" \
    "compute is labelled with its micro-batch; each stage's four operations are on its pipeline track"

# ZB-H1's trace: each stage's F, B and W of every micro-batch on its pipeline track (the W
# events counted before the run, so the buffer sized for it holds them).
run train --steps 1 --pp 2 --micro-batches 2 --schedule zb-h1 --trace "$T_TMP/zb.json"
check_status 0 "--trace with zb-h1"
out=$(cat "$T_TMP/zb.json")
check_json "sorted(e['name'] for e in d['traceEvents'] if e.get('cat') == 'pipeline') == sorted([k + ' micro-batch ' + str(m) for k in ('forward', 'backward', 'weight gradients') for m in (0, 1)] * 2)" \
    "zb-h1: F, B and W of each micro-batch on both stages' tracks"

# --- The text output: per GPU with its stage, the pipeline's bytes and the schedule.
run train --steps 2 --pp 2 --micro-batches 4
check_contains "$out" "pipeline/step" "text: pipeline bytes per GPU"
check_contains "$out" "held at once, per stage: 2 1 (the schedule's: 2 1)" "text: micro-batches in flight, measured and taught"

# --- Layouts refused with their reason (exit 2).
bad() { w=$1 n=$2; shift 2; refused "$w" "$n" train "$@"; } # WHAT NEEDLE ARGS...
bad "--pp 3 with 4 layers" "divide the model's 4 layers" --pp 3
bad "--pp 8 with 4 layers" "divide the model's 4 layers" --pp 8
bad "a batch that does not split" "does not split into" --pp 2 --micro-batches 3
bad "--dp 2 x micro-batches against the batch" "try --batch" --dp 2 --pp 2 --micro-batches 3 --batch 8
bad "interleaved over data-parallel copies" "--dp 1" --pp 2 --dp 2 --micro-batches 4 --schedule interleaved
bad "interleaved with M not a multiple of P" "multiple" --pp 2 --micro-batches 3 --batch 12 --schedule interleaved
bad "interleaved chunks not dividing the layers" "does not divide the model's 4 layers" --pp 2 --micro-batches 4 --schedule interleaved --chunks 4
bad "--chunks without interleaved" "--chunks goes with" --pp 2 --chunks 2
bad "ZeRO-2 with stages" "stages 2 and 3" --pp 2 --dp 2 --zero 2
bad "--gpus not dp x pp" "--gpus 3 is not --dp 2 x --tp 1 x --pp 2" --gpus 3 --dp 2 --pp 2
bad "--gpus not a multiple of pp" "does not divide the 3 GPUs" --gpus 3 --pp 2
bad "gpipe on one stage" "needs --pp > 1" --micro-batches 4 --schedule gpipe
bad "zb-h1 on one stage" "--schedule zb-h1 needs --pp 2 or more" --schedule zb-h1
bad "zb-h1 on one stage with micro-batches" "--schedule zb-h1 needs --pp > 1" --micro-batches 2 --schedule zb-h1
bad "zb-h2 on one stage" "--schedule zb-h2 needs --pp 2 or more" --schedule zb-h2
bad "zbv with 2 x 4 chunks over 4 layers" "--schedule zbv with --pp 4: each stage holds 2 chunks in a V" --pp 4 --micro-batches 4 --schedule zbv
bad "zbv with --chunks" "--chunks goes with" --pp 2 --micro-batches 4 --schedule zbv --chunks 3
bad "zb-h1 with chunks" "--chunks goes with" --pp 2 --micro-batches 4 --schedule zb-h1 --chunks 2
bad "an unknown schedule" "--schedule" --pp 2 --schedule zigzag

done_testing
