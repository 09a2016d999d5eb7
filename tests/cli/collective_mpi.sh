#!/bin/sh
# collective --transport mpi: 2, 3 and 4 MPI ranks on this machine run the same algorithms as
# the thread transport (all-to-all's too), with bit-identical results and the same bytes sent by each GPU; the
# library's collectives are timed beside them; --fail and a stalled rank end every rank; one
# rank alone is refused.
. "$srcdir/tests/lib.sh"

mpi_setup

# same N WHAT ARGS...: the run on N ranks against the same run on N threads: verified, the
# same result bits (digest), the same bytes sent by each GPU, the MPI figures present.
same() {
    n=$1 what=$2; shift 2
    run collective --gpus "$n" --json "$@"
    printf '%s' "$out" >"$T_TMP/thread.json"
    mrun "$n" collective --transport mpi --json "$@"
    if [ "$status" -ne 0 ]; then not_ok "$what: $n ranks (exit $status)" "$err"; return; fi
    check_json "d['transport']=='mpi' and d['ranks']==$n and d['gpus']==$n and d['verified'] is True" "$what: $n ranks, verified"
    check_json "d['result_digest']==json.load(open('$T_TMP/thread.json'))['result_digest']" "$what: $n ranks, bit-identical to $n threads"
    check_json "d['bytes_sent_per_gpu']==json.load(open('$T_TMP/thread.json'))['bytes_sent_per_gpu']" "$what: $n ranks, each sends the bytes its thread sends"
}

for n in 2 3 4; do
    same $n "ring all-reduce fp32 (uneven chunks)" --size 40004
    same $n "rhd all-reduce fp16 (folding for 3)" --algo rhd --dtype fp16 --size 20002
done
same 3 "tree all-reduce bf16" --algo tree --dtype bf16 --size 30002
same 4 "double binary tree all-reduce" --algo dbtree --size 65536
same 3 "ring reduce-scatter bf16, 3 uneven chunks" --op reduce-scatter --dtype bf16 --size 40004
same 4 "rhd all-gather" --op allgather --algo rhd --size 65536
same 3 "tree broadcast from GPU 2" --op broadcast --algo tree --root 2 --size 30000
same 3 "ring reduce to GPU 1" --op reduce --root 1 --size 30000
for n in 2 3 4; do
    same $n "pairwise all-to-all fp32" --op alltoall --size $((n * 4004))
    same $n "direct all-to-all bf16" --op alltoall --algo direct --dtype bf16 --size $((n * 2002))
done

# all-to-all beside the library's MPI_Alltoall on the same buffers (out of place, as ours)
mrun 4 collective --transport mpi --json --op alltoall --algo direct --size 64KiB
check_json "d['verified'] and d['bytes_sent_total']==3*65536 and all(b==3*65536//4 for b in d['bytes_sent_per_gpu'])" "4 ranks: each sends (N-1)/N x size in an all-to-all"
check_json "[m['name'] for m in d['mpi']][-1]=='MPI_Alltoall' and d['mpi'][-1]['time_s']>0 and abs(d['busbw_ratio_to_library']-d['mpi'][-1]['time_s']/d['wall_time_s'])<1e-6*d['busbw_ratio_to_library']" "MPI_Alltoall is timed beside it, and the ratio is to it"
check_json "abs(d['busbw_GBps']-0.75*d['algbw_GBps'])<1e-6*d['busbw_GBps']" "all-to-all busbw = algbw x (N-1)/N on the wall time"
mrun 3 collective --transport mpi --op alltoall --size 1000
check_status 2 "an all-to-all size 3 ranks cannot split"
check_contains "$err" "do not split into 3 equal blocks" "the refusal says why"

