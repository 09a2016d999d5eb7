#!/bin/sh
# Lesson 6's run panel in a real terminal (tmux): ring attention on thread-GPUs. The step on
# the ring opens it on 4 GPUs, the balanced split, tiny's sequence: the causal matrix (a row per
# query chunk, labelled by its GPU) with nothing lit before a step; space plays, and while a
# step is replayed the ring line says the layer, the pass and the blocks each GPU holds, and
# the matrix lights more cells as the step goes; after a step every ledger equals the
# calculator, each GPU sent the calculator's ring bytes and computed the scores of its blocks
# (what the causal mask leaves). b runs the naive split (its first GPU a triangle, its last three
# blocks and a triangle, as the blocks say), s / S the sequence, c / C the GPUs, each stopping
# at its bound and saying
# why. A small window without colour or UTF-8 still shows the matrix and the verdicts; q
# leaves the terminal as it was.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

lesson="$srcdir/lessons/06-long-sequences.lesson"
step=$(grep '^@step' "$lesson" | grep -n 'Keys and values go round' | cut -d: -f1)
naive=$(grep '^@step' "$lesson" | grep -n 'The causal mask' | cut -d: -f1)

# lit ROWS: the matrix's lit cells (a GPU's digit, cw columns each) in $screen, read under its
# head ("k 0 1 2 3 3 2 1 0" for the balanced split of 4 GPUs, "k 0 0 1 1 ..." the naive), ROWS
# rows; -1 without a matrix
lit() {
    printf '%s\n' "$screen" | python3 -c "
import re, sys
rows = int(sys.argv[1])
L = sys.stdin.read().split('\n')
for i, l in enumerate(L):
    m = re.search(r'k((?: +[0-3]){%d})' % rows, l)
    if m:
        col = m.start()
        digits = [col + 1 + d.start() for d in re.finditer(r'[0-3]', m.group(1))]
        cw = digits[1] - digits[0]
        cells = sum(ch.isdigit() for r in L[i + 1:i + 1 + rows] for ch in r[col + 2:col + 2 + cw * rows])
        print(cells // cw)
        break
else:
    print(-1)
" "$1"
}

start -x 120 -y 40 -- --lesson 6 --step "$step"
wait_for "Ring attention, running" "the step shows the ring attention panel"
wait_for "tiny, cp 4 balanced, sequence 64, batch 8, fp32" "the step's run: 4 GPUs, the balanced split, tiny's 64 tokens"
wait_for "ring 0>1>2>3>0: no block yet" "before a step, no block"
check_eq "$(lit 8)" 0 "no cell of the matrix lit before a step"
check_contains "$screen" "scores" "the scores of each GPU"
check_contains "$screen" "ring B/step 2,359,296 (calc)" \
    "the calculator's ring bytes: 4 layers x 6 x 3/4 x 8 x 64 x 64 x 4 B"

# space plays, at 1/8x (- three times: a layer's ring steps stay on the screen longer): the ring
# line follows GPU 0 through the passes, and the matrix lights up as a step is replayed; watched
# over as many steps as it takes, to the deadline (a busy machine draws fewer frames a step)
keys - - - ' '
wait_for "blocks held, the newest from:" "the forward's ring steps show as the step is replayed"
first= last= in=
grows() {
    layer=$(printf '%s\n' "$screen" | grep -o 'layer [0-9] forward: ' | head -n 1)
    [ -z "$layer" ] && return 1
    this="$(printf '%s\n' "$screen" | grep -o 'step [0-9]* ' | head -n 1)$layer"
    n=$(lit 8)
    if [ "$this" != "$in" ]; then in=$this first=$n last=$n; return 1; fi
    last=$n
    [ "$last" -gt "$first" ]
}
if tui_poll grows ""; then
    ok "more cells light within a layer's forward as its blocks come round ($first, then $last)"
else
    not_ok "more cells light within a layer's forward" "seen: '$first' then '$last'" "$screen"
fi
wait_for "blocks done, the newest from:" "the backward's ring steps too"
keys ' ' n
wait_for "ledger = calc, all 4 GPUs" "after a step every ledger equals the calculator"
wait_for "ring B/step 2,359,296 each = calc" "each GPU sent the calculator's ring bytes"
wait_for "run = blocks" "each GPU computed the scores of its blocks"
wait_for "every block computed" "the step done: every block"
check_contains "$screen" "busiest / mean: balanced 1.00, naive 1.74" "the balance of both splits: (7 n + 1)/(4 n + 1), n = 16"

keys b
wait_for "tiny, cp 4 naive, sequence 64" "b: the naive split"
keys n
wait_screen "run = blocks" || keys n
wait_for "run = blocks" "naive: the measured scores are the blocks'"
# GPU r of the naive split computes r blocks and its own triangle: (r n^2 + n (n + 1) / 2) x 2
# passes x 4 layers x 8 sequences x 4 heads, n = 16
scores=$(printf '%s\n' "$screen" | grep -oE '[0-3] +[0-9,]{5,} +[0-9,]{5,}' | awk '{print $3}' | tr -d ',' | tr '\n' ' ')
check_eq "$scores" "34816 100352 165888 231424 " "naive scores per GPU: r blocks and a triangle"
keys s
wait_for "tiny, cp 4 naive, sequence 128" "s: twice the sequence"
keys S S S
wait_for "tiny, cp 4 naive, sequence 32" "S S S: down to 32 tokens"
wait_for "sequence stays 32: the panel runs 32 to 512 tokens" "and S stops there, saying why"
keys C
wait_for "tiny, cp 2 naive, sequence 32" "C: two GPUs"
keys C
wait_for "cp stays 2: the panel runs 2 or 4 GPUs" "C stops at 2, saying why"
check_contains "$screen" "ring 0>1>0" "a ring of two"

resize 80 24
wait_for "tiny, cp 2 naive, sequence 32, batch 8, fp32" "80x24: the panel still draws"
check_eq "$(lit 4)" 0 "80x24: the ring of two, its 4 x 4 matrix, nothing lit before a step"
quit

start -x 80 -y 24 NO_COLOR=1 -- --ascii --lesson 6 --step "$naive"
wait_for "Ring attention, running" "80x24 without colour: the panel"
wait_for "tiny, cp 4 naive, sequence 64" "the naive step opens the naive split"
keys n
wait_screen "run = blocks" || keys n
wait_for "ledger = calc, all 4 GPUs" "80x24: every ledger equals the calculator"
wait_for "run = blocks" "80x24: the scores are the blocks'"
check_eq "$(lit 8)" 32 "80x24: after a step every cell under the diagonal lit and half of each on it: 8 x 7 / 2 + 8 / 2"
hints=$(printf '%s\n' "$screen" | tail -n 2)
for h in "c cp" "b split" "s seq" "space"; do
    check_contains "$hints" "$h" "80x24: the hint $h is on the hint lines"
done
quit
done_testing
