#!/bin/sh
# Lesson 4's run panel in a real terminal (tmux): a real pipeline of the tiny GPT on
# thread-GPUs. The step that names it opens on 2 stages, 4 micro-batches, 1F1B in fp32: a row
# per stage, the Gantt chart's blocks appear as the run goes, every ledger equals the
# calculator, the stages hold 2 1 micro-batches as the schedule says and send its bytes; keys
# restart the run on other layouts (4 stages and 8 micro-batches: 4 3 2 1; GPipe: 8 each; two
# data-parallel ranks: 8 GPUs); a small window without colour or UTF-8 still shows the chart;
# q leaves the terminal as it was.
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
first=
last=
i=0
while [ $i -lt 100 ]; do
    screen=$(capture)
    case "$screen" in *"step 1  simulated"*)
        n=$(blocks 0)
        [ -z "$first" ] && first=$n
        last=$n
        ;;
    esac
    case "$screen" in *"step 2 "*) break ;; esac
    sleep 0.05
    i=$((i + 1))
done
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
wait_for "why: forward" "the panel says why they differ"

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
wait_for "tiny, pp 1 x dp 2, 1f1b, m 8, batch 16, fp32 (one stage)" \
    "p: round to one stage, which runs its micro-batches one after the other"
keys M M M
wait_for "tiny, pp 1 x dp 2, 1f1b, m 1" "M M M: one micro-batch"
wait_for "one stage, one micro-batch: no pipeline" "no pipeline to draw"

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
quit
done_testing
