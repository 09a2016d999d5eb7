#!/bin/sh
# Lesson 2's panel in a real terminal (tmux): one real step of the tiny GPT under each policy,
# its activation peak as measured and as the calculator predicts (equal), the recomputation's
# cost. Skipped without tmux.
. "$srcdir/tests/lib.sh"

if [ -z "$TMUX_BIN" ] || ! command -v "$TMUX_BIN" >/dev/null 2>&1; then
    echo "1..0 # SKIP tmux not found"
    exit 0
fi
SOCK="scalelab-ckpt-$$"
tm() { "$TMUX_BIN" -L "$SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$T_TMP"' EXIT

# screen: waits until the pane shows $1 (up to 10 s), then leaves the capture in $screen.
screen() {
    i=0
    while [ $i -lt 100 ]; do
        screen=$(tm capture-pane -p 2>/dev/null)
        case "$screen" in *"$1"*) return 0 ;; esac
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

tm new-session -d -x 130 -y 45 "TERM=xterm-256color XDG_STATE_HOME='$T_TMP' SCALELAB_DATA='$SCALELAB_DATA' '$SCALELAB'"
screen "q quit" || not_ok "the window opened" "$screen"
tm send-keys 2
screen "policy none"
check_contains "$screen" "activation peak 2.64 MiB measured, 2.64 MiB predicted" \
    "tab 2 measures tiny's activations in bf16 and they equal the calculator's"
check_contains "$screen" "+0.0% on forward + backward" "no recomputation without a policy"
tm send-keys p
screen "policy full"
check_contains "$screen" "activation peak 740.00 KiB measured, 740.00 KiB predicted" \
    "full recomputation: the layer inputs and one layer"
check_contains "$screen" "+32.8% on forward + backward" "about a third more FLOPs"
tm send-keys p p p
screen "policy selective"
check_contains "$screen" "+2.3% on forward + backward" "selective recomputes only QK^T"
tm send-keys q
done_testing
