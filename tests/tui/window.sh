#!/bin/sh
# The window, driven in tmux like a person would: opens, switches lessons, opens and closes
# the help, types a value in the formats explorer and reads its bits, resizes too small and
# back, runs without colour and in ASCII, idles without spending CPU, and leaves the
# terminal usable after q, SIGTERM and Ctrl-C. Saved progress goes to a folder of the test's.
#
# tests/tui/lib.sh runs it (a private tmux server, bounded waits). Under ASan, a leak report
# would turn the exit statuses it checks (0, 143, 130) into 23.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

ESC=$(printf '\033')

# ---- a normal run: colour, UTF-8 ----
start LC_ALL=C.UTF-8 --
# lesson 1's tab: "1 Precision", or "1 Prec" where 80 columns do not hold every tab's word (the
# brief forms: lessons/README.md's @tab)
wait_for "1 Prec" "opens: the tab bar shows"
wait_for "Number formats" "lesson 1's panel is the formats explorer"
wait_for "Lesson 1 · step 1 of" "the lesson pane shows lesson 1's first step"
wait_for "Why not keep everything in" "with the step's text from lessons/"
check_contains "$(capture -e)" "${ESC}[" "the screen has colour and attributes"
if capture -e | grep -qE "${ESC}\[([0-9]+;)*(3[0-7]|38;5)"; then
    ok "colours are used"
else
    not_ok "colours are used"
fi

keys 2
wait_for "Lesson 2" "2 switches to lesson 2"
wait_for "Activation memory" "lesson 2 shows its activation-memory panel"
keys 3
wait_for "Lesson 3" "3 switches to lesson 3"
keys Tab
wait_for "Lesson 4" "Tab goes to the next lesson"
keys BTab
wait_for "Lesson 3" "Shift-Tab goes back"
keys L
wait_for "The Lab" "L opens the Lab"
keys 1
wait_for "Lesson 1" "1 goes back to lesson 1"

keys '?'
wait_for "The window" "? opens the help"
wait_for "select a format" "the help lists the panel's keys"
keys Escape
wait_gone "Esc or ? closes" "Esc closes the help"

# Lesson steps: the next step sets the panel (value=0.1 format=fp32) and asks a question.
keys ']'
wait_for "step 2 of" "] goes to the next step"
wait_for "0x3dcccccd" "the step's panel settings apply: 0.1 in fp32"
keys a
wait_for "> " "a opens the answer field"
keys -l abc
keys Enter
wait_for "abc" "an answer that cannot be read is neither right nor wrong"
keys C-u
keys -l 10
keys Enter
wait_for "10: right" "the right answer"
wait_for "implicit 1" "the explanation shows"
keys '['
wait_for "step 1 of" "[ goes back"
# a wrong answer shows the right one; typing that one is then not scored
keys a
wait_for "> " "a opens the answer field"
keys -l 9
keys Enter
wait_for "9: not quite" "a wrong answer is told so"
wait_for "the answer is" "with the right answer"
keys a
keys -l 2
keys Enter
wait_for "not scored" "the answer retyped once shown is not scored right"
keys ']'
wait_for "step 2 of" "and forth"

keys Enter
wait_for "Enter apply" "typing a value: the hints say how to apply it"
keys -l 65504
keys Enter
wait_for "0 11110 1111111111" "65504 typed: its fp16 bits"
wait_for "0x7bff" "65504 in fp16 is 0x7bff"
wait_for "0 10001110 11111111110000000000000" "and its fp32 bits"
keys Down
keys Right
wait_for "0 11111 0000000000" "fp16 selected: one ulp up from its max is inf"
keys Enter
keys -l abc
keys Enter
wait_for "not a number" "bad input shows an error in the panel"
keys Escape
wait_gone "not a number" "Esc leaves the input"

# Keys at random (every printable one but q, and the special ones) never crash the window.
keys -l 'abcdefghijklmnoprstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!"#$%&()*+,-./:;<=>@[]^_{|}~'
keys Escape Escape Up Down Left Right Home End NPage PPage F1 F5 BSpace DC IC Tab BTab Escape
keys Enter
keys -l '1234567890123456789012345678901234567890123456789012345678901234567890e999999'
keys Enter Escape
keys 1 '[' '[' '[' '[' '[' '[' '[' '['
wait_for "step 1 of" "a storm of keys and a long input later, the window still answers"
keys ']'
wait_for "step 2 of" "back at step 2"

resize 60 20
wait_for "at least 80x24" "too small: says how large it must be"
wait_for "60x20" "and the current size"
resize 150 40
wait_for "5 ZeRO" "larger again: the layout returns"
wait_for "rel. error" "at 150 columns the table is one line per format"
wait_for "1 Mixed precision" "and the tabs take the lessons' own titles"
wait_for "2^-150" "with room, each format's range on one axis of powers of two"
resize 80 24
wait_for "1 Prec" "back to 80x24"

# Idle: utime + stime (fields 14 and 15 of /proc/PID/stat, in clock ticks) over 3 s.
if [ -r "/proc/$pid/stat" ]; then
    hz=$(getconf CLK_TCK)
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    sleep 3
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    # under 1% of a core: fewer than 0.03 s of CPU in 3 s
    if [ $(((t1 - t0) * 100)) -lt $((3 * hz)) ]; then
        ok "idle: $((t1 - t0)) ticks of CPU in 3 s (under 1% of a core)"
    else
        not_ok "idle: $((t1 - t0)) ticks of CPU in 3 s, 1% is $((3 * hz / 100))"
    fi
