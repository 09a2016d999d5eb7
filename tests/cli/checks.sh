#!/bin/sh
# The checks of tests/lib.sh can fail: each is run on a case where it must fail, in a subshell
# whose TAP lines are read here, and on one where it must pass. A check that passes on an
# empty needle or an empty list would pass whatever the program printed.
. "$srcdir/tests/lib.sh"
threadless "the test helpers' own checks"

# verdict COMMANDS: "ok" or "not ok", the first word of the TAP line the commands print.
verdict() { (T_N=0 T_FAILED=0; eval "$1") | sed -n 's/^\(not ok\|ok\) .*/\1/p' | head -n 1; }

check_eq "$(verdict 'check_contains "some text" "" "x"')" "not ok" "check_contains fails on an empty needle"
check_eq "$(verdict 'check_not_contains "some text" "" "x"')" "not ok" "check_not_contains too"
check_eq "$(verdict 'check_contains "some text" "me te" "x"')" "ok" "check_contains finds a needle"
check_eq "$(verdict 'check_contains "some text" "other" "x"')" "not ok" "and misses one"
# every all(...) over a list that came out empty fails, in check_json, check_jsonl and py
out='{"per_gpu": [], "two": [1, 2]}'
check_eq "$(verdict 'check_json "all(g > 0 for g in d[\"per_gpu\"])" "x"')" "not ok" \
    "check_json: all() over an empty list fails"
check_eq "$(verdict 'check_json "all(g > 0 for g in d[\"two\"])" "x"')" "ok" "and holds over a list"
out='{"a": 1}'
check_eq "$(verdict 'check_jsonl "all(x[\"a\"] for x in d[1:])" "x"')" "not ok" \
    "check_jsonl: all() over an empty list fails"
check_eq "$(verdict 'PYCODE="assert all(x for x in [])" py "x"')" "not ok" "py: all() over an empty list fails"
done_testing
