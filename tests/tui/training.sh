#!/bin/sh
# Lesson 1's training panel in a real terminal (tmux) at 80x24: the header wraps instead of
# cutting a number, the four curves draw in their compact form beside the events and the
# underflow summary, i starts the 10^9-scale experiment, and a NaN applied without a scaler
# pins its cause and pauses the run with one message, NaN written NaN.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

start -x 80 -y 24 -- --lesson 1 --step 11
wait_for "step 11 of" "lesson 1 step 11 at 80x24"
keys i
wait_for "the scale starts at 1e9" "i starts fp16 with the scale at 10^9"
keys Space
wait_for "loss scale backed off" "the scale backs off"
keys Space
wait_for "scale 2^" "80x24 draws the curves: the loss scale's staircase"
check_contains "$screen" "loss  +" "the loss above its floor"
check_contains "$screen" "norm " "the gradient norm"
check_contains "$screen" "coef  1.00" "the clip coefficient"
# the scale shown is 10^9 halved k times as %g prints it: a number cut at the edge is not
scale=$(printf '%s\n' "$screen" | grep -oE 'scale [0-9][0-9e+.]*( |$)' | head -n 1 | tr -d ' ' | sed 's/^scale/scale /')
check_eq "$(python3 -c "import sys; v = sys.argv[1][6:]; print(any('%g' % (1e9 / 2**k) == v for k in range(1, 64)))" "$scale")" \
    True "the scale is shown whole, not cut ($scale)"
check_contains "$screen" "inf/NaN in" "the events stay on the panel"
check_contains "$screen" "underflowed to 0" "and the underflow summary"
quit

# bf16 without a scaler: a NaN goes into the weights; the panel names its cause once and
# pauses instead of logging NaN steps forever.
start -x 120 -y 40 -- --lesson 1 --step 13
wait_for "step 13 of" "lesson 1 step 13"
keys s
wait_for "scale none" "s: no scaler"
keys Space
# a step number of 3 or more: at 10 steps a second "step 3" itself is on screen for 0.1 s only
past_step2() { printf '%s\n' "$screen" | grep -qE "step ([3-9]|[1-9][0-9]+)  loss"; }
if tui_poll past_step2 ""; then ok "the run trains"; else not_ok "the run trains" "$screen"; fi
keys x
wait_for "applied the NaN: the weights are NaN; r restarts" "the applied NaN pins its cause and pauses"
at=$(printf '%s\n' "$screen" | grep -o 'step [0-9]*  loss' | head -n 1)
sleep 1
screen=$(capture)
check_contains "$screen" "$at" "the run stays paused ($at)"
check_not_contains "$(printf '%s\n' "$screen" | tail -n 1)" "playing" "the window stops playing"
n=$(printf '%s\n' "$screen" | grep -c "applied the NaN: the weights are NaN")
check_eq "$n" 2 "the cause is named once (in the panel and the log), not at every step"
check_contains "$screen" "norm NaN" "the norm reads NaN, not -nan"
check_not_contains "$screen" "nan" "no C-style nan anywhere"
keys Space
sleep 0.5
screen=$(capture)
check_not_contains "$screen" "nothing plays here" "space says one thing: the panel's message, not the window's too"
n=$(printf '%s\n' "$screen" | grep -c "applied the NaN: the weights are NaN")
check_eq "$n" 2 "space repeats the same message, not another"
quit

# train on a terminal: its progress line on stderr is cleared before each step line, so no
# step line runs on after it (stdout and stderr are the same terminal here), and it is gone
# at the end. 300 steps take seconds: the line (every 0.2 s) shows many times.
start -x 100 -y 40 -- train --steps 300 --batch 4
# the whole run is waited for: 20 s of CPU under ASan at -O0, 33 s on two cores at load 12,
# beyond the screen's usual deadline (a state, the status written, ends the wait)
tui_wait_was=$TUI_WAIT
TUI_WAIT=$((TUI_WAIT * 15))
wait_file status
TUI_WAIT=$tui_wait_was
screen=$(capture)
check_contains "$screen" "step    300  loss" "train ran its 300 steps"
check_eq "$(printf '%s\n' "$screen" | grep -c 'left')" 0 "no progress line left on the screen, none run into a step line"
check_eq "$(printf '%s\n' "$screen" | grep -cE '.+step +[0-9]+  loss')" 0 \
    "every step line starts its own line"
done_testing
