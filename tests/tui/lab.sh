#!/bin/sh
# The Lab in a real terminal (tmux): the bars for DDP and ZeRO 1-3 of synthetic-7b, and how they
# change when the GPUs and the ZeRO stage change. Skipped without tmux.
. "$srcdir/tests/lib.sh"

if [ -z "$TMUX_BIN" ] || ! command -v "$TMUX_BIN" >/dev/null 2>&1; then
    echo "1..0 # SKIP tmux not found"
    exit 0
fi
SOCK="scalelab-lab-$$"
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

tm new-session -d -x 120 -y 40 "TERM=xterm-256color SCALELAB_DATA='$SCALELAB_DATA' '$SCALELAB'"
screen "q quit" || not_ok "the window opened" "$screen"
tm send-keys L
screen "Data parallelism and ZeRO memory"
check_contains "$screen" "Data parallelism and ZeRO memory" "L opens the Lab"
check_contains "$screen" "DDP      109.63 GiB over by 29.63 GiB" "7B with DDP on 8 GPUs: 108.63 GiB of states + 1 GiB of activations, over 80 GiB"
check_contains "$screen" "ZeRO-3    14.58 GiB fits" "ZeRO-3 over 8 GPUs fits"
check_contains "$screen" "Ψ = 7,289,966,592, N_d = 8" "the count and the data-parallel degree"

# GPUs: select the knob and double them; ZeRO-3 halves its sharded states.
tm send-keys j l
screen "N_d = 16"
check_contains "$screen" "Ψ = 7,289,966,592, N_d = 16" "Right doubles the GPUs"
check_contains "$screen" "ZeRO-3     7.79 GiB fits" "ZeRO-3 on 16 GPUs: 108.63/16 + 1 GiB"
check_contains "$screen" "DDP      109.63 GiB over by 29.63 GiB" "DDP does not shrink with more GPUs"

# The stage: z moves the highlight and the detail line.
tm send-keys z z
screen "ZeRO-2: W"
check_contains "$screen" "ZeRO-2: W 13.58  G 0.85  M 1.70  O 3.39  A 1.00 GiB" "z selects ZeRO-2: its parts"

# The memory: down to 16 GiB, ZeRO-3 still fits, ZeRO-1 overflows by its amount.
tm send-keys j j j j j j h h h h h h
screen "GPU mem    16 GiB"
check_contains "$screen" "GPU mem    16 GiB" "the memory knob goes down to 16 GiB"
check_contains "$screen" "ZeRO-1    33.25 GiB over by 17.25 GiB" "ZeRO-1 overflows 16 GiB, by how much"
check_contains "$screen" "ZeRO-3     7.79 GiB fits" "ZeRO-3 still fits"

tm send-keys q
sleep 0.3
done_testing
