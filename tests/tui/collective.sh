#!/bin/sh
# Lesson 3's panel in a real terminal (tmux): a ring all-reduce of 8 GPUs stepped with n, the
# chunks' contribution counts after each step, the bytes against 2(N-1)/N x size, the tree and
# the GPU count keys. Skipped without tmux.
. "$srcdir/tests/lib.sh"

if [ -z "$TMUX_BIN" ] || ! command -v "$TMUX_BIN" >/dev/null 2>&1; then
    echo "1..0 # SKIP tmux not found"
    exit 0
fi
SOCK="scalelab-coll-$$"
tm() { "$TMUX_BIN" -L "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$T_TMP"' EXIT

# screen: waits until the pane shows $1 (up to 5 s), then leaves the capture in $screen.
screen() {
    i=0
    while [ $i -lt 50 ]; do
        screen=$(tm capture-pane -p 2>/dev/null)
        case "$screen" in *"$1"*) return 0 ;; esac
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

tm new-session -d -x 130 -y 45 "TERM=xterm-256color SCALELAB_DATA='$SCALELAB_DATA' '$SCALELAB'"
screen "q quit" || not_ok "the window opened" "$screen"
tm send-keys 3
screen "ring all-reduce, 8 GPUs, 64.00 MiB fp32, h100-80gb"
check_contains "$screen" "ring all-reduce, 8 GPUs, 64.00 MiB fp32, h100-80gb" "tab 3 shows the ring all-reduce"
check_contains "$screen" "step 0 of 14" "2(N-1) = 14 steps"
check_contains "$screen" "GPU 0  1 1 1 1 1 1 1 1" "at first each chunk holds one contribution"
check_contains "$screen" "the run is verified" "the real run behind the animation is verified"

# One step: GPU r received chunk r-2 from GPU r-1 and added it: that chunk holds 2.
tm send-keys n
screen "step 1 of 14"
check_contains "$screen" "step 1 of 14: reduce-scatter" "n steps into the reduce-scatter"
check_contains "$screen" "GPU 2  2 1 1 1 1 1 1 1" "GPU 2 now holds 2 contributions of chunk 0"
check_contains "$screen" "GPU 0  1 1 1 1 1 1 2 1" "GPU 0 holds 2 contributions of chunk 6"
check_contains "$screen" "sent per GPU so far 8.00 MiB" "each GPU sent one chunk: 64 MiB / 8"

# After N-1 = 7 steps, GPU r owns chunk r with all 8 contributions.
tm send-keys n n n n n n
screen "step 7 of 14"
check_contains "$screen" "GPU 0  # 7 6 5 4 3 2 1" "after the reduce-scatter GPU 0 owns chunk 0 complete; chunk 1, one hop short, holds 7"
check_contains "$screen" "GPU 5  5 4 3 2 1 # 7 6" "GPU 5 owns chunk 5 complete"

# The all-gather: after 14 steps every chunk everywhere is complete, 2(N-1)/N x 64 MiB sent.
tm send-keys n n n n n n n
screen "step 14 of 14"
check_contains "$screen" "step 14 of 14: all-gather" "the last step is an all-gather"
check_contains "$screen" "GPU 7  # # # # # # # #" "every chunk complete on every GPU"
check_contains "$screen" "sent per GPU so far 112.00 MiB of 2(N-1)/N x size = 112.00 MiB" "each GPU sent 2(N-1)/N x size"
check_contains "$screen" "crossover" "the α-β plot marks the crossover"

# space plays from the start (at 4x: + +); it ends on the last step by itself.
tm send-keys Left
screen "7 GPUs"
check_contains "$screen" "ring all-reduce, 7 GPUs" "Left takes one GPU away"
check_contains "$screen" "step 0 of 12" "7 GPUs: 12 steps"
tm send-keys + + ' '
screen "step 12 of 12" && ok "space plays the ring to its end" || not_ok "space plays the ring to its end" "$screen"

tm send-keys t
screen "tree all-reduce"
check_contains "$screen" "tree all-reduce, 7 GPUs" "t switches to the tree"
check_contains "$screen" "binary tree of depth 2" "the tree's depth for 7 GPUs"

tm send-keys q
sleep 0.3
done_testing
