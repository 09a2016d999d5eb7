#!/bin/sh
# collective --fail GPU@STEP, for every op and algorithm, on a few N, at the first and the
# last step, on the first and the last GPU: exit 1, an error naming both, nothing on stdout,
# and (in the sanitizer builds) no leak or race report: every thread joined, everything freed.
# A run that does not end is caught by timeout(1) well before the cluster's own 60 s deadline
# would fire, so a missing abort path shows as a failure here rather than as a slow pass.
. "$srcdir/tests/lib.sh"

steps_of() { # ARGS...: the algorithm's rounds of a run that does not fail (--fail's steps)
    run collective "$@" --json
    printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rounds"])'
}

for spec in "allreduce ring 2" "allreduce ring 5" "allreduce tree 5" "allreduce dbtree 8" \
    "allreduce rhd 6" "reduce-scatter ring 3" "reduce-scatter rhd 8" "allgather rhd 4" \
    "allgather ring 7" "broadcast ring 4" "broadcast tree 6" "reduce tree 5" "reduce ring 3"; do
    set -- $spec
    op=$1 algo=$2 n=$3
    steps=$(steps_of --op "$op" --algo "$algo" --gpus "$n" --size 4KiB)
    case "$steps" in '' | *[!0-9]*) not_ok "$op $algo on $n GPUs: steps" "$err"; continue ;; esac
    for s in 0 $((steps - 1)); do
        for g in 0 $((n - 1)); do
            what="$op $algo on $n GPUs, GPU $g fails at step $s of $steps"
            timeout 20 "$SCALELAB" collective --op "$op" --algo "$algo" --gpus "$n" --size 4KiB \
                --fail "$g@$s" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
            status=$?
            err=$(cat "$T_TMP/err")
            if [ "$status" -ne 1 ]; then
                not_ok "$what: exit $status, wanted 1 (124: it hung)" "$err"
            elif [ -s "$T_TMP/out" ]; then
                not_ok "$what: printed a result" "$(head -c 300 "$T_TMP/out")"
            else
                case "$err" in
                *Sanitizer* | *"runtime error"* | *"WARNING: ThreadSanitizer"*) not_ok "$what: sanitizer report" "$(printf '%s' "$err" | head -c 800)" ;;
                "scalelab: collective: GPU $g: failed at step $s"*) ok "$what" ;;
                *) not_ok "$what: message" "$err" ;;
                esac
            fi
        done
    done
done

# The trace of a failed run is still written (whole: through a temporary file), with the
# failure in it.
run collective --gpus 4 --size 1KiB --fail 2@3 --trace "$T_TMP/t.json" --events "$T_TMP/e.jsonl"
check_status 1 "a failing run with --trace and --events"
check_eq "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(any(e.get("pid") == 2 and "fail" in e.get("name", "") for e in d["traceEvents"]))' "$T_TMP/t.json")" True "the trace shows GPU 2's failure"
check_contains "$(cat "$T_TMP/e.jsonl")" '"type":"fail","device":2' "the events show it too"
check_eq "$(ls "$T_TMP" | grep -c '\.tmp\.')" 0 "no temporary file is left behind"

# A device or a pipe is written in place, never replaced through a rename (run as root, that
# turned /dev/null into a plain file). A named pipe shows it without touching /dev.
mkfifo "$T_TMP/fifo"
timeout 20 cat "$T_TMP/fifo" >"$T_TMP/from-fifo" &
run collective --gpus 2 --size 1KiB --events "$T_TMP/fifo"
wait
check_status 0 "--events into a named pipe"
check_contains "$(cat "$T_TMP/from-fifo")" '"type":"send","device":0' "the pipe carried the events"

done_testing
