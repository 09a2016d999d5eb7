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

done_testing
