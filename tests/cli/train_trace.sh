#!/bin/sh
# train --trace for every layout: each strategy (data, tensor with and without sequence
# parallelism, context, expert parallelism, pipelines with each schedule) and 3D/4D layouts
# write a Chrome trace Perfetto opens, sized before the run from what each GPU's trainer and
# strategies say they do (par/strategy.h), with every send and every pipeline operation of the
# run in it: each GPU's send slices add up to the bytes its summary says it sent (every kind,
# and the agreement's), each send has its receive, each stage's operations are the schedule's.
. "$srcdir/tests/lib.sh"

steps=2
layouts="
--gpus=2:--zero=1
--gpus=4:--zero=3
--tp=2
--tp=2:--sequence-parallel:--precision=bf16
--cp=2
--cp=2:--cp-naive:--checkpoint=full
--model=tiny-moe:--capacity-factor=2:--ep=2
--model=tiny-moe:--capacity-factor=1.25:--ep=2:--dp=4:--zero=1
--pp=2:--micro-batches=4
--pp=2:--micro-batches=4:--schedule=interleaved
--tp=2:--pp=2:--dp=2:--micro-batches=2
--cp=2:--tp=2
--cp=2:--tp=2:--dp=2:--zero=1:--sequence-parallel
--cp=2:--tp=2:--pp=2:--micro-batches=2
"
if $sanitized; then # ~10 times slower: one of each strategy
    layouts="--tp=2 --cp=2 --model=tiny-moe:--capacity-factor=2:--ep=2 --tp=2:--pp=2:--dp=2:--micro-batches=2"
fi

# every_send_and_op TRACE SUMMARY: the trace against the run's summary (train --json's last line)
every_send_and_op() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
from collections import defaultdict
trace = json.load(open(sys.argv[1]))
summary = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])["summary"]
steps = summary["steps"]
ev = trace["traceEvents"]
sends, recvs, sent, ops = defaultdict(int), defaultdict(int), defaultdict(int), defaultdict(int)
for e in ev:
    if e.get("cat") == "comm" and e.get("ph") == "X":
        if e["tid"] == 1:
            sends[e["pid"]] += 1
            sent[e["pid"]] += e["args"]["bytes"]
        else:
            recvs[e["pid"]] += 1
    if e.get("cat") == "pipeline":
        ops[e["pid"]] += 1
bad = []
if sum(sends.values()) == 0:
    bad.append("no send in the trace")
if sum(sends.values()) != sum(recvs.values()):
    bad.append("%d sends, %d receives" % (sum(sends.values()), sum(recvs.values())))
for g in summary["per_gpu"]:
    want = steps * (sum(g["comm_bytes_per_step"].values()) + summary["scalar_bytes_per_step"])
    if sent[g["gpu"]] != want:
        bad.append("GPU %d: %d bytes in the trace's sends, %d sent" % (g["gpu"], sent[g["gpu"]], want))
stages = summary.get("pipeline", {}).get("ops", [])
for g in summary["per_gpu"]:
    want = steps * len(stages[g["coord"]["pp"]]) if stages else 0
    if ops[g["gpu"]] != want:
        bad.append("GPU %d: %d operations in the trace, %d run" % (g["gpu"], ops[g["gpu"]], want))
print("; ".join(bad[:4]))
sys.exit(1 if bad else 0)
EOF
}

for l in $layouts; do
    args=$(printf '%s' "$l" | sed 's/:--/ --/g')
    rm -f "$T_TMP/trace.json"
    # shellcheck disable=SC2086
    run train --steps $steps --batch 8 --json --trace "$T_TMP/trace.json" $args
    if [ "$status" -ne 0 ]; then
        not_ok "train --trace $args: written" "exit $status" "stderr: $err"
        continue
    fi
    printf '%s\n' "$out" >"$T_TMP/summary.json"
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['traceEvents']" \
        "$T_TMP/trace.json" 2>"$T_TMP/pyerr"; then
        ok "train --trace $args: a valid Chrome trace"
    else
        not_ok "train --trace $args: a valid Chrome trace" "$(cat "$T_TMP/pyerr")"
        continue
    fi
    if why=$(every_send_and_op "$T_TMP/trace.json" "$T_TMP/summary.json" 2>&1); then
        ok "train --trace $args: every send and operation of the run in it"
    else
        not_ok "train --trace $args: every send and operation of the run in it" "$why"
    fi
done

# An all-to-all's sends say what it moves (model/gpt.h's phases), in the trace as in the panel.
run train --steps 1 --batch 8 --model tiny-moe --capacity-factor 2 --ep 2 --trace "$T_TMP/ep.json"
check_status 0 "train --trace with expert parallelism"
if python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
phases = {e['args']['phase'] for e in d['traceEvents'] if e.get('cat') == 'comm' and e.get('ph') == 'X'}
want = {'expert dispatch', 'expert combine', 'grad expert combine', 'grad expert dispatch'}
sys.exit(0 if want <= phases and 'all-to-all' not in phases else 1)" "$T_TMP/ep.json"; then
    ok "the experts' all-to-alls name their phase in the trace: dispatch, combine, forward and backward"
else
    not_ok "the experts' all-to-alls name their phase in the trace" "$(head -c 600 "$T_TMP/ep.json")"
fi

# Dropless expert parallelism (no capacity factor): the counts' all-to-alls and the exchanges'
# buffers charged and released fit the trace sized for the run, every send is in it, and the
# counts' sends name their phase. One step: its bytes follow the routing, which changes from
# step to step (the check multiplies the last step's by the steps).
run train --steps 1 --batch 8 --json --model tiny-moe --ep 2 --dp 4 --trace "$T_TMP/epd.json"
check_status 0 "train --trace with dropless expert parallelism"
printf '%s\n' "$out" >"$T_TMP/summary.json"
if why=$(every_send_and_op "$T_TMP/epd.json" "$T_TMP/summary.json" 2>&1) &&
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if 'expert counts' in {e['args']['phase'] for e in d['traceEvents'] if e.get('cat') == 'comm' and e.get('ph') == 'X'} else 1)" "$T_TMP/epd.json"; then
    ok "dropless: every send of the run in the trace, the counts' named"
else
    not_ok "dropless: every send of the run in the trace, the counts' named" "$why"
fi

# The check can fail: a trace with one send left out does not add up.
python3 - "$T_TMP/trace.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
i = next(i for i, e in enumerate(d["traceEvents"]) if e.get("cat") == "comm" and e.get("tid") == 1)
del d["traceEvents"][i]
json.dump(d, open(sys.argv[1], "w"))
EOF
if every_send_and_op "$T_TMP/trace.json" "$T_TMP/summary.json" >/dev/null 2>&1; then
    not_ok "a trace missing one send: found" "the check passed"
else
    ok "a trace missing one send: found"
fi
done_testing
