#!/bin/sh
# Lesson 3's panel in a real terminal (tmux): a ring all-reduce of 8 GPUs stepped with n, the
# GPUs in boxes on a ring, the chunks' contribution counts after each step and the chunk each
# link carried, the bytes against 2(N-1)/N x size, the tree and the GPU count keys; the rows
# a small terminal gets instead; the ring in ASCII at a large size, with the plot beside it.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"
# 64 MiB collectives of 8 GPUs, a plot of many sizes: 290 s of CPU under TSan, where the races
# it could find are the collectives' and the panel's background job's
tsan_covered "test_coll, cli/collective.sh and test_ui's collective panel"

# ---- 130x45: the ring, the plot below it ----
start -x 130 -y 45 --
wait_for "q quit" "the window opened"
keys 3
wait_for "ring all-reduce, 8 GPUs, 64.00 MiB fp32, h100-80gb" "tab 3 shows the ring all-reduce"
wait_for "step 0 of 14" "2(N-1) = 14 steps"
wait_for "╭ GPU 0 ─╮" "each GPU is a box on the ring"
wait_for "╭ GPU 7 ─╮" "all 8 of them"
wait_for "│11111111│" "at first each chunk holds one contribution"
wait_for "(verified), timed as 64.00 MiB" "the real run behind the animation is verified, and the legend says it is timed as the size named"

# One step: GPU r received chunk r-2 from GPU r-1 and added it: that chunk holds 2.
keys n
wait_for "step 1 of 14: reduce-scatter" "n steps into the reduce-scatter"
wait_for "│21111111│" "GPU 2 now holds 2 contributions of chunk 0"
wait_for "│11111121│" "GPU 0 holds 2 contributions of chunk 6"
labels=0
for k in 0 1 2 3 4 5 6 7; do
    case "$screen" in *"c$k↗"* | *"c$k↘"* | *"c$k↙"* | *"c$k↖"* | *"c$k→"* | *"c$k←"* | *"c$k↑"* | *"c$k↓"*) labels=$((labels + 1)) ;; esac
done
check_eq "$labels" 8 "each of the 8 links shows the chunk it carried, with its arrow"
moved=$(capture -e | grep -o "$(printf '\033')\[[0-9;]*43m[^$(printf '\033')]*" | grep -c 'm\(c[0-7]\|2$\)')
check_eq "$moved" 16 "the 8 chunks on the links and the 8 where they landed are highlighted"
wait_for "8.00 MiB sent/GPU" "the ring's middle counts the bytes each GPU sent"
wait_for "sent per GPU so far 8.00 MiB" "each GPU sent one chunk: 64 MiB / 8"

# After N-1 = 7 steps, GPU r owns chunk r with all 8 contributions.
keys n n n n n n
wait_for "step 7 of 14" "six more steps"
wait_for "│#7654321│" "after the reduce-scatter GPU 0 owns chunk 0 complete; chunk 1, one hop short, holds 7"
wait_for "│54321#76│" "GPU 5 owns chunk 5 complete"

# The all-gather: after 14 steps every chunk everywhere is complete, 2(N-1)/N x 64 MiB sent.
keys n n n n n n n
wait_for "step 14 of 14: all-gather" "the last step is an all-gather"
wait_for "│########│" "every chunk complete on every GPU"
check_not_contains "$screen" "│1" "no GPU holds a chunk short of all 8"
wait_for "sent per GPU so far 112.00 MiB of 2(N-1)/N x size = 112.00 MiB" "each GPU sent 2(N-1)/N x size"
wait_for "crossover" "the α-β plot marks the crossover"

