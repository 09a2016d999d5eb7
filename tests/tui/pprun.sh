#!/bin/sh
# Lesson 4's run panel in a real terminal (tmux): a real pipeline of the tiny GPT on
# thread-GPUs. The step that names it opens on 2 stages, 4 micro-batches, 1F1B in fp32: a row
# per stage, the Gantt chart's blocks appear as the run goes, every ledger equals the
# calculator, the stages hold 2 1 micro-batches as the schedule says and send its bytes; keys
# restart the run on other layouts (4 stages and 8 micro-batches: 4 3 2 1; GPipe: 8 each; two
# data-parallel ranks: 8 GPUs); a small window without colour or UTF-8 still shows the chart;
# q leaves the terminal as it was. The step on tensor parallelism opens it on two
# tensor-parallel GPUs: a column each, labelled, whose group flashes (marked '*' without
# colour) while their all-reduces replay, and every GPU sends the calculator's tensor-parallel
# bytes; t, e, d and s restart the run on other layouts (4 GPUs a group, sequence parallelism,
# two data-parallel copies, the interleaved schedule with its chunks in the chart, dp forced to
# 1), and a layout the interleaved schedule cannot run says why.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

# the step of lesson 4 that names the panel
step=$(grep '^@step' "$srcdir/lessons/04-scaling.lesson" | grep -n 'Measured: a pipeline' | cut -d: -f1)
# the blocks of the chart's row for stage $1 (digits: forwards, letters: backwards), from $screen
blocks() { printf '%s\n' "$screen" | grep -o "s$1 [0-9a-h.]*" | sed -n 2p | cut -c4- | tr -cd '0-9a-h' | wc -c; }

start -x 120 -y 40 -- --lesson 4 --step "$step"
wait_for "Pipeline parallelism, running" "the step shows the pipeline run panel"
wait_for "tiny, pp 2 x dp 1, 1f1b, m 4, batch 16, fp32" "the step's layout: 2 stages, 4 micro-batches, 1F1B"
wait_for "buffers allocated" "before a step, nothing has run"
check_contains "$screen" "s1  1 " "a grid row for each stage's GPU"
check_contains "$screen" "calc (p-1)/m 25.0%, (p-1)/(m+p-1) 20.0%" "the calculator's bubble: 1/4 and 1/5"
check_contains "$screen" "held: (schedule 2 1)" "the schedule's micro-batches in flight"
check_contains "$screen" "pp B/step 278,528 278,528 (calc)" \
    "the calculator's pipeline bytes: m sbh x 4 B one way at each end, + V d x 4 B"
check_eq "$(blocks 0)" "0" "no block in the chart yet"

# space plays: the chart's blocks appear while a step is replayed
keys ' '
wait_for "simulated" "space runs the pipeline"
# Two frames of one step's replay with more blocks in the later: watched over as many steps as
# it takes (a busy machine draws a step in fewer frames), to the deadline.
first= last= in=
grows() {
    this=$(printf '%s\n' "$screen" | grep -o 'step [0-9]*  simulated' | head -n 1)
    [ -z "$this" ] && return 1
    n=$(blocks 0)
    if [ "$this" != "$in" ]; then in=$this first=$n last=$n; return 1; fi
    last=$n
    [ "$last" -gt "$first" ]
}
tui_poll grows ""
if [ -n "$first" ] && [ "$last" -gt "$first" ]; then
    ok "stage 0's blocks appear as the step is replayed ($first, then $last)"
else
    not_ok "stage 0's blocks appear as the step is replayed" "seen: '$first' then '$last'" "$screen"
fi
wait_for "ledger = calc, all 2 GPUs" "after a step, every GPU's ledger equals the calculator for its stage"
wait_for "held: 2 1 (schedule 2 1) order ok" \
    "measured on the events: 2 1 micro-batches held, in the schedule's order"
