#!/bin/sh
# The test driver, timed: runs the driver given as arguments (the TAP driver and its options)
# and adds to the test's log how long the test took, on the wall and on the CPU (its processes'
# user and system time, those it waited for). scripts/test lists the slowest tests of each
# suite from these lines, so where the suite's time goes is measured on every run.
log=
prev=
for arg; do
    [ "$prev" = --log-file ] && log=$arg
    prev=$arg
done
start=$(date +%s%N)
"$@"
rc=$?
end=$(date +%s%N)
if [ -n "$log" ] && [ -f "$log" ]; then
    # times: the shell's own user and system time, then its children's (in this shell: a
    # pipe would run it in a subshell, which has no children)
    times >"$log.times"
    awk -v ns=$((end - start)) 'NR == 2 {
        cpu = 0
        for (i = 1; i <= 2; i++) { split($i, p, "m"); cpu += p[1] * 60 + p[2] }
        printf "# timed: %.1f s wall, %.1f s CPU\n", ns / 1e9, cpu }' "$log.times" >>"$log"
    rm -f "$log.times"
fi
exit $rc