# o: the all-to-all, made as the all-reduce is (on the panel's job, taken by its polls): each
# GPU's receive buffer, a cell per block naming the GPU it came from ('.' before), as many
# steps as collective reports, the bytes against (N-1)/N x size, the pairwise/direct plot.
a2a() {
    "$SCALELAB" collective --op alltoall --gpus 8 --size 64MiB --algo "$1" --json |
        python3 -c "import json, sys; d = json.load(sys.stdin); print(d['$2'])"
}
keys o
wait_for "pairwise all-to-all, 8 GPUs, 64.00 MiB fp32" "o turns the panel to an all-to-all, pairwise first"
wait_for "step 0 of $(a2a pairwise steps): each GPU holds its own data" "pairwise: the steps collective reports"
wait_for "GPU 0  0 . . . . . . ." "at first each GPU holds its own block only"
wait_for "GPU 7  . . . . . . . 7" "all 8 rows"
wait_for "sent per GPU so far 0 B of (N-1)/N x size = 56.00 MiB" "the bytes against (N-1)/N x size"
wait_for "p pairwise  d direct  * both" "the plot: pairwise against direct, one curve on one node"
keys n
wait_for "step 1 of $(a2a pairwise steps): all-to-all" "n: one exchange"
wait_for "GPU 1  0 1 . . . . . ." "GPU 1 got GPU 0's block"
wait_for "GPU 0  0 . . . . . . 7" "GPU 0 got GPU 7's"
keys n n n n n n
wait_for "GPU 3  0 1 2 3 4 5 6 7" "after N-1 exchanges every GPU holds a block from each"
wait_for "sent per GPU so far 56.00 MiB of (N-1)/N x size = 56.00 MiB" "each GPU sent (N-1)/N x size"
keys t
wait_for "direct all-to-all, 8 GPUs" "t: direct, every block posted at once"
wait_for "step 0 of $(a2a direct steps): each GPU holds its own data" "direct: the steps collective reports"
keys o
wait_for "ring all-reduce, 8 GPUs, 64.00 MiB fp32" "o again: back to the ring all-reduce"
wait_for "│11111111│" "its ring of boxes again"

# space plays from the start (at 4x: + +); it ends on the last step by itself.
keys Left
wait_for "ring all-reduce, 7 GPUs" "Left takes one GPU away"
wait_for "step 0 of 12" "7 GPUs: 12 steps"
keys + + ' '
wait_for "step 12 of 12" "space plays the ring to its end"

keys t
wait_for "tree all-reduce, 7 GPUs" "t switches to the tree"
wait_for "binary tree of depth 2" "the tree's depth for 7 GPUs"
quit

# ---- 80x24: no room for the ring: a row per GPU ----
start --
wait_for "q quit" "the window opened at 80x24"
keys 3 n
wait_for "step 1 of 14" "n steps in the small window"
wait_for "GPU 2  21111111" "a row per GPU: GPU 2 holds 2 contributions of chunk 0"
wait_for "GPU 0  11111121" "GPU 0 holds 2 of chunk 6"
wait_for "r ring t tree" "and the ring/tree plot below the rows, in its compact form"
check_not_contains "$screen" "╭ GPU" "no boxes"
quit "80x24"

# ---- 160x50 in ASCII: the ring with the plot beside it; 16 GPUs; 17 in rows ----
start -x 160 -y 50 LC_ALL=C.UTF-8 -- --ascii
wait_for "q quit" "the window opened at 160x50, ASCII"
keys 3 Left Left Left Left n
wait_for "ring all-reduce, 4 GPUs" "4 GPUs"
wait_for "+ GPU 0 +" "the boxes drawn in ASCII"
wait_for "| 1121  |" "GPU 0 after a step: chunk 2 holds 2"
wait_for "c3>" "the link from GPU 0 carried chunk 3, an ASCII arrow"
wait_for "c2>" "the link into GPU 0 carried chunk 2"
bad=$(capture | LC_ALL=C tr -d '\n\040-\176' | wc -c)
check_eq "$bad" "0" "only ASCII on the screen"
keys Left Left
wait_for "ring all-reduce, 2 GPUs" "2 GPUs"
wait_screen "+ GPU 0 +" # the frame may still be on its way to the terminal
check_contains "$(printf '%s\n' "$screen" | grep -F '+ GPU 0 +')" "tt" "a small ring leaves room for the plot beside it"
# crossover N: the α-β model's ring/tree crossover for N GPUs of the preset (collective --sweep's,
# the one the panel marks), written as the panel writes a size
crossover() {
    "$SCALELAB" collective --gpus "$1" --sweep --json | python3 -c "
import json, sys
b = json.load(sys.stdin)['crossover_model_bytes']
print('%.2f MiB' % (b / 2**20) if b >= 2**20 else '%.2f KiB' % (b / 2**10))"
}
keys l l l l l l l l l l l l l l
wait_for "ring all-reduce, 16 GPUs" "16 GPUs"
wait_for "GPU 15 1 1 1" "16 GPUs: a ring of boxes leaves the plot no room here, so a row each"
wait_for "| crossover $(crossover 16)  ^ this size" "and the ring/tree plot keeps its place, the crossover marked"
keys l
wait_for "ring all-reduce, 17 GPUs" "17 GPUs"
wait_for "... GPUs 14 to 15 ..." "more than 16: rows, the middle ones summarised"
wait_for "... -> 16 -> 0" "and the ring line ends at the last GPU"
wait_for "on 3 nodes" "17 GPUs of h100-80gb span 3 nodes: the panel says so"
quit "ASCII"

