#!/bin/sh
# Lesson 2's panel in a real terminal (tmux): one real step of the tiny GPT under each policy,
# its activation peak as measured and as the calculator predicts (equal), the recomputation's
# cost.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

start -x 130 -y 45 --
wait_for "q quit" "the window opened"
keys 2
wait_screen "policy none"
wait_for "activation peak 2.64 MiB measured, 2.64 MiB predicted" \
    "tab 2 measures tiny's activations in bf16 and they equal the calculator's"
wait_for "+0.0% on forward + backward" "no recomputation without a policy"
keys p
wait_screen "policy full"
wait_for "activation peak 740.00 KiB measured, 740.00 KiB predicted" \
    "full recomputation: the layer inputs and one layer"
wait_for "+32.8% on forward + backward" "about a third more FLOPs"
wait_for "- none" "the chart keeps a ghost line at the peak without checkpointing"
keys p p p
wait_screen "policy selective"
wait_for "+2.3% on forward + backward" "selective recomputes only QK^T"
quit

# 80x24: the sawtooth in its compact form, the calculator's line whole
start -x 80 -y 24 -- --lesson 2 --step 4
wait_for "policy none" "lesson 2 step 4 opens without checkpointing, as its text says"
wait_for "activations over the step (time = FLOPs)" "80x24 draws the memory over the step"
wait_for "forward · backward" "with its time axis"
wait_for "7B 1x2048 calc: 17.02 GiB; none 17.02 GiB" "and synthetic-7b's line, not cut at the frame"
keys s
wait_for "7B 1x4096 calc: 50.03 GiB; none 50.03 GiB" "s: synthetic-7b at 4096 tokens, the question's sequence"
quit
done_testing
