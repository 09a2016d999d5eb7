#!/bin/sh
# Lesson 7's run panel in a real terminal (tmux): experts on thread-GPUs. The step on expert
# parallelism opens it on 4 GPUs, tiny-moe's 8 experts top-2, capacity 1.25, aux 0.01: before
# a step the calculator's all-to-all bytes; space plays, and while a step is replayed the
# all-to-all line names the layer and the pass (dispatch, combine, forward then backward);
# after a step every ledger equals the calculator, each GPU sent the calculator's all-to-all
# bytes, and the routing counts every GPU's choices. x turns the aux loss coefficient, f / F
# the capacity factor, p / P the GPUs, k top-k, e the experts, each stopping at its bound and
# saying why. A small window without colour or UTF-8 still shows the experts' rows and the
# verdicts; q leaves the terminal as it was.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

lesson="$srcdir/lessons/07-experts.lesson"
step=$(grep '^@step' "$lesson" | grep -n 'Experts on different GPUs' | cut -d: -f1)

start -x 120 -y 40 -- --lesson 7 --step "$step"
wait_for "Experts, running" "the step shows the experts panel"
wait_for "tiny-moe, 8 experts top-2, ep 4, capacity 1.25, aux 0.01, b 8" "the step's run"
wait_for "all-to-all: dispatch and combine, 4 a layer, 3 sends each" "before a step, the all-to-alls"
# 4 layers x 4 all-to-alls x 3/4 x 8 experts x 40 rows (ceil(1.25 x 2 x 128 / 8)) x 64 x 4 B
check_contains "$screen" "a2a B/step 983,040 (calc)" "the calculator's all-to-all bytes"

# space plays at 1/8x: the all-to-all line follows GPU 0 through a step's all-to-alls
keys - - - ' '
wait_for "forward dispatch, " "the forward's dispatch shows as the step is replayed"
# a GPU's row in the middle of an all-to-all: the GPUs it has sent to in it, '-' those to come
midway() {
    printf '%s\n' "$screen" | grep -qE '(^|[^0-9])[0-3] ([.0-3-][ *]){4}' &&
        printf '%s\n' "$screen" | grep -E '(^|[^0-9])[0-3] ([.0-3-][ *]){4}' | grep -q -- '-'
}
if tui_poll midway ""; then
    ok "a GPU's row shows the sends of an all-to-all still going on"
else
    not_ok "a GPU's row shows the sends of an all-to-all still going on" "$screen"
fi
wait_for "backward combine, " "and the backward's gradients of the combine"
keys ' ' n
wait_for "ledger = calc, all 4 GPUs" "after a step every ledger equals the calculator"
wait_for "a2a B/step 983,040 each = calc" "each GPU sent the calculator's all-to-all bytes"
# 4 GPUs x 2 choices x 128 tokens x 4 layers
wait_for "routed 4096, dropped" "the routing counts every GPU's choices"
check_contains "$screen" "busiest/mean by step:" "the load's balance, step by step"

keys x
wait_for "capacity 1.25, aux 0.1," "x: the aux loss coefficient 0.1"
keys x
wait_for "capacity 1.25, aux 0," "x again: no aux loss"
keys f
wait_for "capacity 1.50, aux 0," "f: a larger capacity"
keys F F F
wait_for "capacity 1.00, aux 0," "F F F: down to 1"
wait_for "capacity stays 1.00: the panel runs 1.00 to 2.00" "and F stops there, saying why"
keys P
wait_for "8 experts top-2, ep 2," "P: two GPUs"
keys P
wait_for "ep stays 2: the panel runs 2 or 4 GPUs" "P stops at 2, saying why"
keys k e
wait_for "4 experts top-1, ep 2," "k: top-1; e: 4 experts"
keys n
wait_for "ledger = calc, all 2 GPUs" "two GPUs, 4 experts: every ledger equals the calculator"
wait_for "each = calc" "and the all-to-all bytes"

resize 80 24
wait_for "E 4 top-1 ep 2 cap 1.00 aux 0 b 8" "80x24: the panel still draws"
quit

start -x 80 -y 24 NO_COLOR=1 -- --ascii --lesson 7 --step "$step"
wait_for "Experts, running" "80x24 without colour: the panel"
keys n
wait_screen "ledger = calc" || keys n
wait_for "ledger = calc, all 4 GPUs" "80x24: every ledger equals the calculator"
wait_for "each = calc" "80x24: the all-to-all bytes"
rows=$(printf '%s\n' "$screen" | grep -cE '[0-7]  [0-3] [#x.]{6,}')
check_eq "$rows" 8 "80x24: a row per expert"
hints=$(printf '%s\n' "$screen" | tail -n 2)
for h in "p ep" "x aux" "f capacity" "space"; do
    check_contains "$hints" "$h" "80x24: the hint $h is on the hint lines"
done
quit
done_testing
