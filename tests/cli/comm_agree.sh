#!/bin/sh
# One communication calculator: for every layout below, what `memory --json` says each
# pipeline stage's GPUs send per step, by kind (data-parallel, tensor-parallel, pipeline),
# equals `train --json`'s prediction for the same stage and what every GPU of that stage
# measured, to the byte; and memory's pieces (the layers, the ends: embedding, head, loss
# scalars, tied embedding, sequence-parallel re-gathers and norm gradients) add up to its
# kinds. The layouts sweep data parallelism (ZeRO 0-3, buckets, prefetch, fp32 gradients),
# tensor and sequence parallelism (with full recompute), pipelines (GPipe, 1F1B,
# interleaved) and their combinations, on tiny and small, one step each (bytes per step do
# not change from step to step). Exact: bytes are whole numbers.
. "${srcdir:-.}/tests/lib.sh"

# model dp tp pp micro-batches batch precision, then the options both commands take
layouts='tiny 2 1 1 1 16 bf16 --zero 0
tiny 2 1 1 1 16 bf16 --zero 1
tiny 2 1 1 1 16 bf16 --zero 2
tiny 2 1 1 1 16 bf16 --zero 3
tiny 4 1 1 1 16 fp32 --zero 3
tiny 3 1 1 1 12 bf16 --zero 3
tiny 4 1 1 1 16 bf16 --zero 2 --bucket 64KiB
tiny 2 1 1 1 16 bf16 --zero 3 --prefetch 0
tiny 2 1 1 1 16 bf16 --zero 1 --grad-accum fp32
tiny 2 1 1 1 16 fp16 --zero 0 --checkpoint full
tiny 2 1 1 2 16 bf16 --zero 0
tiny 1 2 1 1 16 fp32
tiny 1 4 1 1 16 bf16
tiny 1 2 1 1 16 fp32 --sequence-parallel
tiny 1 2 1 1 16 bf16 --sequence-parallel --checkpoint full
tiny 1 2 1 1 16 fp32 --checkpoint full
tiny 1 1 2 4 16 fp32 --schedule 1f1b
tiny 1 1 2 4 16 bf16 --schedule gpipe
tiny 1 1 4 4 16 bf16 --schedule 1f1b
tiny 1 1 2 4 16 fp32 --schedule interleaved --chunks 2
tiny 1 1 2 2 16 bf16 --schedule interleaved
tiny 2 1 2 2 16 fp32 --schedule 1f1b
tiny 2 1 2 2 16 bf16 --zero 1 --schedule gpipe --checkpoint selective
tiny 2 2 1 1 16 bf16 --zero 0
tiny 2 2 1 1 16 bf16 --zero 1 --sequence-parallel
tiny 2 2 1 1 16 fp32 --zero 3
tiny 1 2 2 2 16 fp32
tiny 1 2 2 4 16 bf16 --sequence-parallel
tiny 1 2 2 2 16 fp32 --schedule interleaved
tiny 2 2 2 2 16 fp32
tiny 2 2 2 4 16 bf16 --sequence-parallel
small 2 1 1 1 4 bf16 --zero 3
small 1 2 2 2 4 bf16 --sequence-parallel
small 2 1 2 2 4 bf16 --zero 1
small 1 2 1 1 4 fp32 --checkpoint full'

# Under TSan (whose worth is in the races, not the numbers) four layouts run, one of each
# kind; under ASan every other one (about ten times slower); the normal build runs them all.
if $tsan; then
    layouts=$(printf '%s\n' "$layouts" | awk 'NR == 2 || NR == 14 || NR == 20 || NR == 31')
elif $sanitized; then
    layouts=$(printf '%s\n' "$layouts" | awk 'NR % 2 == 1')
fi

# Both run eager attention, the tiny GPT's default at cp 1 (memory counts flash unless told): the
# totals compared include the activations.
while read -r model dp tp pp m batch prec rest; do
    mb=$((batch / (dp * m)))
    name="$model dp $dp tp $tp pp $pp m $m batch $batch $prec $rest"
    # shellcheck disable=SC2086
    "$SCALELAB" memory --model "$model" --dp "$dp" --tp "$tp" --pp "$pp" --micro-batches "$m" \
        --micro-batch "$mb" --precision "$prec" --attention eager $rest --json \
        >"$T_TMP/mem.json" 2>"$T_TMP/mem.err"
    mstatus=$?
    # shellcheck disable=SC2086
    "$SCALELAB" train --model "$model" --dp "$dp" --tp "$tp" --pp "$pp" --micro-batches "$m" \
        --batch "$batch" --precision "$prec" --attention eager $rest --steps 1 --json --summary \
        >"$T_TMP/train.json" 2>"$T_TMP/train.err"
    tstatus=$?
    if [ "$mstatus" -ne 0 ] || [ "$tstatus" -ne 0 ]; then
        not_ok "$name: memory exit $mstatus, train exit $tstatus" "$(cat "$T_TMP/mem.err" "$T_TMP/train.err")"
        continue
    fi
    if python3 - "$T_TMP/mem.json" "$T_TMP/train.json" >"$T_TMP/why" 2>&1 <<'PY'; then
import json, sys
mem = json.load(open(sys.argv[1]))
summ = json.load(open(sys.argv[2]))["summary"]
kinds = ("data_parallel", "tensor_parallel", "pipeline")
bad = []
stages = mem["per_stage"]
pred = summ["predicted"]["per_stage"]
if len(stages) != len(pred):
    bad.append("memory has %d stages, train %d" % (len(stages), len(pred)))
for s, (ms, ps) in enumerate(zip(stages, pred)):
    for k in kinds:
        mb = ms["communication"][k]["bytes"]
        if sum(ms["communication"][k]["parts"].values()) != mb:
            bad.append("stage %d %s: parts %s do not add up to %d" % (s, k, ms["communication"][k]["parts"], mb))
        if ps["comm_bytes_per_step"][k] != mb:
            bad.append("stage %d %s: memory %d, train predicts %d" % (s, k, mb, ps["comm_bytes_per_step"][k]))
    for g in summ["per_gpu"]:
        if g["coord"]["pp"] != s:
            continue
        for k in kinds:
            if g["comm_bytes_per_step"][k] != ms["communication"][k]["bytes"]:
                bad.append("GPU %d (stage %d) %s: measured %d, memory %d" % (
                    g["gpu"], s, k, g["comm_bytes_per_step"][k], ms["communication"][k]["bytes"]))
    if ms["per_gpu"]["total"] != ps["total"]:
        bad.append("stage %d total memory: memory %d, train predicts %d" % (s, ms["per_gpu"]["total"], ps["total"]))
# the reported stage's figures are its per_stage entry's
if mem["communication"]["bytes"] != stages[mem["stage"]]["communication"]["bytes"]:
    bad.append("communication is not stage %d's" % mem["stage"])
if summ["measured_minus_predicted"]["comm_bytes"] != 0:
    bad.append("train's own check: %s" % summ["measured_minus_predicted"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
        ok "$name: memory = train's prediction = measured, per stage and kind"
    else
        not_ok "$name: memory, train's prediction and the measured bytes differ" "$(cat "$T_TMP/why")"
    fi
done <<EOF
$layouts
EOF

done_testing
