#!/bin/sh
# Lesson 4's panel in a real terminal (tmux): per-stage memory and the pipeline chart; GPipe
# and 1F1B have the same bubble and different peak micro-batches, the interleaved schedule half
# of it. Lesson 5 shows the ZeRO lab.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

start -x 120 -y 40 --
wait_for "q quit" "the window opened"
keys 4
wait_for "Parallel layouts" "lesson 4 shows the layout panel"
# Set the layout by keys, whatever the lesson's step chose: dp 1, tp 2, pp 4, 8 micro-batches
# (Left goes down to the least value, Right doubles), then 1F1B.
keys j h h h h h h h h h h j h h h h h h h l j h h h h h h h l l j h h h h h h h h h l l l
wait_screen "micro m   8"
case "$screen" in *"gpipe bubble"*) keys s; wait_screen "1f1b bubble" ;; esac
wait_for "8 GPUs: dp 1 x tp 2 x pp 4" "the layout and its GPU count"
wait_for "19.05 GiB 4 in fl." "1F1B: stage 0 holds p = 4 micro-batches (flash attention, the calculator's)"
wait_for "1f1b bubble 3/8: 37.5% ideal, 27.3% wall" "the bubble under both definitions"
wait_for " 3 ...0aa1bb2cc3dd4ee5ff6gg7hh......" "the last stage's row of the chart"

keys s
wait_for "interleaved bubble 3/(2x8): 18.8% ideal" "s: the interleaved schedule, 2 chunks a stage: half the bubble"
wait_for "0-7 A-H forward, a-h i-p backward" "its chart's letters, both chunks"
keys s
wait_for "zb-h1 bubble 3/(3x8): 12.5% ideal" "s: ZB-H1, B and W apart: a third of 1F1B's bubble"
wait_for "0-7 forward, a-h B, W weights" "its chart's letters: W apart"
keys s
wait_screen "gpipe bubble"
wait_for "gpipe bubble 3/8: 37.5% ideal, 27.3% wall" "GPipe: the same bubble"
wait_for "8 in fl." "GPipe: stage 0 holds all m = 8"

keys 5
wait_screen "ZeRO stages"
wait_for "ZeRO-3" "lesson 5 shows the ZeRO stages"

quit
done_testing
