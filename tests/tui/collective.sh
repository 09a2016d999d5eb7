#!/bin/sh
# Lesson 3's panel in a real terminal (tmux): a ring all-reduce of 8 GPUs stepped with n, the
# chunks' contribution counts after each step, the bytes against 2(N-1)/N x size, the tree and
# the GPU count keys.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

start -x 130 -y 45 --
wait_for "q quit" "the window opened"
keys 3
wait_for "ring all-reduce, 8 GPUs, 64.00 MiB fp32, h100-80gb" "tab 3 shows the ring all-reduce"
wait_for "step 0 of 14" "2(N-1) = 14 steps"
wait_for "GPU 0  1 1 1 1 1 1 1 1" "at first each chunk holds one contribution"
wait_for "the run is verified" "the real run behind the animation is verified"

# One step: GPU r received chunk r-2 from GPU r-1 and added it: that chunk holds 2.
keys n
wait_screen "step 1 of 14"
wait_for "step 1 of 14: reduce-scatter" "n steps into the reduce-scatter"
wait_for "0 -c7-> 1 -c0-> 2 -c1-> 3" "the ring shows the chunk each link carried: GPU r sent chunk r-1"
wait_for "GPU 2  2 1 1 1 1 1 1 1" "GPU 2 now holds 2 contributions of chunk 0"
wait_for "GPU 0  1 1 1 1 1 1 2 1" "GPU 0 holds 2 contributions of chunk 6"
wait_for "sent per GPU so far 8.00 MiB" "each GPU sent one chunk: 64 MiB / 8"

# After N-1 = 7 steps, GPU r owns chunk r with all 8 contributions.
keys n n n n n n
wait_screen "step 7 of 14"
wait_for "GPU 0  # 7 6 5 4 3 2 1" "after the reduce-scatter GPU 0 owns chunk 0 complete; chunk 1, one hop short, holds 7"
wait_for "GPU 5  5 4 3 2 1 # 7 6" "GPU 5 owns chunk 5 complete"

# The all-gather: after 14 steps every chunk everywhere is complete, 2(N-1)/N x 64 MiB sent.
keys n n n n n n n
wait_screen "step 14 of 14"
wait_for "step 14 of 14: all-gather" "the last step is an all-gather"
wait_for "GPU 7  # # # # # # # #" "every chunk complete on every GPU"
wait_for "sent per GPU so far 112.00 MiB of 2(N-1)/N x size = 112.00 MiB" "each GPU sent 2(N-1)/N x size"
wait_for "crossover" "the α-β plot marks the crossover"

# space plays from the start (at 4x: + +); it ends on the last step by itself.
keys Left
wait_screen "7 GPUs"
wait_for "ring all-reduce, 7 GPUs" "Left takes one GPU away"
wait_for "step 0 of 12" "7 GPUs: 12 steps"
keys + + ' '
wait_for "step 12 of 12" "space plays the ring to its end"

keys t
wait_screen "tree all-reduce"
wait_for "tree all-reduce, 7 GPUs" "t switches to the tree"
wait_for "binary tree of depth 2" "the tree's depth for 7 GPUs"

quit
done_testing
