#!/bin/sh
# scalelab pipeline: Gantt charts, bubbles under both definitions, peak micro-batches, JSON.
. "$srcdir/tests/lib.sh"
threadless "the schedules are computed on one thread"

run pipeline --stages 4 --micro-batches 8 --schedule 1f1b
check_status 0 "1f1b, p 4, m 8"
check_contains "$out" "37.5% of ideal compute time  (p-1)/(m) = 3/8" "bubble over ideal time, labelled"
check_contains "$out" "27.3% of wall time           (p-1)/(m+p-1) = 3/11" "bubble over wall time, labelled"
check_contains "$out" "peak micro-batches in flight per stage: 4 3 2 1" "1F1B holds p - s"
check_contains "$out" "stage 0  F0F1F2F3....." "stage 0 warms up with p - 1 forwards, then waits"
check_contains "$out" "stage 3  ......F0B0--F1B1--" "the last stage alternates one forward, one backward"

run pipeline --stages 4 --micro-batches 8 --schedule gpipe
check_contains "$out" "37.5% of ideal compute time" "GPipe: the same bubble"
check_contains "$out" "peak micro-batches in flight per stage: 8 8 8 8" "GPipe: holds all m"
check_contains "$out" "stage 0  F0F1F2F3F4F5F6F7" "GPipe: all forwards first"

run pipeline --stages 4 --micro-batches 8 --schedule 1f1b --json
f1b=$out
check_json 'd["bubble_over_ideal"] == 3/8 and d["bubble_over_wall"] == 3/11 and d["peak_in_flight"] == [4, 3, 2, 1]' "JSON: 1F1B bubble and peaks"
check_json 'd["measured_bubble_over_ideal"] == d["bubble_over_ideal"]' "the timeline's bubble equals the formula"
check_json 'all(len(row) == 16 for row in d["ops"]) and d["ops"][0][3] == {"kind": "F", "micro": 3, "chunk": 0, "start": 3, "duration": 1}' "the schedule as data"
check_json 'd["schedule"] == "1f1b" and d["stages"] == 4 and d["micro_batches"] == 8 and d["chunks"] == 1' "JSON keys"
run pipeline --stages 4 --micro-batches 8 --schedule gpipe --json
check_json 'd["bubble_over_ideal"] == 3/8 and d["peak_in_flight"] == [8, 8, 8, 8]' "JSON: GPipe same bubble, more in flight"

run pipeline --stages 4 --micro-batches 8 --schedule interleaved --chunks 2 --json
check_json 'd["bubble_over_ideal"] == 3/16 and d["measured_bubble_over_ideal"] == 3/16' "interleaved divides the bubble by v"
check_json 'all(len(row) == 32 for row in d["ops"])' "2 m v operations per stage"
run pipeline --stages 4 --micro-batches 8 --schedule interleaved --chunks 2
check_contains "$out" "(p-1)/(vm) = 3/16" "interleaved: the formula with v"

# ZB-H1 (Qi et al. 2024): B and W apart, each a slot; the W fill the cool-down, so the bubble is
# (p-1)(F+B-W) a stage, a third of 1F1B's (p-1)(F+B+W) when F = B = W.
run pipeline --stages 4 --micro-batches 8 --schedule zb-h1
check_status 0 "zb-h1, p 4, m 8"
check_contains "$out" "12.5% of ideal compute time  (p-1)(F+B-W)/(m(F+B+W)) = 3/24 (1F1B's (p-1)(F+B+W): 9/24)" "zb-h1: its bubble beside 1F1B's"
check_contains "$out" "stage 0  F0F1F2F3......B0W0F4B1W1" "stage 0: 1F1B's warm-up, then F, B and W"
check_contains "$out" "stage 3  ......F0B0F1B1F2B2F3B3W0F4B4W1" "the last stage defers p - 1 W's"
check_contains "$out" "peak micro-batches in flight per stage: 4 3 2 1" "zb-h1 holds 1F1B's between F and B"
run pipeline --stages 4 --micro-batches 8 --schedule zb-h1 --json
check_json 'd["bubble_over_ideal"] == 3/24 and d["measured_bubble_over_ideal"] == 3/24 and d["peak_in_flight"] == [4, 3, 2, 1]' "JSON: zb-h1's bubble, measured = formula"
check_json 'all(len(row) == 24 and sorted(o["kind"] for o in row) == ["B"] * 8 + ["F"] * 8 + ["W"] * 8 for row in d["ops"]) and d["slots"] == {"forward": 1, "backward": 1, "weights": 1}' "3 m operations a stage, each a slot"

