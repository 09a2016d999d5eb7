# Helpers for the terminal tests: scalelab driven in tmux as a person would drive it.
# Source it after tests/lib.sh:
#
#     . "$srcdir/tests/lib.sh"
#     . "$srcdir/tests/tui/lib.sh"
#     start -x 120 -y 40 --          # a new session running scalelab at 120x40
#     wait_for "1 Precision" "opens" # one TAP line; the capture is left in $screen
#     keys 3
#     ...
#     quit                           # q, then the exit status and the terminal restored
#     done_testing
#
# Without tmux the test prints "1..0 # SKIP" and exits 0 when this file is sourced.
#
# Every test gets a private tmux server (its socket in the test's folder, no configuration
# file), killed on exit whatever happens. Every wait polls the screen every 0.1 s with a
# deadline, never a fixed sleep: the deadline is generous (TUI_WAIT seconds, set below: the
# sanitizer builds are slow) and cut short once scalelab has ended, so a window that died
# fails the rest of the test fast.
#
# The pane runs scalelab through a small script: it records scalelab's pid (the inner sh
# execs it) and exit status, then prints a prompt and stays, so that the screen left behind
# can be read and checked. TERM is one that ncurses-base always has.

if [ -z "$TMUX_BIN" ] || ! command -v "$TMUX_BIN" >/dev/null 2>&1; then
    echo "1..0 # SKIP tmux is not installed (apt-get install tmux)"
    exit 0
fi

unset TMUX # a private server, even when the tests run inside tmux
# Its socket lives in the test's own folder, not under /tmp/tmux-UID with a name made of the
# pid: tests run side by side (from other checkouts too, perhaps in other pid namespaces)
# and must never reach, or kill, another test's server.
TUI_SOCK="$T_TMP/tmux.sock"
# 20 s; under a sanitizer, which is ten times slower and slower still on a busy machine, 200 s
# (the CI's ASan run once reached 42 of 64 GPUs in 20 s of l presses). Only a state never
# reached waits the whole deadline, and a window that ended cuts it to two seconds.
if [ -z "$TUI_WAIT" ]; then TUI_WAIT=20; $sanitized && TUI_WAIT=200; fi
T() { "$TMUX_BIN" -S "$TUI_SOCK" -f /dev/null "$@"; }
tui_cleanup() {
    T kill-server >/dev/null 2>&1
    rm -rf "$T_TMP"
}
trap tui_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

cat >"$T_TMP/pane.sh" <<'EOS'
#!/bin/sh
dir=$1; shift
trap : INT # Ctrl-C is for scalelab: this shell stays (a caught signal is default again in children)
export TERM=screen-256color
export XDG_STATE_HOME="$dir/state"
sh -c 'echo $$ >"$0/pid"; exec "$@"' "$dir" "$@"
echo "exit=$?" >"$dir/status"
printf 'PROMPT> '
exec cat
EOS

# tui_quote WORD: WORD in single quotes, for the command line tmux hands to sh.
tui_quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# start [-x COLS] [-y ROWS] [NAME=VALUE...] [-- ARGS...]: a new session running scalelab with
# those variables and arguments, at COLS x ROWS (80x24 by default); $pid is scalelab's pid.
# Each run gets a new session; the old one is killed after, so the server never empties.
S=s0
start() {
    cols=80
    rows=24
    envs="SCALELAB_DATA=$(tui_quote "$SCALELAB_DATA")"
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        case "$1" in
        -x) cols=$2; shift ;;
        -y) rows=$2; shift ;;
        *) envs="$envs $(tui_quote "$1")" ;;
        esac
        shift
    done
    [ $# -gt 0 ] && shift
    args=""
    for a in "$@"; do args="$args $(tui_quote "$a")"; done
    rm -f "$T_TMP/pid" "$T_TMP/status"
    old=$S
    S="s$((${S#s} + 1))"
    T new-session -d -s "$S" -x "$cols" -y "$rows" \
        "env $envs sh $(tui_quote "$T_TMP/pane.sh") $(tui_quote "$T_TMP") $(tui_quote "$SCALELAB")$args" ||
        not_ok "tmux new-session"
    T kill-session -t "$old" >/dev/null 2>&1
    wait_file pid
    pid=$(cat "$T_TMP/pid" 2>/dev/null)
}

