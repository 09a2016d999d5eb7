#!/bin/sh
# Two hosts over a network: scripts/hosts makes 2 namespaced hosts on a bridge, 1 Gbit/s
# links, 2 MPI ranks each (shared memory within a host, TCP between them), and on them
# train --transport mpi gives the run of 4 thread-GPUs bit for bit, a collective gives the
# thread run's result bits and bytes, and a host whose link is cut mid-run ends every rank
# with a message naming the host and the GPU past --deadline. scripts/hosts leaves no
# namespace, link or process behind after a normal end, a failing command and SIGINT, and
# refuses (exit 2) bad options and a user who is not root. Needs root and `ip netns`; skips
# with the reason otherwise, and under the sanitizers as every MPI test does. Its cost: 8 to
# 18 s of CPU (the suite's count, then every process's in a cgroup: Open MPI's daemon on host
# 1 daemonizes), 40 s of wall on 2 vCPUs at a load of 8, 7 minutes at 20. No check waits on a clock: each poll is
# on a state (a file written, a process gone), with a deadline.
#
# The test runs twice: here (the root namespace), where it starts scripts/hosts with itself
# as the command and checks what is left after; and on host 0 (HOSTS_DIR set), where the MPI
# runs are. The inner run's checks carry on the numbering here (HOSTS_TAP_STATE).
. "$srcdir/tests/lib.sh"

mpi_setup
if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP scripts/hosts makes network namespaces, which needs root (CI runs as root)"
    exit 0
fi
if ! command -v ip >/dev/null 2>&1 || ! ip netns list >/dev/null 2>&1; then
    echo "1..0 # SKIP no 'ip netns' here (iproute2 and a kernel with network namespaces)"
    exit 0
fi
HOSTS=$srcdir/scripts/hosts

# gone PREFIX: what of a scripts/hosts run (names starting PREFIX) is left: namespaces, links
gone() {
    printf '%s' "$(ip netns list | grep "^$1-"; ip -o link show | grep -owE "${1}(br|h[0-9]+)")"
}

