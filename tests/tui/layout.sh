#!/bin/sh
# Lesson 4's panel in a real terminal (tmux): per-stage memory and the pipeline chart; GPipe
# and 1F1B have the same bubble and different peak micro-batches. Lesson 5 shows the ZeRO lab.
. "$srcdir/tests/lib.sh"

if [ -z "$TMUX_BIN" ] || ! command -v "$TMUX_BIN" >/dev/null 2>&1; then
    echo "1..0 # SKIP tmux not found"
    exit 0
fi
SOCK="scalelab-layout-$$"
tm() { "$TMUX_BIN" -L "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$T_TMP"' EXIT

screen() { # waits until the pane shows $1 (up to 5 s); the capture is in $screen
    i=0
    while [ $i -lt 50 ]; do
        screen=$(tm capture-pane -p 2>/dev/null)
        case "$screen" in *"$1"*) return 0 ;; esac
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

tm new-session -d -x 120 -y 40 "TERM=xterm-256color SCALELAB_DATA='$SCALELAB_DATA' '$SCALELAB'"
screen "q quit" || not_ok "the window opened" "$screen"
tm send-keys 4
screen "Parallel layouts"
check_contains "$screen" "Parallel layouts" "lesson 4 shows the layout panel"
# Set the layout by keys, whatever the lesson's step chose: dp 1, tp 2, pp 4, 8 micro-batches
# (Left goes down to the least value, Right doubles), then 1F1B.
tm send-keys j h h h h h h h h h h j h h h h h h h l j h h h h h h h l l j h h h h h h h h h l l l
screen "micro-b.  8"
case "$screen" in *"gpipe bubble"*) tm send-keys g; screen "1f1b bubble" ;; esac
check_contains "$screen" "8 GPUs: dp 1 x tp 2 x pp 4" "the layout and its GPU count"
check_contains "$screen" "23.05 GiB 4 in fl." "1F1B: stage 0 holds p = 4 micro-batches"
check_contains "$screen" "1f1b bubble 3/8: 37.5% ideal, 27.3% wall" "the bubble under both definitions"
check_contains "$screen" " 3 ...0aa1bb2cc3dd4ee5ff6gg7hh......" "the last stage's row of the chart"

tm send-keys g
screen "gpipe bubble"
check_contains "$screen" "gpipe bubble 3/8: 37.5% ideal, 27.3% wall" "GPipe: the same bubble"
check_contains "$screen" "8 in fl." "GPipe: stage 0 holds all m = 8"

tm send-keys 5
screen "ZeRO stages"
check_contains "$screen" "ZeRO-3" "lesson 5 shows the ZeRO stages"

tm send-keys q
sleep 0.3
done_testing