# capture [-e]: the pane's text now (-e: with its colours and attributes).
capture() { T capture-pane -p "$@" -t "$S" 2>/dev/null; }

keys() { T send-keys -t "$S" "$@"; }

# resize COLS ROWS
resize() { T resize-window -t "$S" -x "$1" -y "$2"; }

# ended: scalelab has exited (its status is written).
ended() { [ -s "$T_TMP/status" ]; }

# wait_file NAME: until the pane script writes $T_TMP/NAME (or the deadline).
wait_file() {
    i=0
    while [ ! -s "$T_TMP/$1" ] && [ $i -lt $((TUI_WAIT * 10)) ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

# tui_poll TEST TEXT: polls the screen into $screen until TEST (tui_has or tui_lacks) holds
# for TEXT; 1 at the deadline, or two seconds after scalelab ended (its last words may still
# be arriving then).
tui_has() { case "$screen" in *"$1"*) return 0 ;; esac; return 1; }
tui_lacks() { ! tui_has "$1"; }
tui_poll() {
    i=0
    left=20
    while [ $i -lt $((TUI_WAIT * 10)) ] && [ $left -gt 0 ]; do
        screen=$(capture)
        "$1" "$2" && return 0
        ended && left=$((left - 1))
        sleep 0.1
        i=$((i + 1))
    done
    screen=$(capture)
    "$1" "$2" && return 0
    # a wait that ran to its deadline is a test's slowest step: said, so that it shows
    echo "# tui_poll: $1 '$2' did not hold in ${TUI_WAIT} s" >&2
    return 1
}

# wait_screen TEXT: waits until the screen shows TEXT; no TAP line; the status says whether
# it did. The capture is in $screen.
wait_screen() { tui_poll tui_has "$1"; }

# tui_settle TEXT: the frame that showed TEXT may still be arriving: on a busy machine the
# pane can be captured between two writes of one frame (a header already new, the grid below
# it not yet). Captures again until two captures agree (ten times at most: an animation never
# does), keeping in $screen the latest that still shows TEXT.
tui_settle() {
    n=0
    while [ $n -lt 10 ]; do
        sleep 0.05
        prev=$screen
        screen=$(capture)
        [ "$screen" = "$prev" ] && return 0
        if ! tui_has "$1"; then
            screen=$prev
            return 0
        fi
        n=$((n + 1))
    done
}

# wait_for TEXT WHAT: waits until the screen shows TEXT; one TAP line. The capture is in
# $screen, the frame settled (tui_settle): later checks may look for more in the same frame.
wait_for() {
    if tui_poll tui_has "$1"; then
        tui_settle "$1"
        ok "$2"
        return 0
    fi
    not_ok "$2" "never showed: $1" "screen:" "$screen"
    return 1
}

# wait_gone TEXT WHAT: waits until TEXT is no longer on the screen; one TAP line.
wait_gone() {
    if tui_poll tui_lacks "$1"; then
        ok "$2"
        return 0
    fi
    not_ok "$2" "still there: $1" "screen:" "$screen"
    return 1
}

# check_restored WANT-STATUS WHAT: after scalelab ended, its status and a terminal back to
# normal (the shell's prompt, the normal screen, a visible cursor). Under ASan a leak report
# turns the exit status into 23, so this also says nothing leaked.
check_restored() {
    # the end is waited for as long as a run may take to stop: a panel's run of the small
    # model still setting up when q came (pprun.sh) is joined first, which under ASan at -O0
    # on a busy machine took longer than the screen's deadline
    tui_wait_was=$TUI_WAIT
    TUI_WAIT=$((TUI_WAIT * 10))
    wait_file status
    TUI_WAIT=$tui_wait_was
    check_eq "$(cat "$T_TMP/status" 2>/dev/null)" "exit=$1" "$2: exit status $1"
    wait_for "PROMPT>" "$2: the shell's prompt shows"
    check_eq "$(T display -p -t "$S" '#{alternate_on}')" "0" "$2: the alternate screen is left"
    check_eq "$(T display -p -t "$S" '#{cursor_flag}')" "1" "$2: the cursor is visible"
}

# quit [WHAT]: q, then scalelab has ended with status 0 and left the terminal usable.
quit() {
    keys q
    check_restored 0 "${1:-q}"
}