wait_for "pp B/step 278,528 278,528 = calc" "every stage sent the calculator's bytes"
wait_for "bubble measured" "the bubble measured on the executed timeline"
wait_for "sends free:" "and with free sends"
wait_for "why " "the panel says why they differ"
# why_adds_up: the why line's causes add up to its gap, and the gap is the measured bubble
# minus the calculator's (over the ideal time), as the two lines above show them
why_adds_up() {
    if printf '%s\n' "$screen" | python3 -c "
import re, sys
s = sys.stdin.read()
meas = float(re.search(r'bubble measured ([0-9.]+)% ideal', s).group(1))
calc = float(re.search(r'calc \(p-1\)/[(]?v?m[)]? ([0-9.]+)%', s).group(1))
gap, *parts = [float(x) for x in re.findall(r'([+-][0-9.]+)%', re.search(r'why .*', s).group(0))]
assert abs(gap - sum(parts)) < 1e-9 and abs(gap - (meas - calc)) < 1e-9, (gap, parts, meas, calc)
" 2>"$T_TMP/why"; then ok "$1"; else not_ok "$1" "$(cat "$T_TMP/why")" "$screen"; fi
}
why_adds_up "the causes (latency, unequal stages) add up to the gap between measured and calculated"

# keys: 4 stages and 8 micro-batches, GPipe, then two data-parallel ranks
keys ' '
keys p m
wait_for "tiny, pp 4 x dp 1, 1f1b, m 8, batch 16" "p m: 4 stages (3 does not divide 4 layers), 8 micro-batches"
keys n
wait_screen "order ok" || keys n
wait_for "ledger = calc, all 4 GPUs" "4 stages: every ledger equals the calculator"
wait_for "held: 4 3 2 1 (schedule 4 3 2 1) order ok" "1F1B: stage s holds p - s"
wait_for "pp B/step 278,528 524,288 524,288 278,528 = calc" "the middle stages send both ways"
keys s
wait_for "tiny, pp 4 x dp 1, gpipe, m 8, batch 16" "s restarts the run with GPipe"
keys n
wait_screen "order ok" || keys n
wait_for "held: 8 8 8 8 (schedule 8 8 8 8) order ok" "GPipe: every stage holds all 8"
keys d
wait_for "tiny, pp 4 x dp 2, gpipe, m 8, batch 16" "d: two data-parallel ranks, the same global batch"
check_contains "$screen" "s3  6 " "stage 3's first GPU is GPU 6 (rank = stage x dp + dprank)"
check_contains "$screen" " 7 " "and its second is GPU 7"
keys n
wait_screen "ledger = calc, all 8 GPUs" || keys n
wait_for "ledger = calc, all 8 GPUs" "8 GPUs: every ledger equals the calculator"
wait_for "dp B/step" "the data-parallel bytes beside the pipeline's"
keys p
wait_for "pp stays 4, the most: tiny has 4 layers, the run up to 4 stages" \
    "p at 4 stages stays, and the status line says why"
keys m
wait_for "micro-batches stay 8, the most: the run takes 1 to 8" "m at 8 stays too"
keys P P
wait_for "tiny, pp 1 x dp 2, 1f1b, m 8, batch 16, fp32 (one stage)" \
    "P P: down to one stage, which runs its micro-batches one after the other"
keys M M M
wait_for "tiny, pp 1 x dp 2, 1f1b, m 1" "M M M: one micro-batch"
wait_for "one stage, one micro-batch: no pipeline" "no pipeline to draw"
keys M
wait_for "micro-batches stay 1, the fewest" "M at 1 stays, said"

# a small window, no colour, ASCII
resize 80 24
wait_for "pp 1 x dp 2" "80x24: the panel still draws"
quit

start -x 80 -y 24 NO_COLOR=1 -- --ascii --lesson 4 --step "$step"
wait_for "Pipeline parallelism, running" "80x24 without colour: the run panel"
keys n
wait_screen "order ok" || keys n
wait_for "held: 2 1 (schedule 2 1) order ok" "80x24: the measured micro-batches"
wait_for "pp B/step 272.0K 272.0K = calc" "80x24: the bytes, shortened to fit"
row=$(printf '%s\n' "$screen" | grep -o "s0 [0-9a-h.]*" | sed -n 2p | cut -c4-)
check_eq "$(printf '%s\n' "$row" | grep -o '[a-h]' | sort -u | tr -d '\n')" "abcd" \
    "80x24: stage 0's row shows the backward of each of the 4 micro-batches"
