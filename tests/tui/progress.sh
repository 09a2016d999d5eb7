#!/bin/sh
# Issue 11: progress is never lost. A progress file with one bad line used to start afresh
# and the next save overwrote the good lines; now the window keeps them, names the skipped
# line in full in the latest events (wrapped to fit 80 columns), and the first save keeps the
# file as it was beside it as progress.bad.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

P="$T_TMP/state/scalelab/progress"
mkdir -p "$T_TMP/state/scalelab"
printf '# scalelab progress 1\ncurrent 3\nlesson 3 step 3 correct 3.0\nlesson 9 step zz\n' >"$P"

start LC_ALL=C.UTF-8 --
wait_for "Lesson 3 · step 4 of" "the valid lines are kept: lesson 3 reopens at its step"
wait_for "progress:4: skipped 'lesson 9 step zz' (not a progress line); the" "the skipped line is named in the latest events"
wait_for "file will be kept as progress.bad" "with what happens to the file, on the next line"
long=$(capture | grep -E 'progress' | awk 'length > 80' | wc -l)
check_eq "$long" 0 "in lines that fit 80 columns"
keys 2
wait_for "Lesson 2" "2 opens lesson 2 (and saves)"
quit

# saved as version 2, the lessons by name (lesson 3 was collectives when version 1 numbered it)
check_contains "$(cat "$P")" "lesson collectives step 3 correct 3.0" "the saved file still holds lesson 3"
check_contains "$(cat "$P")" "current checkpointing" "and the lesson open last"
check_not_contains "$(cat "$P")" "zz" "without the bad line"
check_eq "$(cat "$P.bad")" "$(printf '# scalelab progress 1\ncurrent 3\nlesson 3 step 3 correct 3.0\nlesson 9 step zz')" "the file as it was is kept as progress.bad"

# a second session: the file is good now, nothing to report, progress.bad untouched
start LC_ALL=C.UTF-8 --
wait_for "Lesson 2" "the next session opens lesson 2"
check_eq "$(capture | grep -c 'skipped')" 0 "nothing skipped"
quit "q again"
check_eq "$(ls "$T_TMP/state/scalelab" | sort | tr '\n' ' ')" "progress progress.bad " "no second copy"

# a folder where the file should be: said at the start; the saves fail, and quitting says so
# on the terminal given back, with exit status 1 (issue 21: exit 0, the event log only)
rm -rf "$T_TMP/state/scalelab"
mkdir -p "$P"
start LC_ALL=C.UTF-8 --
wait_for "progress: a folder where the progress file should be;" "a folder is reported as such"
keys q
check_restored 1 "q with a folder"
check_contains "$(capture)" "scalelab: progress not saved: " "the failed save is said after the window"

# Issue 21: a FIFO, or a link to /dev/zero, where the file should be hung the window (reading
# it never ended; q, SIGINT and SIGTERM were ignored). Neither is read nor replaced now.
rm -rf "$T_TMP/state/scalelab"
mkdir -p "$T_TMP/state/scalelab"
mkfifo "$P"
start LC_ALL=C.UTF-8 --
wait_for "a FIFO where the progress file should be" "a FIFO is said, not read (the window opens)"
keys q
check_restored 1 "q with a FIFO"
check_eq "$(stat -c %F "$P")" "fifo" "the FIFO is left as it was"
rm -f "$P"
ln -s /dev/zero "$P"
start LC_ALL=C.UTF-8 --
wait_for "a device where the progress file should be" "a link to /dev/zero is said, not read"
kill -TERM "$pid"
check_restored 143 "SIGTERM ends it"
check_eq "$(readlink "$P")" "/dev/zero" "the link is left as it was"

# a read-only state folder (root writes there anyway: a file where the folder should be
# fails its saves too): every save fails; quitting says so, exit 1
rm -f "$P"
if [ "$(id -u)" -ne 0 ]; then chmod 0500 "$T_TMP/state/scalelab"
else rmdir "$T_TMP/state/scalelab" && : >"$T_TMP/state/scalelab"; fi
start LC_ALL=C.UTF-8 --
wait_for "1 Prec" "a state folder that takes no file: the window opens"
keys 2
wait_for "progress not saved:" "the first failed save is said in the latest events"
keys q
check_restored 1 "q when no save succeeded"
check_contains "$(capture)" "scalelab: progress not saved: " "and said again on the terminal"
chmod 0700 "$T_TMP/state/scalelab" 2>/dev/null

done_testing
