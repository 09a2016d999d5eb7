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

# a folder where the file should be
rm -rf "$T_TMP/state/scalelab"
mkdir -p "$P"
start LC_ALL=C.UTF-8 --
wait_for "progress: a folder where the progress file should be;" "a folder is reported as such"
quit "q with a folder"

done_testing
