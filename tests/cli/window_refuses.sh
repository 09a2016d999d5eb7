#!/bin/sh
# "scalelab" with no command opens the window only on a terminal: redirected, or with TERM
# unset, unknown or "dumb", it says why and how to run headless, exits 2, and writes nothing
# (no escape sequence) to standard output. The TERM cases need a terminal on stdin and
# stdout: script(1) gives them one.
. "$srcdir/tests/lib.sh"
threadless "the window is refused before any thread starts"

ESC=$(printf '\033')

run
check_status 2 "no terminal on stdin"
check_contains "$err" "standard input is not a terminal" "says stdin is not a terminal"
check_contains "$err" "scalelab formats 0.1" "says how to run headless"
check_eq "$out" "" "writes nothing to stdout"

run --ascii
check_status 2 "--ascii without a terminal"

"$SCALELAB" </dev/null >"$T_TMP/out" 2>"$T_TMP/err"
status=$?
check_status 2 "stdout redirected too"
check_eq "$(cat "$T_TMP/out")" "" "nothing in the redirected stdout"

run --ascii formats
check_status 2 "--ascii takes no command"

# presenter mode's options are checked before the terminal: a clear message, exit 2
# (the numbered lessons counted from the folder: one past the last is refused)
last=$(ls "$srcdir/lessons" | grep '^[0-9][0-9]-.*\.lesson$' | grep -v '^90-' | sed 's/-.*//;s/^0//' | sort -n | tail -n 1)
run --lesson $((last + 1))
check_status 2 "--lesson $((last + 1))"
check_contains "$err" "--lesson: 1 to $last or lab, not '$((last + 1))'" "names the lessons there are"
run --step 2
check_status 2 "--step alone"
check_contains "$err" "--step needs --lesson" "--step needs --lesson"
run --lesson 3 --step 40
check_status 2 "a step the lesson does not have"
check_contains "$err" "lesson 3 has steps 1 to $(grep -c '^@step' "$srcdir/lessons/03-collectives.lesson"), not 40" \
    "says which steps it has"
run --lesson 3 --autoplay 0
check_status 2 "--autoplay 0"
check_contains "$err" "seconds from 0.5 to 3600" "says what autoplay takes"
run --lesson=9
check_status 2 "--lesson=9"
check_contains "$err" "not '9'" "the --opt=value form is read"
run --ascii=1
check_status 2 "--ascii takes no value"
run --lesson lab --step 2 --autoplay 5
check_status 2 "good options, no terminal"
check_contains "$err" "standard input is not a terminal" "then only the terminal is missing"

if command -v script >/dev/null 2>&1; then
    for term in dumb nosuchterminal ""; do
        if [ -n "$term" ]; then setenv="TERM=$term"; else setenv="-u TERM"; fi
        script -qec "env $setenv '$SCALELAB' 2>'$T_TMP/err'; echo \"exit=\$?\"" /dev/null \
            >"$T_TMP/out" 2>/dev/null </dev/null
        out=$(cat "$T_TMP/out")
        err=$(cat "$T_TMP/err")
        check_contains "$out" "exit=2" "TERM='$term' on a terminal: exit 2"
        case "$term" in
        dumb) check_contains "$err" "TERM is 'dumb'" "TERM=dumb is named" ;;
        "") check_contains "$err" "TERM is not set" "an unset TERM is named" ;;
        *) check_contains "$err" "TERM 'nosuchterminal' is not a terminal" "an unknown TERM is named" ;;
        esac
        check_not_contains "$out" "$ESC" "TERM='$term': no escape sequence on the terminal"
    done
else
    echo "# script(1) is missing: the TERM checks on a terminal are skipped"
fi

done_testing
