#!/bin/sh
# train --transport mpi: the trainer with one GPU per MPI rank (2 and 4 ranks on this machine)
# gives the run of --gpus N bit for bit: every step's loss, norm, scale, verdict and bytes,
# the summary's ledger peaks and bytes sent per GPU, the simulated times, the pipeline's
# operations. Only the wall time may differ. DDP, ZeRO 1-3, tensor (and sequence) parallelism,
# pipelines and their mix; a non-finite run stopped the same way. --fail, a rank gone silent
# and a rank that dies end every rank with a message naming the GPU; one rank, a --gpus that
# is not the ranks, ranks started with other arguments, --trace and --dump are refused with
# one message (exit 2).
. "$srcdir/tests/lib.sh"

mpi_setup
steps=4

# What must be the same: every field of every line but the host's seconds and what names the
# transport.
SAME='
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
b = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
host = {"seconds", "tokens_per_s", "gflops", "transport", "ranks", "hosts"}
def strip(d):
    d = d.get("summary", d)
    return {k: v for k, v in d.items() if k not in host}
bad = [] if len(a) == len(b) else ["%d lines on threads, %d over MPI" % (len(a), len(b))]
for i, (x, y) in enumerate(zip(a, b)):
    x, y = strip(x), strip(y)
    bad += ["line %d: %s: %s, over MPI %s" % (i + 1, k, str(x.get(k))[:80], str(y.get(k))[:80])
            for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
s = b[-1]["summary"]
if s.get("transport") != "mpi" or s.get("ranks") != len(s["per_gpu"]):
    bad.append("the summary does not say it ran over %d MPI ranks" % len(s["per_gpu"]))
print("\n".join(bad[:6]))
'

# same N WHAT ARGS...: the run on N ranks against the same run on N thread-GPUs.
same() {
    n=$1 what=$2; shift 2
    run train --model tiny --steps $steps --json --gpus "$n" "$@"
    printf '%s\n' "$out" >"$T_TMP/thread.jsonl"
    mrun "$n" train --model tiny --steps $steps --json --transport mpi "$@"
    if [ "$status" -ne 0 ]; then not_ok "$what: $n ranks (exit $status)" "$err"; return; fi
    printf '%s\n' "$out" >"$T_TMP/mpi.jsonl"
    diff=$(python3 -c "$SAME" "$T_TMP/thread.jsonl" "$T_TMP/mpi.jsonl" 2>&1)
    if [ -z "$diff" ]; then ok "$what: $n ranks give the run of $n thread-GPUs bit for bit"
    else not_ok "$what: $n ranks differ from $n thread-GPUs" "$diff"; fi
}

same 2 "DDP fp32" --precision fp32
# (quick: tests/as_cpu.sh's other CPUs, and the sanitizers: one of each kind)
if $quick; then
    same 4 "ZeRO-3 bf16" --zero 3 --precision bf16
    same 4 "tp 2 x dp 2, sequence parallel, bf16" --tp 2 --sequence-parallel --precision bf16
    same 4 "pp 2 x dp 2, ZeRO-1" --pp 2 --micro-batches 2 --zero 1 --precision bf16
    same 4 "cp 2 x tp 2, bf16" --cp 2 --tp 2 --precision bf16
    same 4 "experts over 2 ranks of 4, ZeRO-1" --experts 4 --capacity-factor 2 --ep 2 --zero 1
else
    same 4 "DDP bf16" --precision bf16
    same 4 "ZeRO-1 bf16" --zero 1 --precision bf16
    same 4 "ZeRO-2 fp16, 64 KiB buckets" --zero 2 --bucket 64KiB --precision fp16
    same 2 "ZeRO-2 bf16, fp32 gradients" --zero 2 --precision bf16 --grad-accum fp32
    same 4 "ZeRO-3 bf16" --zero 3 --precision bf16
    same 2 "ZeRO-3 without prefetch" --zero 3 --prefetch 0
    same 4 "DDP fp16, inf injected on GPU 3" --precision fp16 --inject inf@2:gpu=3
    same 2 "tp 2" --tp 2
    same 4 "tp 2 x dp 2, sequence parallel, bf16" --tp 2 --sequence-parallel --precision bf16
    same 2 "pp 2, 1F1B, 4 micro-batches" --pp 2 --micro-batches 4
    same 2 "pp 2, GPipe" --pp 2 --micro-batches 2 --schedule gpipe
    same 4 "pp 2 x dp 2, ZeRO-1" --pp 2 --micro-batches 2 --zero 1 --precision bf16
    same 4 "pp 4, ZB-H1 (B and W apart), bf16" --pp 4 --micro-batches 8 --schedule zb-h1 --precision bf16
    same 2 "cp 2, ring attention" --cp 2
    same 4 "cp 2 x tp 2, bf16" --cp 2 --tp 2 --precision bf16
    same 4 "experts over 2 ranks of 4, ZeRO-1" --experts 4 --capacity-factor 2 --ep 2 --zero 1
    same 4 "dropless experts over 2 ranks of 4" --experts 4 --ep 2
fi

numeric_done # (tests/as_cpu.sh: what follows is the same on every CPU)

# The wire's clock at the wire (tests/unit/wire_fanin.c): GPUs 1 and 2 send 1 MiB each to GPU 0
# at once; GPU 0's incoming link takes GPU 1's bytes first, so GPU 2's arrival, and its clock
# once its send is done, is later by their crossing, m / beta: GPU 1 at alpha + m / beta, GPU 2
# at alpha + 2 m / beta (1e-12 relative: double rounding). Over MPI the receiver tells each
# sender the arrival it booked: the three ranks' lines are the threads' (a sender that kept
# the arrival it computed itself would say alpha + m / beta for GPU 2).
fanin=./tests/unit/wire_fanin
if [ -x "$fanin" ]; then
    "$fanin" threads >"$T_TMP/fanin.threads" 2>&1
    check_eq "$?" 0 "wire_fanin on threads"
    PYCODE="
import re
text = open(T + '/fanin.threads').read()
a, b, m = [float(x) for x in re.match(r'alpha ([^,]+), beta ([^,]+), message ([0-9]+)', text).groups()]
t = {int(g): float(c) for g, c in re.findall(r'GPU ([0-9]): clock ([^,]+),', text)}
near = lambda x, y: abs(x - y) <= 1e-12 * abs(y)
assert near(t[1], a + m / b) and near(t[2], a + 2 * m / b) and near(t[0], t[2]), (t, a, b, m)
" py "threads: GPU 2's message arrives after GPU 1's bytes crossed GPU 0's link, and GPU 2's clock says so"
    timeout 300 "$MPIRUN" $MPI_ROOT_FLAG --oversubscribe -n 3 "$fanin" mpi >"$T_TMP/fanin.mpi" 2>"$T_TMP/fanin.err" </dev/null
    check_eq "$?" 0 "wire_fanin over 3 MPI ranks"
    check_eq "$(sort "$T_TMP/fanin.mpi")" "$(grep '^GPU' "$T_TMP/fanin.threads")" \
        "over MPI: each sender's clock is the arrival its receiver booked, as on threads"
else
    ok "# SKIP tests/unit/wire_fanin is not built here"
fi

# text: the same lines, and the wall time's line says where it ran; rank 0 alone prints
run train --model tiny --steps 6 --gpus 2 --zero 1
printf '%s\n' "$out" | grep -v ' wall; ' >"$T_TMP/thread.txt"
mrun 2 train --model tiny --steps 6 --transport mpi --zero 1
check_status 0 "text on 2 ranks"
printf '%s\n' "$out" | grep -v ' wall; \|^over 2 MPI ranks' >"$T_TMP/mpi.txt"
check_eq "$(diff "$T_TMP/thread.txt" "$T_TMP/mpi.txt")" "" "text on 2 ranks: every line of --gpus 2 but the wall time's"
check_contains "$out" "over 2 MPI ranks on 1 host" "the summary says the run went over 2 MPI ranks"
check_eq "$(printf '%s\n' "$out" | grep -c '^final loss')" 1 "rank 0 alone prints"

# without a scaler the run stops at a non-finite loss on every rank, with the same message
run train --model tiny --steps 5 --gpus 2 --precision fp16 --loss-scale none --inject inf@2
want=$err
mrun 2 train --model tiny --steps 5 --transport mpi --precision fp16 --loss-scale none --inject inf@2
check_status 1 "a non-finite loss without a scaler stops the ranks"
check_contains "$err" "$want" "with the message of the thread-GPUs"
check_eq "$(printf '%s\n' "$err" | grep -c 'the loss is NaN')" 1 "said once"

# failures end every rank
mrun 4 train --model tiny --steps 5 --transport mpi --fail 2@3
check_status 1 "--fail 2@3 on 4 ranks"
check_contains "$err" "GPU 2: failed in step 3's gradient sync (--fail 2@3): MPI_Abort ends every rank" "--fail names the GPU and the step"
# (comm/mpi.c's test hook: that rank stops itself at its first send). Two ranks, so that the
# rank that waits is the one waiting for it: on four, the ranks downstream of a ring wait too,
# and on a busy machine one of them may reach its deadline first and name its own neighbour.
SCALELAB_MPI_STALL_RANK=1 mrun 2 train --model tiny --steps 5 --transport mpi --deadline 1
check_status 1 "a rank that stops answering ends the run"
check_contains "$err" "waited 1 s for a" "the deadline is named"
check_contains "$err" "GPU 1: is that rank running and reachable?" "the rank that did not answer is named"
# a rank that dies: mpirun sees it and ends the job...
SCALELAB_MPI_STALL=exit SCALELAB_MPI_STALL_RANK=1 mrun 4 train --model tiny --steps 5 --transport mpi --deadline 2
check_status 9 "a rank that dies ends the run with its status"
# ...and where the launcher would not, the others say so within the deadline
SCALELAB_MPI_STALL=exit SCALELAB_MPI_STALL_RANK=1 OMPI_MCA_orte_abort_on_non_zero_status=0 \
    mrun 2 train --model tiny --steps 5 --transport mpi --deadline 2
check_status 1 "a dead rank the launcher leaves alone: the others end the run"
check_contains "$err" "waited 2 s for a" "the others report it past the deadline"
check_contains "$err" "GPU 1: is that rank running and reachable?" "naming the dead rank"

# the benchmark's group runs both and sets them side by side (its figures are not checked: timings)
run bench --quick --only mpi-train --json --repeat 2
check_status 0 "bench --quick --only mpi-train"
check_json 'len(d["results"]) == 1 and all(r["group"] == "mpi-train" and r["limit"] == "thread-GPUs" and r["value"] > 0 and r["limit_value"] > 0 and r["repeats"] == 2 for r in d["results"])' "bench mpi-train: tokens/s over MPI ranks beside the thread-GPUs'"

# a GPU too small for its buffers: out of memory before the first step, on every rank
printf '[cluster]\nname = small\ngpus_per_node = 8\nnodes = 1\nhbm = 1MiB\npeak_flops = 1e12\nintra_latency = 1e-6\nintra_bandwidth = 1e11\ninter_latency = 1e-6\ninter_bandwidth = 1e10\n' >"$T_TMP/small.ini"
mrun 2 train --model tiny --transport mpi --cluster "$T_TMP/small.ini"
check_status 1 "a GPU out of memory ends every rank"
check_contains "$err" "out of memory: " "out of memory names the GPU: $(printf '%s\n' "$err" | grep -m1 '^scalelab:')"

# bad usage: refused on every rank, said once
run train --model tiny --transport mpi
check_status 2 "one MPI rank (no mpirun) is refused"
check_contains "$err" "run it under mpirun with 2 or more ranks" "the refusal says how to run it"
mrun 1 train --model tiny --transport mpi
check_status 2 "mpirun -n 1 is refused"
check_eq "$(printf '%s\n' "$err" | grep -c '^scalelab:')" 1 "mpirun -n 1: one message"
mrun 2 train --model tiny --transport mpi --gpus 4
check_status 2 "--gpus 4 on 2 ranks"
check_contains "$err" "mpirun started 2 ranks, and each rank is one GPU: --gpus asks for 4" "the refusal names both counts"
check_eq "$(printf '%s\n' "$err" | grep -c '^scalelab:')" 1 "--gpus 4 on 2 ranks: one message"
mrun 2 train --model tiny --transport mpi --dp 2 --tp 2
check_status 2 "--dp 2 --tp 2 on 2 ranks"
mrun 1 train --model tiny --transport mpi --steps 3 : -n 1 "$SCALELAB" train --model tiny --transport mpi --steps 4
check_status 2 "ranks started with other arguments"
check_contains "$err" "rank 1 was started with other arguments than rank 0" "the refusal names the rank"
check_eq "$(printf '%s\n' "$err" | grep -c '^scalelab:')" 1 "other arguments: one message"
mrun 2 train --model tiny --transport mpi --batch 15
check_status 2 "a layout the thread-GPUs refuse"
check_eq "$(printf '%s\n' "$err" | grep -c '^scalelab:')" 1 "a bad layout: one message"
mrun 2 train --model tiny --transport mpi --trace "$T_TMP/t.json"
check_status 2 "--trace over MPI"
check_contains "$err" "no --trace" "--trace: the refusal says why"
run train --transport tcp
check_status 2 "an unknown transport"
check_contains "$err" "thread or mpi" "the error lists the transports"

done_testing
