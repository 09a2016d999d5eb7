#!/bin/sh
# The run panels' timeline in a real terminal (tmux), at 80x24 without colour, in ASCII: w
# shows the Lab's run's last step as each GPU's compute and communication rows over an axis of
# simulated time, the exposed communication marked X. DDP on 4 GPUs: synthetic-7b does not fit,
# so the run is timed as itself (microseconds) and says why; ZeRO-3 is timed as synthetic-7b
# (milliseconds), some of its gathers hidden behind compute (=); 8 GPUs show as many as fit.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

# axis UNIT: the timeline's axis on screen ("0 ... 9.77 us ... 19.5 us"), in UNIT
axis() { printf '%s\n' "$screen" | grep -Eq "\| +0 +[0-9.]+ $1 +[0-9.]+ $1 +\|"; }
axis_us() { axis us; }
axis_ms() { axis ms; }
# row LABEL: the cells after a timeline row's label ("GPU0  comp", "      comm"), GPU 0's
row() { printf '%s\n' "$screen" | grep -o "| $1[#=X.]*" | head -n 1 | sed "s/^| $1//"; }

start -x 80 -y 24 NO_COLOR=1 -- --ascii
wait_for "q quit" "the window opened"
keys L
wait_for "Data parallelism and ZeRO memory" "L opens the Lab"
keys v
wait_for "Data parallelism, running" "v swaps in the run panel"
wait_for "timed as itself, not as synthetic-7b (w)" \
    "DDP on 4 GPUs: synthetic-7b does not fit, the run is timed as itself and says so"
keys w
wait_for "synthetic-7b does not fit this layout" "w: why not, in the engine's words"
wait_for "the timeline: after a step" "before a step, no timeline"
keys n
wait_for "comm exposed" "after a step, the timeline and its legend"
if tui_poll axis_us ""; then ok "its axis in microseconds: the tiny model timed as itself"
else not_ok "its axis in microseconds" "$screen"; fi
check_contains "$(row '      comm')" "X" "the latency-bound step's communication is exposed"
check_contains "$(row 'GPU0  comp')" "#" "GPU 0 computes"

keys z z z
wait_for "tiny, 4 GPUs, ZeRO-3, bf16" "z z z: ZeRO-3"
wait_for "timed as synthetic-7b on 4 h100-80gb" "ZeRO-3 on 4 GPUs is timed as synthetic-7b"
keys n
if tui_poll axis_ms ""; then ok "the axis in milliseconds: synthetic-7b's step"
else not_ok "the axis in milliseconds" "$screen"; fi
wait_for "comm exposed" "the legend"
comm=$(row '      comm')
check_contains "$comm" "=" "some of ZeRO-3's communication hides behind compute"
check_contains "$comm" "X" "and some is exposed"
check_contains "$screen" "7b calc: DDP over" "synthetic-7b's step at each stage: DDP does not fit"
check_contains "$screen" " Z3 " "and ZeRO-3 is timed"

keys g
wait_for "tiny, 8 GPUs, ZeRO-3" "g: 8 GPUs"
keys n
wait_for "(5 of 8 GPUs: a larger window shows all)" "80x24 shows the GPUs that fit and says so"
resize 120 40
wait_for "GPU7  comp" "120x40 shows all 8"
quit
done_testing