# 80x24, lesson 3's last step: every GPU's row, the bandwidths, the verdict whole, and the
# ring/tree plot with its crossover (the ring's order, which the rows say, gives up its row).
start -x 80 -y 24 -- --lesson 3 --step 8
wait_for "step 8 of" "lesson 3 step 8 at 80x24"
wait_for "GPU 7  11111111" "8 GPUs, a row each"
wait_for "algbw 94.7, busbw 165.6 GB/s" "algbw and busbw, as nccl-tests reports them"
# the times are collective's, as the panel writes them (3 significant digits)
us() {
    "$SCALELAB" collective --gpus 8 --size 4MiB --algo "$1" --json |
        python3 -c "import json, sys; print('%.3g us' % (json.load(sys.stdin)['predicted_time_s'] * 1e6))"
}
wait_for "ring $(us ring), tree $(us tree): ring wins" "the α-β verdict, not cut"
wait_for "dbtree $(us dbtree), rhd $(us rhd)" "dbtree and rhd from the same model"
wait_for "r ring t tree │$(crossover 8) ^ size" "the plot's legend: the crossover and this size"
keys Right
wait_for "ring, 9 GPUs" "l: 9 GPUs"
keys l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l l
wait_for "GPUs stay 64, the most (2 to 64)" "at 64 GPUs l stays, and the status line says why"
# 64 GPUs: the run of 64 thread-GPUs made off the frame loop, then its rows (the middle ones
# named, the chunks past the width counted), verified
wait_for "ring, 64 GPUs on 8 nodes, 4.00 MiB" "64 GPUs span 8 nodes"
wait_for "step 0 of 126: own data" "the run of 64 GPUs: 2(N-1) = 126 steps"
wait_for "GPU 63 111111111111111111111111111111111+31" "GPU 63's row: the chunks that fit, the other 31 counted"
wait_for "... GPUs 6 to 62 ..." "the middle rows summarised"
check_contains "$screen" "verified" "the run of 64 GPUs is verified"
# sixty presses at once, 64 GPUs down to 4: the window shows the last one's run
keys h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h h
wait_for "ring, 4 GPUs, 4.00 MiB" "60 presses of h: 4 GPUs"
wait_for "step 0 of 6: own data" "the run for 4 GPUs, made once the keys were read"
wait_for "GPU 3  1 1 1 1" "a row for each of the 4 GPUs"
check_not_contains "$screen" "GPU 4 " "no row of a run left behind"
quit

# The tree, drawn as a tree, one panel step per moment its messages arrive: as many as
# collective reports. At P = 1 the reduce reaches the root after 5 of them: each level of two
# children takes two (its parent's one incoming link takes one chunk after the other), the
# root's single child one.
tree_steps=$("$SCALELAB" collective --gpus 8 --size 64KiB --algo tree --json |
    python3 -c "import json, sys; print(json.load(sys.stdin)['steps'])")
start -x 120 -y 40 -- --lesson 3 --step 6
wait_for "step 0 of $tree_steps" "the 8-GPU tree at 64 KiB: the steps collective reports"
wait_for "3/" "GPU 3 is a left child: '/' points up to its parent"
wait_for "\\5" "GPU 5 a right child"
keys n n n n n
wait_for "step 5 of $tree_steps: reduce" "five steps: the reduce has reached the root"
wait_for "GPU 7  #" "GPU 7, the root, holds the whole sum"
keys ']' t
wait_for "dbtree all-reduce, 8 GPUs" "step 7: t goes to the double binary tree"
wait_for "two binary trees, half the data each" "which says what it is"
keys t n n n
wait_for "rhd all-reduce, 8 GPUs" "then to recursive halving/doubling"
wait_for "step 3 of 6: reduce-scatter" "three halving steps"
wait_for "GPU 0  # 4 2 2 1 1 1 1" "GPU 0 holds block 0 of the whole sum, and halves of the others"
quit
done_testing
