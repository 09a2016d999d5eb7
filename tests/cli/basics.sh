#!/bin/sh
# The command line's frame: help, version, unknown commands and options, exit statuses.
. "$srcdir/tests/lib.sh"

run --help
check_status 0 "--help"
check_contains "$out" "usage: scalelab" "--help shows the usage"
check_contains "$out" "bench" "--help lists the commands"

run --version
check_status 0 "--version"
check_contains "$out" "scalelab 0." "--version prints the version"

run help bench
check_status 0 "help bench"
check_contains "$out" "usage: scalelab bench" "help bench shows the command's usage"

run bench --help
check_status 0 "bench --help"
check_contains "$out" "usage: scalelab bench" "COMMAND --help is help COMMAND"

run frobnicate
check_status 2 "unknown command"
check_contains "$err" "scalelab: unknown command 'frobnicate'" "unknown command is named"

run bnech
check_status 2 "misspelt command"
check_contains "$err" "did you mean 'bench'?" "misspelt command gets a hint"

run --frobnicate
check_status 2 "unknown top-level option"
check_contains "$err" "unknown option '--frobnicate'" "unknown option is named"

run bench --quik
check_status 2 "misspelt option"
check_contains "$err" "did you mean '--quick'?" "misspelt option gets a hint"

run bench --only
check_status 2 "option without its value"
check_contains "$err" "'--only' needs a value" "missing value is named"

run help nosuch
check_status 2 "help on an unknown command"

# ---------------------------------------------------------------- output that cannot be written
# (issue 11: each of these exited 0 with standard output on /dev/full)
if [ -w /dev/full ]; then
    for cmd in "formats" "formats 0.1" "memory --json" "run --list" "train --json --steps 2 --batch 1" \
        "pipeline --json" "collective --json --gpus 2 --size 64" "--help" "--version" "help memory"; do
        # shellcheck disable=SC2086
        "$SCALELAB" $cmd >/dev/full 2>"$T_TMP/err" </dev/null
        status=$? err=$(cat "$T_TMP/err")
        check_status 1 "$cmd > /dev/full"
        check_eq "$err" "scalelab: write error: No space left on device" "$cmd > /dev/full: the real reason"
    done
fi
# a reader that went away: no message, whether SIGPIPE kills or EPIPE is returned
for cmd in "run --list" "pipeline --stages 8 --micro-batches 64" "--help"; do
    # shellcheck disable=SC2086
    (trap '' PIPE; "$SCALELAB" $cmd 2>"$T_TMP/err" </dev/null | head -c 1 >/dev/null)
    check_eq "$(cat "$T_TMP/err")" "" "$cmd | head -c 1: quiet with SIGPIPE ignored"
    # shellcheck disable=SC2086
    "$SCALELAB" $cmd 2>"$T_TMP/err" </dev/null | head -c 1 >/dev/null
    check_eq "$(cat "$T_TMP/err")" "" "$cmd | head -c 1: quiet"
done

done_testing