# ------------------------------------------------------------------ on host 0: the MPI runs
if [ -n "${HOSTS_DIR:-}" ]; then
    T_N=$HOSTS_T_N
    export OMPI_MCA_btl=self,vader,tcp # (mpi_setup's is one host's: shared memory alone)
    set -- $HOSTS_NAMES
    h0=$1 h1=$2
    set -- $HOSTS_NETNS
    ns1=$2
    # hrun ARGS...: scalelab ARGS on 2 ranks on each host (the hostfile scripts/hosts gave
    # mpirun); timeout(1) only keeps a broken build from hanging the suite
    hrun() {
        timeout -k 10 300 "$MPIRUN" -n 4 "$SCALELAB" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
        status=$?
        out=$(cat "$T_TMP/out")
        err=$(cat "$T_TMP/err")
    }

    # training: every field of every line but the host's seconds and what names the transport
    run train --model tiny --steps 2 --json --gpus 4 --zero 1
    printf '%s\n' "$out" >"$T_TMP/thread.jsonl"
    hrun train --model tiny --steps 2 --json --transport mpi --zero 1 --deadline 30
    check_status 0 "train --transport mpi, ZeRO-1, on 2 hosts x 2 ranks"
    printf '%s\n' "$out" >"$T_TMP/mpi.jsonl"
    diff=$(python3 - "$T_TMP/thread.jsonl" "$T_TMP/mpi.jsonl" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
b = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
host = {"seconds", "tokens_per_s", "gflops", "transport", "ranks", "hosts"}
strip = lambda d: {k: v for k, v in d.get("summary", d).items() if k not in host}
bad = [] if len(a) == len(b) and a else ["%d lines on threads, %d over MPI" % (len(a), len(b))]
for i, (x, y) in enumerate(zip(a, b)):
    x, y = strip(x), strip(y)
    bad += ["line %d: %s: %s, over MPI %s" % (i + 1, k, str(x.get(k))[:60], str(y.get(k))[:60])
            for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
s = b[-1]["summary"] if b else {}
if (s.get("transport"), s.get("ranks"), s.get("hosts")) != ("mpi", 4, 2):
    bad.append("the summary does not say 4 MPI ranks on 2 hosts: %s" %
               [s.get("transport"), s.get("ranks"), s.get("hosts")])
print("\n".join(bad[:6]))
EOF
)
    check_eq "$diff" "" "4 ranks on 2 hosts give the run of 4 thread-GPUs bit for bit"

    # a collective: ranks 0, 1 on host 0 and 2, 3 on host 1, so the ring crosses the link twice
    run collective --gpus 4 --size 4MiB --json
    printf '%s' "$out" >"$T_TMP/thread.json"
    hrun collective --transport mpi --size 4MiB --json --deadline 30
    check_status 0 "collective --transport mpi, a 4 MiB ring all-reduce on 2 hosts x 2 ranks"
    check_json "d['verified'] is True and d['ranks']==4 and d['hosts']==2" "verified, on 4 ranks of 2 hosts"
    check_json "d['result_digest']==json.load(open('$T_TMP/thread.json'))['result_digest'] and d['bytes_sent_per_gpu']==json.load(open('$T_TMP/thread.json'))['bytes_sent_per_gpu']" "the thread run's result bits and bytes per GPU"

    # a rank of host 1 that dies at its first send (comm/mpiwire.c's test hook, the variables
    # sent to host 1 with -x): mpirun sees it and ends the job with its status; and where the
    # launcher leaves the other running, it ends the run past the deadline, naming the dead GPU
    # and its host. One rank a host (--map-by node): on four, a rank downstream of the ring
    # may reach its deadline first and name its own neighbour (tests/cli/train_mpi.sh).
    die() { # MPIRUN-OPTIONS...: a run of 2 ranks on 2 hosts whose rank 1 dies
        SCALELAB_MPI_STALL=exit SCALELAB_MPI_STALL_RANK=1 timeout -k 10 300 "$MPIRUN" -n 2 \
            --map-by node -x SCALELAB_MPI_STALL -x SCALELAB_MPI_STALL_RANK "$@" "$SCALELAB" \
            train --model tiny --steps 5 --transport mpi --deadline 5 \
            >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
        status=$? err=$(cat "$T_TMP/err")
    }
    die
    check_status 9 "a rank of host 1 that dies ends the run with its status"
    die --mca orte_abort_on_non_zero_status 0
    check_status 1 "a dead rank on host 1 the launcher leaves alone: the other ends the run"
    check_contains "$err" "waited 5 s for " "past the deadline"
    check_contains "$err" "GPU 1 is on host $h1, GPU 0 on host $h0" "naming the dead GPU and its host ($h1)"

    # host 1's link cut once the run has done a step (last: host 1 stays unreachable): the
    # ranks waiting past --deadline stop every rank, naming the GPU they waited for (for a
    # message, or for its record of the step) and its host; mpirun ends when the TCP
    # connections to host 1 break (scripts/hosts: within seconds), and every process there
    # has ended. The deadline, 5 s: at a load of 20 on 2 cores (others' work, this one at nice
    # 19) 3 s ran out before a step; at 10 s mpirun's own keepalives (9 s) found host 1 gone
    # first and ended the job with its message, naming no GPU.
    # (files of its own: the job truncates them after it starts, and a poll of the last run's
    # output would cut the link while the daemons start, which mpirun waits for unbounded)
    timeout -k 10 300 "$MPIRUN" -n 4 "$SCALELAB" train --model tiny --steps 100000 --json \
        --transport mpi --deadline 5 >"$T_TMP/cut.out" 2>"$T_TMP/err" </dev/null &
    job=$!
    i=0 # the first step's line, or the run's end: polled, at most 300 s
    while [ ! -s "$T_TMP/cut.out" ] && kill -0 $job 2>/dev/null && [ $i -lt 3000 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if [ -s "$T_TMP/cut.out" ]; then
        ip -n "$ns1" link set eth0 down
        wait $job
        status=$?
        err=$(cat "$T_TMP/err")
        check_status 1 "host 1's link cut: every rank stops"
        check_contains "$err" "waited 5 s for " "the deadline is named"
        check_contains "$err" "is on host $h1, GPU" "the GPU waited for is named with its host ($h1)"
        check_contains "$(printf '%s\n' "$err" | grep -E 'GPU [0-9] is on host')" "on host $h0" "by a rank of host 0 ($h0)"
        i=0 # host 1's daemon and ranks end with it: polled, at most 60 s
        while [ -n "$(ip netns pids "$ns1")" ] && [ $i -lt 600 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        check_eq "$(ip netns pids "$ns1" | xargs)" "" "no process is left on host 1"
    else
        kill -TERM $job 2>/dev/null
        wait $job
        not_ok "the run to cut did not start a step" "$(cat "$T_TMP/err")"
    fi

    echo "$T_N $T_FAILED" >"$HOSTS_TAP_STATE"
    exit 0
fi

# ------------------------------------------------------------------ here: scripts/hosts itself
# (a job started with & ignores SIGINT in sh; python puts the default back for the SIGINT case)
default_int() { exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }

# the MPI runs, on 2 hosts
export HOSTS_TAP_STATE=$T_TMP/tap HOSTS_T_N=$T_N
"$HOSTS" --hosts 2 --slots 2 --rate 1gbit -- sh "$0" >"$T_TMP/inner" 2>"$T_TMP/hosts.err" &
hp=$!
trap 'kill -TERM $hp 2>/dev/null; wait $hp; exit 143' TERM INT HUP
wait $hp
status=$?
trap - TERM INT HUP
cat "$T_TMP/inner"
if [ -s "$HOSTS_TAP_STATE" ]; then read T_N T_FAILED <"$HOSTS_TAP_STATE"; else
    T_FAILED=$((T_FAILED + 1)); not_ok "the test on host 0 did not finish" "$(cat "$T_TMP/hosts.err")"; fi
check_eq "$status" 0 "scripts/hosts ends with its command's status"
check_contains "$(cat "$T_TMP/hosts.err")" "2 hosts (sl$hp-h0 sl$hp-h1; 10.36.0.1 10.36.0.2)" "scripts/hosts says what it made"
check_eq "$(gone sl$hp)" "" "after a normal end: no namespace, no link left"

# a command that fails: its status, and nothing left
"$HOSTS" --hosts 3 --rate 100mbit -- sh -c 'echo $$ >"$0"; exit 3' "$T_TMP/pid" 2>/dev/null &
hp=$!
wait $hp
check_eq "$?" 3 "a failing command's status comes back"
check_eq "$(gone sl$hp)" "" "after a failing command: no namespace, no link left"

# SIGINT: sent once the command runs (its PID written), everything ended and removed
rm -f "$T_TMP/pid"
default_int "$HOSTS" --hosts 2 --rate none -- sh -c 'echo $$ >"$0.tmp"; mv "$0.tmp" "$0"; exec sleep 600' \
    "$T_TMP/pid" 2>/dev/null &
hp=$!
i=0 # the command's PID, or the script's end: polled, at most 60 s
while [ ! -s "$T_TMP/pid" ] && kill -0 $hp 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -INT $hp
wait $hp
check_eq "$?" 130 "SIGINT ends scripts/hosts (exit 130)"
check_eq "$(gone sl$hp)" "" "after SIGINT: no namespace, no link left"
pid=$(cat "$T_TMP/pid" 2>/dev/null)
if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then ok "after SIGINT: the command on host 0 has ended"
else not_ok "after SIGINT: the command on host 0 (PID '$pid') still runs or never started"; fi

# refusals: bad options and a user who is not root, exit 2 with the reason
for bad in "--hosts 1:--hosts: 2 to 16 hosts" "--rate fast:--rate: a rate as tc writes it" \
    "--delay soon:--delay: a time as tc writes it" "--slots 0:--slots: 1 to 64"; do
    "$HOSTS" ${bad%%:*} true >/dev/null 2>"$T_TMP/err"
    status=$? err=$(cat "$T_TMP/err")
    check_status 2 "scripts/hosts ${bad%%:*} is refused"
    check_contains "$err" "${bad#*:}" "scripts/hosts ${bad%%:*}: the message names the option and what it takes"
done
# a delay where the kernel has no netem: refused before anything is made (exit 2, the reason);
# where it has netem, host 0's link sends after the delay (its qdiscs, read on host 0)
if unshare --net tc qdisc add dev lo root netem delay 1ms 2>/dev/null; then
    "$HOSTS" --delay 5ms -- tc qdisc show >"$T_TMP/out" 2>"$T_TMP/err"
    status=$? out=$(cat "$T_TMP/out") err=$(cat "$T_TMP/err")
    check_status 0 "scripts/hosts --delay 5ms"
    check_contains "$out" "netem 1: root" "host 0's link has netem at its root"
    check_contains "$out" "delay 5ms" "and its delay is 5 ms"
else
    "$HOSTS" --delay 1ms true >/dev/null 2>"$T_TMP/err"
    status=$? err=$(cat "$T_TMP/err")
    check_status 2 "scripts/hosts --delay on a kernel without netem is refused"
    check_contains "$err" "--delay: this kernel has no netem" "and says why, and what to do"
fi
if command -v setpriv >/dev/null 2>&1; then # (util-linux; as user nobody)
    setpriv --reuid=65534 --regid=65534 --clear-groups sh "$HOSTS" true >/dev/null 2>"$T_TMP/err"
    status=$? err=$(cat "$T_TMP/err")
    check_status 2 "scripts/hosts refuses a user who is not root"
    check_contains "$err" "needs root" "and says it needs root"
else
    ok "# SKIP no setpriv to run scripts/hosts as a user who is not root"
fi

done_testing
