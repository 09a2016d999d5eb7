#!/bin/sh
# The Lab's run mode in a real terminal (tmux): v swaps the Lab's calculator for a real
# data-parallel run of the tiny GPT on thread-GPUs. After a few steps every GPU has its row,
# GPU 0's ledger peaks on screen equal the calculator's figures beside them, z restarts the
# run at the next ZeRO stage and the bars shrink; a small window says it shows fewer GPUs.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

# first number after WORD at the start of a panel row ("ledger   404,608 ..."), from $screen
figure() { printf '%s\n' "$screen" | grep -o "│ $1  *[0-9][0-9,.K]*" | head -n 1 | awk '{print $3}'; }
# the filled cells of a bar row ("peak  ████░░░"), from $screen
filled() { printf '%s\n' "$screen" | grep -o "│ $1  *[█░]*" | head -n 1 | grep -o "█" | wc -l; }

start -x 120 -y 40 --
wait_for "q quit" "the window opened"
keys L
wait_for "Data parallelism and ZeRO memory" "L opens the Lab"
keys v
wait_for "Data parallelism, running" "v swaps in the run panel"
wait_for "tiny, 4 GPUs, DDP, bf16, batch 8" "the layout of the step that names it: tiny, 4 GPUs, DDP, bf16"
wait_for "v memory" "the hint line names the other panel"
wait_for "z ZeRO" "the hint line shows the run's keys"
check_contains "$screen" "GPU3" "a row for each of the 4 GPUs"
check_contains "$screen" "calc: each GPU sends 606,912 B a step" "before a step, the calculator's traffic: 2(N-1)/N x 202,304 x 2 B"

keys ' '
wait_for "ledger = calc, all 4 GPUs" "after a step, every GPU's ledger equals the calculator"
wait_for "sent 606,912 B, calc 606,912 B" "GPU 0 sent what the calculator says"
# the run's step line past step 2 (at 10 steps a second "step 3" itself is on screen briefly,
# and a busy machine may not capture it)
step_past_2() {
    n=$(printf '%s\n' "$screen" | grep -oE 'step [0-9]+  (simulated|loss)' | head -n 1 | grep -oE '[0-9]+')
    [ "${n:-0}" -ge 3 ]
}
if tui_poll step_past_2 ""; then ok "the steps go on"; else not_ok "the steps go on" "$screen"; fi
check_eq "$(figure ledger)" "404,608" "GPU 0's weights in its ledger: 2 bytes x 202,304 parameters"
check_eq "$(figure calc)" "$(figure ledger)" "the calculator's weights beside them are the same"
ddp=$(filled peak)

# z three times: ZeRO-1, 2 and 3, the weights sharded four ways at the last. A restart
# clears the verdict until the new run's first step is shown: each one below is the new run's.
keys z
wait_for "tiny, 4 GPUs, ZeRO-1, bf16" "z restarts the run at ZeRO-1"
wait_for "ledger = calc, all 4 GPUs" "ZeRO-1: every ledger equals the calculator"
wait_for "sent 606,912 B, calc 606,912 B" "ZeRO-1 sends what DDP does: a reduce-scatter and an all-gather"
keys z
wait_for "tiny, 4 GPUs, ZeRO-2, bf16" "z: ZeRO-2"
wait_for "ledger = calc, all 4 GPUs" "ZeRO-2: every ledger equals the calculator"
keys z
wait_for "tiny, 4 GPUs, ZeRO-3, bf16" "z: ZeRO-3"
wait_for "ledger = calc, all 4 GPUs" "ZeRO-3: every ledger equals the calculator too"
# the ledger row is redrawn with the new run's figures a frame after the verdict
ledger_is() { [ "$(figure ledger)" = "$1" ]; }
tui_poll ledger_is "101,152"
check_eq "$(figure ledger)" "101,152" "GPU 0 holds a quarter of the weights"
check_eq "$(figure calc)" "101,152" "as the calculator says"
z3=$(filled peak)
if [ "$z3" -gt 0 ] && [ "$z3" -lt "$ddp" ]; then
    ok "the peak bar shrinks from DDP ($ddp cells) to ZeRO-3 ($z3)"
else
    not_ok "the peak bar shrinks from DDP to ZeRO-3" "DDP $ddp cells, ZeRO-3 $z3" "$screen"
fi

# m: the small model, set up by its GPUs while the window goes on (the state in between is
# test_ui's: here it may come and go between two looks); then its step, measured = predicted
keys m
wait_for "small, 4 GPUs, ZeRO-3, bf16" "m: the small model, at once"
wait_for "calc: each GPU sends" "the run restarted: no step measured yet"
keys n
wait_for "ledger = calc, all 4 GPUs" "small's step: every ledger equals the calculator"
# sixty-one presses at once: the window acts on them all and sets up the last model chosen
keys m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m m
wait_for "tiny, 4 GPUs, ZeRO-3, bf16" "61 presses of m: tiny, the model the last one chose"
wait_for "calc: each GPU sends" "its run restarted"
keys n
wait_for "ledger = calc, all 4 GPUs" "and its step measured = predicted"

# s: synthetic-7b on the same layout, from the calculator
keys s
wait_for "synthetic-7b on the same layout" "s shows the 7B's figures for the same layout"
wait_for "4 GPUs, ZeRO-3, bf16; 1 sequence each" "the same GPUs, stage and precision"
wait_for "GiB: W 3.39 G 3.39 M 6.79 O 13.58" "the 7B's states at ZeRO-3 on 4 GPUs: 108.63 GiB / 4"
keys s

# a small window: 16 GPUs do not all fit, and the panel says so
resize 80 24
keys g g
wait_for "(a larger window shows all 16 GPUs)" "80x24 with 16 GPUs: fewer rows, said"
wait_for "16 GPUs, ZeRO-3" "g g: 16 GPUs"
keys g
wait_for "GPUs stay 16, the most: the run takes 2, 4, 8 or 16" "g at 16 stays (no wrap to 2) and says why"
keys f f f
wait_for "2 GPUs, ZeRO-3" "f f f: half, down to 2"
keys f
wait_for "GPUs stay 2, the fewest" "f at 2 stays and says why"
# the window's keys reach the lesson whatever the panel: G N Enter, not the panel's GPUs
keys G 2 Enter
wait_for "step 2 of" "G 2 Enter goes to step 2 from the Lab's run mode"
keys y
wait_for "key 'y' does nothing in" "a key nobody uses says so"
quit

# no colour, ASCII: the bars are letters
start -x 80 -y 24 NO_COLOR=1 -- --ascii
wait_for "q quit" "the window opened without colour"
keys L v
wait_for "Data parallelism, running" "the run panel"
keys n
# n waits for the run's step, however slow the build or the machine
wait_for "ledger = calc, all 4 GPUs" "n: one step, measured = predicted"
peak=$(printf '%s\n' "$screen" | grep -o "peak  [WGMOAC.]*" | head -n 1)
if printf '%s\n' "$peak" | grep -Eq '^peak  W+G+M+O+A+[.]*$'; then
    ok "the peak bar in letters, weights to activations: $peak"
else
    not_ok "the peak bar in letters, weights to activations" "got: $peak" "$screen"
fi
quit
done_testing