bar=$(printf '%s\n' "$screen" | grep -o "s0  0 [WGMOAC.]*" | head -n 1)
if printf '%s\n' "$bar" | grep -Eq '^s0  0 W+G+O+[AC]*[.]+$'; then
    ok "the bars in letters (fp32: the weights are their own master copy): $bar"
else
    not_ok "the bars in letters" "got: $bar" "$screen"
fi
keys f
wait_for ", sends free" "f: the chart with free sends"
hints=$(printf '%s\n' "$screen" | tail -n 2)
for h in "p stages" "m micro" "d dp" "t tp" "e seq par" "s schedule" "o model" "f free" "space"; do
    check_contains "$hints" "$h" "80x24: the hint $h is on the hint lines"
done
quit

# the step on tensor parallelism: two tensor-parallel GPUs, without colour (the flashes marked)
tpstep=$(grep '^@step' "$srcdir/lessons/04-scaling.lesson" | grep -n 'Measured: tensor' | cut -d: -f1)
# the figures of a "tp B/step" line (after its label, before "(calc)" or "= calc")
tpline() { printf '%s\n' "$screen" | grep -o 'tp B/step [0-9,. KM]*' | head -n 1 | sed 's/ *$//'; }
# the tp line gives the calculator's figure, no step run yet: the panel drawn after a restart
# (a capture can catch a frame half written, its header new and the lines below it old)
tp_predicted() { printf '%s\n' "$screen" | grep -qE 'tp B/step [0-9,. KM]*\(calc\)'; }
start -x 120 -y 40 NO_COLOR=1 -- --ascii --lesson 4 --step "$tpstep"
wait_for "tiny, pp 1 x dp 1 x tp 2, 1f1b, m 1, batch 16, fp32" "the step opens the run on two tensor-parallel GPUs"
wait_for "buffers allocated" "before a step"
check_contains "$screen" "   t0 " "the grid's columns are labelled by tensor-parallel rank"
check_contains "$screen" "t1" "t1 beside it"
check_contains "$screen" "s0  0 " "GPU 0 in stage 0's row"
check_contains "$screen" "  1 " "and GPU 1 beside it"
check_contains "$screen" "tp B/step 4,730,880 (calc)" \
    "the calculator's tensor-parallel bytes: 18 all-reduces of s b h p and the loss's 3 numbers a token"