else
    not_ok "idle: /proc/$pid/stat is not readable"
fi

quit "q"

# ---- progress: the learner comes back to the same place ----
start LC_ALL=C.UTF-8 --
wait_for "step 2 of" "a new session opens at the step left"
keys NPage NPage NPage
wait_for "answered right before" "and knows the question was answered"

# ---- v: the formats explorer stays one key away from the training run ----
keys ']' ']' ']' ']' ']' ']' ']'
wait_for "step 9 of" "] to step 9, the first training step"
wait_for "Mixed-precision training" "a training step shows the training panel"
wait_for "v formats" "the hint line offers the formats explorer on v"
keys v
wait_for "Number formats" "v swaps the live panel to the formats explorer"
wait_for "v training" "and the hint offers the way back"
wait_for "0x43fa0000" "the explorer as the formats steps left it: 500 (step 8) in fp32"
keys M
wait_for "0x7bff" "the explorer answers its keys: M is fp16 max"
keys v
wait_for "Mixed-precision training" "v again: back to the training panel"
wait_gone "held as fp32" "the explorer is no longer drawn"
keys v
wait_for "0x7bff" "the explorer kept its value across the swap"
keys ']'
wait_for "step 10 of" "the next step"
wait_for "Mixed-precision training" "shows the step's own panel again"
keys '?'
wait_for "each keeps its state" "the help lists v"
keys Escape
keys '[' '[' '[' '[' '[' '[' '[' '['
wait_for "step 2 of" "back at step 2"
wait_for "0x3dcccccd" "where the step's settings apply to the explorer again"
quit "q again"

# ---- NO_COLOR: no colour, still readable ----
start LC_ALL=C.UTF-8 NO_COLOR=1 --
wait_for "1 Prec" "NO_COLOR: opens"
if capture -e | grep -qE "${ESC}\[([0-9]+;)*(3[0-7]|4[0-7]|38;|48;)"; then
    not_ok "NO_COLOR: no colour on the screen"
else
    ok "NO_COLOR: no colour on the screen"
fi
wait_for "0 01111011 10011001100110011001101" "NO_COLOR: the bits are shown"
quit "NO_COLOR"

# ---- ASCII: --ascii, and a locale that is not UTF-8 ----
for how in "LC_ALL=C.UTF-8 -- --ascii" "LC_ALL=C --"; do
    # shellcheck disable=SC2086
    start $how
    wait_for "1 Prec" "$how: opens"
    keys '?'
    wait_for "The window" "$how: the help opens"
    bad=$(capture | LC_ALL=C tr -d '\n\040-\176' | wc -c)
    check_eq "$bad" "0" "$how: only ASCII on the screen"
    wait_for "+-" "$how: boxes drawn with + and -"
    keys q
    keys q
    check_restored 0 "$how"
done

# ---- SIGTERM restores the terminal too ----
start LC_ALL=C.UTF-8 --
wait_for "1 Prec" "opens again"
kill -TERM "$pid"
check_restored 143 "SIGTERM"

# ---- even when another thread takes the signal ----
# A signal sent to a process goes to any thread that does not block it; OpenBLAS runs a
# thread of its own. SIGTERM aimed at that thread (tgkill) must still end the window.
start LC_ALL=C.UTF-8 --
wait_for "1 Prec" "opens, with its threads"
# (a thread that does not block SIGTERM, bit 15 of SigBlk: sanitizers run threads that do)
tid=""
for t in $(ls "/proc/$pid/task" 2>/dev/null); do
    blk=$(awk '/^SigBlk/ {print $2}' "/proc/$pid/task/$t/status" 2>/dev/null)
    if [ "$t" != "$pid" ] && [ -n "$blk" ] && [ $((0x$blk >> 14 & 1)) -eq 0 ]; then
        tid=$t
        break
    fi
done
if [ -n "$tid" ] && command -v python3 >/dev/null 2>&1; then
    python3 -c "import ctypes,sys; sys.exit(ctypes.CDLL(None, use_errno=True).syscall(234, $pid, $tid, 15) != 0)" ||
        kill -TERM "$pid" # tgkill is syscall 234 on x86-64 only; elsewhere the process
    check_restored 143 "SIGTERM to a thread other than the window's"
else
    kill -TERM "$pid"
    check_restored 143 "SIGTERM (one thread only)"
fi

# ---- SIGINT too (Ctrl-C in the pane; kill -INT if the keystroke went astray in tmux) ----
start LC_ALL=C.UTF-8 --
wait_for "1 Prec" "opens once more"
keys C-c
i=0
while [ ! -s "$T_TMP/status" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ ! -s "$T_TMP/status" ]; then
    echo "# Ctrl-C did not end it within 5 s ($(grep -E '^Sig(Pnd|Blk|Ign|Cgt)' \
        "/proc/$pid/status" 2>/dev/null | tr '\n' ' ')); sending SIGINT"
    kill -INT "$pid"
fi
check_restored 130 "SIGINT"

done_testing