# ZB-H2: up to 2p micro-batches between F and W; the warm-up's extra forwards and the W's at the
# tail leave no stage a gap between its first operation and its last, (p-1)(F+B-2W) = 0, while
# the step still spans the parallelogram's p - 1 slots at its ends.
run pipeline --stages 4 --micro-batches 8 --schedule zb-h2
check_status 0 "zb-h2, p 4, m 8"
check_contains "$out" "0.0% of ideal compute time  (p-1)(F+B-2W)/(m(F+B+W)) = 0/24" "zb-h2: none"
check_contains "$out" "stage 0  F0F1F2F3F4F5F6B0F7B1W0B2W1" "stage 0: 2p - 1 forwards before its first B"
check_contains "$out" "each stage idle 0 slots between its first operation and its last" "zb-h2: no gap within a stage"
check_contains "$out" "peak micro-batches in flight per stage: 7 5 3 1" "2(p - s) - 1 between F and B"
run pipeline --stages 4 --micro-batches 8 --schedule zb-h2 --json
check_json 'd["bubble_over_ideal"] == 0 and d["span_idle_slots"] == 0 and d["makespan_slots"] == 27 and d["peak_in_flight"] == [7, 5, 3, 1]' "JSON: zb-h2's bubble and what it holds"

# ZB-V: two chunks a stage in a V (a: virtual stage s, b: 2p-1-s), B and W apart: stage 0
# runs the first and the last virtual stage; no gap within a stage, 2p chunks held (1F1B's p
# micro-batches at stage 0, at half the layers).
run pipeline --stages 4 --micro-batches 8 --schedule zbv
check_status 0 "zbv, p 4, m 8"
check_contains "$out" "stage 0  F0aF1aF2aF3aF4aF5aF6aF0bB0bW0bF1bB1bW1b" "stage 0: 2p - 1 forwards of chunk a, then chunk b's F, B and W"
check_contains "$out" "stage 3  .........F0aF0bF1aF1bF2aF2bF3aF3bB0bW0b" "the last stage turns the V: its chunk a feeds its chunk b"
check_contains "$out" "each stage idle 0 slots between its first operation and its last" "zbv: no gap within a stage"
check_contains "$out" "peak micro-batches in flight per stage: 4 4 4 4" "2p chunks: 1F1B's stage 0"
run pipeline --stages 4 --micro-batches 8 --schedule zbv --json
check_json 'd["chunks"] == 2 and d["span_idle_slots"] == 0 and d["makespan_slots"] == 51 and d["peak_chunks"] == [8, 8, 8, 8] and all(len(row) == 48 for row in d["ops"])' "JSON: zbv's 6m operations a stage, its span and what it holds"

run pipeline --stages 1 --micro-batches 1
check_status 0 "one stage, one micro-batch"
check_contains "$out" "0.0% of ideal compute time" "no bubble"

bad() { # WHAT NEEDLE ARGS...
    what=$1; needle=$2; shift 2
    run pipeline "$@"
    check_status 2 "$what"
    check_contains "$err" "$needle" "$what: the message"
}
bad "zero stages" "--stages: '0' is not allowed (a whole number from 1 to 64)" --stages 0
bad "too many micro-batches" "--micro-batches: '5000' is not allowed" --micro-batches 5000
bad "unknown schedule" "'zigzag' is not a pipeline schedule (use gpipe, 1f1b, interleaved, zb-h1, zb-h2 or zbv)" --schedule zigzag
bad "zbv with 3 chunks" "zbv runs 2 chunks a stage in a V" --schedule zbv --chunks 3
bad "zbv on one stage" "zbv runs 2 chunks a stage in a V over 2 or more stages" --schedule zbv --stages 1
bad "chunks without interleaving" "only the interleaved schedule has chunks" --chunks 2
bad "interleaved m not a multiple of p" "interleaved needs a multiple of --stages 4" --schedule interleaved --micro-batches 6
bad "NaN stages" "--stages: 'nan' is not allowed" --stages nan

# An interleaved schedule needs two stages or more, the same rule as train's and memory's.
run pipeline --stages 1 --micro-batches 4 --schedule interleaved
check_status 2 "interleaved on one stage is refused"
check_contains "$err" "interleaved needs 2 or more" "... saying why"
run memory --schedule interleaved --micro-batches 4
check_status 2 "memory: interleaved on one stage is refused"

done_testing