# the exact counts, and the library beside ours
mrun 4 collective --transport mpi --json --size 4MiB
check_json "d['bytes_sent_total']==2*3*4194304 and all(b==2*3*4194304//4 for b in d['bytes_sent_per_gpu'])" "4 ranks send 2(N-1)/N x size each, as threads do"
check_json "[m['name'] for m in d['mpi']]==['MPI_Allreduce','MPI_Reduce_scatter_block','MPI_Allgather']" "the library's MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather are timed"
check_json "all(m['time_s']>0 and abs(m['algbw_GBps']-4194304/m['time_s']/1e9)<1e-6*m['algbw_GBps'] for m in d['mpi'])" "the library's algbw is S/t"
check_json "d['simulated_time_s'] is None and abs(d['algbw_GBps']-4194304/d['wall_time_s']/1e9)<1e-6*d['algbw_GBps'] and abs(d['busbw_GBps']-1.5*d['algbw_GBps'])<1e-6*d['busbw_GBps']" "algbw and busbw on the real wall time"
check_json "abs(d['busbw_ratio_to_library']-d['mpi'][0]['time_s']/d['wall_time_s'])<1e-6*d['busbw_ratio_to_library']" "the ratio to MPI_Allreduce is the ratio of their times (to the JSON's 9 digits)"
mrun 3 collective --transport mpi --json --op allgather --size 40004
check_json "[m['name'] for m in d['mpi']][1:]==['MPI_Reduce_scatter','MPI_Allgatherv']" "uneven chunks go through the v-variants"

mrun 2 collective --transport mpi --size 1MiB
check_status 0 "text report on 2 ranks"
check_contains "$out" "on 2 MPI ranks" "the report says it ran on MPI ranks"
check_contains "$out" "MPI_Allreduce" "the report shows MPI_Allreduce beside the ring"
check_contains "$out" "busbw is" "the report gives the ratio to the library"
check_eq "$(printf '%s\n' "$out" | grep -c 'verified')" 1 "rank 0 alone prints the report"

# failures end every rank
mrun 4 collective --transport mpi --size 1MiB --fail 2@1
check_status 1 "--fail 2@1 on 4 ranks"
check_contains "$err" "GPU 2: failed at step 1" "--fail names the GPU and the step"
# (comm/mpi.c's test hook: that rank stops itself before its first send)
export SCALELAB_MPI_STALL_RANK=1
mrun 3 collective --transport mpi --size 64KiB --deadline 1
unset SCALELAB_MPI_STALL_RANK
check_status 1 "a rank that stops answering ends the run"
# (GPU 0 waits for GPU 1 to take its send, GPU 2 for GPU 1's message: whichever gives up first
# ends the run)
check_contains "$err" "waited 1 s for a" "the deadline is named"
check_contains "$err" "GPU 1: is that rank running and reachable?" "the deadline names the rank that did not answer"

# one rank is no collective: it sends nothing, so its time and bandwidths would be ratios of
# zeros; refused before any figure, with or without mpirun
run collective --transport mpi --json
check_status 2 "one MPI rank (no mpirun) is refused"
check_contains "$err" "run it under mpirun with 2 or more ranks" "the refusal says how to run it"
check_eq "$out" "" "no report of a run that sends nothing"
mrun 1 collective --transport mpi --size 1MiB
check_status 2 "mpirun -n 1 is refused"
check_contains "$err" "run it under mpirun with 2 or more ranks" "mpirun -n 1: the same reason"
check_not_contains "$out" "busbw" "mpirun -n 1: no bandwidth printed"

# bad usage
mrun 2 collective --transport mpi --gpus 3
check_status 2 "--gpus disagrees with mpirun -n"
check_contains "$err" "mpirun started 2 ranks" "the error says how many ranks mpirun started"
run collective --transport mpi --sweep
check_status 2 "--sweep reads the simulated cluster"
run collective --transport tcp
check_status 2 "an unknown transport"
check_contains "$err" "thread or mpi" "the error lists the transports"
run collective --repeat 3
check_status 2 "--repeat without MPI"

done_testing