keys ' '
# Both GPUs flash while a step's all-reduces replay: watched until they are seen in one frame,
# over as many steps as it takes (a busy machine draws fewer frames a step), to the deadline.
flashing() {
    case "$screen" in *"s0  0*"*" 1*"*) return 0 ;; esac
    return 1
}
if tui_poll flashing ""; then ok "the tensor-parallel group flashes on both its GPUs while their all-reduces replay"
else not_ok "the tensor-parallel group flashes on both its GPUs while their all-reduces replay" "$screen"; fi
keys ' ' n
wait_for "tp B/step 4,730,880 = calc" "every GPU sent the calculator's tensor-parallel bytes, 4,730,880"
wait_for "ledger = calc, all 2 GPUs" "and held the calculator's bytes"
# Paused (the hints no longer say "playing"), and the step line giving a loss: no step is
# being replayed (a replay's line gives its simulated time instead). Text that was on the
# screen before the keys were read (the verdicts above) does not say that; a screen read
# before them may still be flashing.
step_done() {
    ! printf '%s\n' "$screen" | grep -q "playing" &&
        printf '%s\n' "$screen" | grep -qE "step [0-9]+  loss [0-9]"
}
if tui_poll step_done ""; then ok "n finishes the step being replayed"
else not_ok "n finishes the step being replayed" "$screen"; fi
noflash() { ! printf '%s\n' "$screen" | grep 's0  0' | grep -q '[*]'; }
if tui_poll noflash ""; then ok "a step done: no flash"; else not_ok "a step done: no flash" "$screen"; fi
keys t
wait_for "tiny, pp 1 x dp 1 x tp 4, 1f1b" "t: four tensor-parallel GPUs"
check_contains "$screen" "t3" "a column for each"
tui_poll tp_predicted ""
pred=$(tpline)
keys n
wait_screen "ledger = calc, all 4 GPUs" || keys n
wait_for "ledger = calc, all 4 GPUs" "4 GPUs: every ledger equals the calculator"
check_eq "$(tpline)" "$pred" "the measured tensor-parallel bytes are the calculator's"
check_contains "$screen" "= calc" "and are said to be"
keys e
wait_for "tiny, pp 1 x dp 1 x tp 4 sp, 1f1b" "e: sequence parallelism"
tui_poll tp_predicted ""
pred=$(tpline)
keys n
wait_screen "ledger = calc, all 4 GPUs" || keys n
wait_for "ledger = calc, all 4 GPUs" "sequence parallelism: every ledger equals the calculator"
check_eq "$(tpline)" "$pred" "sequence parallelism: the tensor-parallel bytes are the calculator's"
keys p d
wait_for "tiny, pp 2 x dp 2 x tp 4 sp, 1f1b" "p d: 2 stages of two data-parallel copies of 4 GPUs"
check_contains "$screen" "d1t3" "columns labelled by data- and tensor-parallel rank"
check_contains "$screen" "s1  8 " "stage 1's first GPU is GPU 8: rank = (stage x dp + dprank) x tp + tprank"
check_contains "$screen" " 15 " "and its last GPU 15"
keys s
wait_for "interleaved skipped: m must be a multiple of pp 2" "s: one micro-batch cannot interleave 2 stages"
keys m m s s
wait_for "tiny, pp 2 x dp 1 x tp 4 sp, interleaved, m 4" "m m s s: the interleaved schedule, on one data-parallel copy"
check_contains "$screen" "interleaved: dp forced to 1" "the panel says dp was forced to 1"
keys n
wait_screen "order ok" || keys n
wait_for "held: 2.5 1.5 (schedule 2.5 1.5) order ok" \
    "interleaved: micro-batches held as train counts them (chunk pairs / 2), in the schedule's order"
wait_for "ledger = calc, all 8 GPUs" "interleaved: every ledger equals the calculator"
want=$(python3 -c "p, m, v = 2, 4, 2; print('calc (p-1)/(vm) %.1f%%, (p-1)/(vm+p-1) %.1f%%' % (100 * (p - 1) / (v * m), 100 * (p - 1) / (v * m + p - 1)))")
check_contains "$screen" "$want" "interleaved: the bubble's formula is (p-1)/(vm), and its wall form"
why_adds_up "interleaved: the causes add up to the gap from (p-1)/(vm)"
row=$(printf '%s\n' "$screen" | grep -o "s0 [0-9A-Da-dijkl.]*" | sed -n 2p | cut -c4-)
check_eq "$(printf '%s\n' "$row" | grep -o '[A-Dijkl]' | sort -u | tr -d '\n')" "ABCDijkl" \
    "stage 0's row shows the second chunk's forwards (A-D) and backwards (i-l)"
keys p
wait_for "1f1b, not interleaved: pp 4 x 2 chunks does not divide 4 layers" \
    "p: 4 stages cannot interleave 2 chunks of tiny's 4 layers, and the panel says why"
keys s
wait_for "interleaved skipped: pp 4 x 2 chunks does not divide 4 layers" "s skips the interleaved schedule"
wait_for "tiny, pp 4 x dp 1 x tp 4 sp, gpipe" "and goes on to GPipe"
keys o
wait_for "small, pp 3 x dp 1 x tp 2 sp, gpipe" "o: small, on the stages and tensor-parallel GPUs it takes"
wait_for "pp 3, not 4: small has 6 layers; tp 2, not 4: small has 6 heads" \
    "and the status line says what o changed besides the model"
keys G 3 Enter
wait_for "step 3 of" "G 3 Enter reaches the lesson, whatever the panel"
quit
done_testing
