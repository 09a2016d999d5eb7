#!/bin/sh
# scalelab progress: the saved progress shown (text and JSON), cleared for one lesson or all.
. "$srcdir/tests/lib.sh"
threadless "saved progress is read and written on one thread"

file="$XDG_STATE_HOME/scalelab/progress"
run progress
check_status 0 "progress with nothing saved"
check_contains "$out" "none saved yet" "says nothing is saved"
check_contains "$out" "not opened" "lessons not opened"

mkdir -p "$XDG_STATE_HOME/scalelab"
printf '# scalelab progress 1\ncurrent 3\nlesson 1 step 3 correct 0.0 2.1\nlesson 3 step 5 correct 1.0\n' >"$file"
run progress
check_status 0 "progress with a saved file"
check_contains "$out" "Gradient clipping and mixed precision    4 of 13      2 of 23" "lesson 1: step 4, two right"
# lesson 3's steps and questions, counted in its file (a new step or question moves them)
l3="$srcdir/lessons/03-collectives.lesson"
l3_steps=$(grep -c '^@step' "$l3")
l3_questions=$(grep -c '^@question' "$l3")
check_contains "$out" "$(printf '%-13s%-10s(open last)' "6 of $l3_steps" "1 of $l3_questions")" \
    "lesson 3: step 6, one right, open last"
run progress --json
check_json "d['current'] == 3 and d['lessons'][0]['step'] == 4 and d['lessons'][0]['right'] == 2" "--json: step and answers"
check_json "d['lessons'][1]['visited'] is False" "--json: a lesson not opened"

run progress --reset 1
check_status 0 "--reset 1"
run progress --json
check_json "d['lessons'][0]['visited'] is False and d['lessons'][0]['right'] == 0" "lesson 1 forgotten"
check_json "d['lessons'][2]['right'] == 1 and d['current'] == 3" "lesson 3 kept"
run progress --reset
check_status 0 "--reset"
run progress --json
check_json "d['current'] is None and all(l['right'] == 0 for l in d['lessons'])" "all forgotten"

run progress 1
check_status 2 "a lesson without --reset"
run progress --reset 99
check_status 2 "an unknown lesson"
check_contains "$err" "no lesson '99'" "names it"
run progress --bogus
check_status 2 "an unknown option"
# The Lab has one name everywhere: L (the window's key), lab and 90 are each accepted, and the
# list names it L as the window's tab does (it said 90, and 'progress --reset L' was refused).
printf '# scalelab progress 2\ncurrent lab\nlesson lab step 2\n' >"$file"
run progress
check_contains "$out" "L      Data parallelism and ZeRO memory" "the list names the Lab L"
run progress --json
check_json "[(x['key'], x['lesson']) for x in d['lessons'] if x['name'] == 'lab'] == [('L', 90)]" "JSON: its key L beside its number"
for name in L l lab 90; do
    printf '# scalelab progress 2\ncurrent lab\nlesson lab step 2\n' >"$file"
    run progress --reset $name
    check_status 0 "progress --reset $name"
    check_not_contains "$(cat "$file")" "lesson lab" "--reset $name forgets the Lab"
done

done_testing
