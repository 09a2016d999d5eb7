#!/bin/sh
# scalelab collective: JSON fields, byte counts, verification, --steps, --fail, --trace, --sweep,
# bad options.
. "$srcdir/tests/lib.sh"

run collective --gpus 4 --size 4MiB --json
check_status 0 "ring all-reduce, 4 GPUs, 4 MiB"
check_json "set(['op','algo','gpus','size','dtype','verified','max_rel_error','bytes_sent_per_gpu','bytes_sent_total','steps','predicted_time_s','wall_time_s','algbw_GBps','busbw_GBps']) <= set(d)" "JSON has the issue's fields"
check_json "d['op']=='allreduce' and d['algo']=='ring' and d['gpus']==4 and d['size']==4194304 and d['dtype']=='fp32'" "JSON echoes the run"
check_json "d['verified'] is True and d['max_rel_error'] <= 3*2**-24" "verified within (N-1) u_fp32"
check_json "d['bytes_sent_total'] == 2*3*4194304" "ring all-reduce sends exactly 2(N-1) x size"
check_json "all(abs(b - 2*3/4*4194304) <= 4 for b in d['bytes_sent_per_gpu'])" "each GPU sends 2(N-1)/N x size"
check_json "d['steps'] == 6" "2(N-1) steps"
# α-β on h100-80gb: 6 x 2 us + 2*3/4 * 4 MiB / 450e9
check_json "abs(d['predicted_time_s'] - (6*2e-6 + 1.5*4194304/450e9)) < 1e-12" "predicted time is the α-β formula"
check_json "abs(d['algbw_GBps'] - 4194304/d['simulated_time_s']/1e9) < 1e-6*d['algbw_GBps'] and abs(d['busbw_GBps'] - d['algbw_GBps']*1.5) < 1e-6*d['busbw_GBps']" "algbw and busbw as nccl-tests defines them"

# The run around the collective: its parts' wall times and the host's peak memory beside the
# buffers. The GPUs fill and check their own buffers; nothing in proportion to the buffers is
# kept besides them (memory at most 1.2x theirs, as the help promises; sanitizer builds add
# their shadow memory and are not held to it).
run collective --gpus 8 --size 32MiB --json
check_json "d['verified'] and d['setup_wall_time_s'] > 0 and d['check_wall_time_s'] > 0 and d['run_wall_time_s'] >= d['setup_wall_time_s'] + d['wall_time_s'] + d['check_wall_time_s']" "the run's parts: setup, collective, check"
check_json "d['buffer_bytes'] == 8 * 32 * 2**20 and d['host_peak_bytes'] >= d['buffer_bytes']" "the buffers and the host's peak memory"
if $sanitized; then
    ok "# SKIP the memory bound under a sanitizer"
else
    check_json "d['host_peak_bytes'] <= 1.2 * d['buffer_bytes']" "host memory at most 1.2x the buffers"
fi
check_eq "$err" "" "no progress line when standard error is no terminal"
run collective --gpus 4 --size 1MiB --op reduce-scatter --json --progress
check_json "d['verified']" "--progress leaves the JSON whole"
for part in "allocating the buffers" "filling the buffers" "the collective" "checking the result"; do
    check_contains "$err" "scalelab: collective: $part" "--progress: a line as '$part' begins"
done

# uneven counts: 7 GPUs, 1001 elements: the total is still exact, shares within one element
run collective --gpus 7 --size 4004 --json
check_status 0 "7 GPUs, 1001 elements"
check_json "d['bytes_sent_total'] == 2*6*4004 and all(abs(b - 12/7*4004) <= 4 for b in d['bytes_sent_per_gpu'])" "uneven chunks: exact total, shares up to one element"

for op in allreduce reduce-scatter allgather broadcast reduce; do
    for dt in fp32 bf16 fp16; do
        run collective --op $op --gpus 5 --size 6000 --dtype $dt --algo auto --json
        check_json "d['verified'] is True" "$op $dt on 5 GPUs, algo auto, verified"
    done
done

run collective --gpus 4 --size 4MiB
check_status 0 "text output"
check_contains "$out" "2(N-1)/N x size" "the per-GPU share is shown beside its formula"
check_contains "$out" "2(N-1) x size = 25165824" "the total is shown beside 2(N-1) x size"
check_contains "$out" "busbw" "text shows busbw"

run collective --gpus 3 --size 36 --steps
check_contains "$out" "step 0 (reduce-scatter)" "--steps shows the reduce-scatter steps"
check_contains "$out" "GPU 0 -> GPU 1: chunk 2" "--steps: GPU 0 sends chunk 2 first"
check_contains "$out" "step 3 (all-gather)" "--steps shows the all-gather steps"

run collective --gpus 4 --size 64KiB --nodes 2 --json
check_json "d['gpus_per_node'] == 2 and d['verified']" "--nodes 2 splits 4 GPUs into 2 per node"
check_json "abs(d['predicted_time_s'] - (6*5e-6 + 1.5*65536/50e9)) < 1e-12" "across nodes the inter-node link sets the pace"
# a tree's steps are the moments its messages arrive: --steps prints as many as --json counts
# (and lesson 3's panel shows); its algorithm's rounds, where --fail stops a GPU, apart
run collective --gpus 8 --size 64KiB --algo tree --json
tree_steps=$(printf '%s' "$out" | python3 -c "import json, sys; d = json.load(sys.stdin); print(d['steps'], d['rounds'])")
run collective --gpus 8 --size 64KiB --algo tree --steps
check_eq "$(printf '%s\n' "$out" | grep -c '^step [0-9]* (') ${tree_steps#* }" "${tree_steps% *} ${tree_steps#* }" \
    "the tree: --steps prints the steps --json counts"
# the text names the GPUs per node --json gives (the preset's, not the ones in use)
run collective --gpus 4 --size 1MiB --json
per=$(printf '%s' "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['gpus_per_node'])")
run collective --gpus 4 --size 1MiB
check_contains "$out" "$per GPUs per node, 1 node" "text and JSON: the same GPUs per node"

run collective --gpus 16 --size 1MiB --fail 7@3
check_status 1 "--fail ends the run"
check_contains "$err" "GPU 7: failed at step 3" "--fail names the GPU and the step"

run collective --gpus 4 --size 4KiB --fail 2@1 --events "$T_TMP/ev.jsonl"
check_status 1 "--events with --fail"
if python3 -c "
import json,sys
ev=[json.loads(l) for l in open(sys.argv[1])]
assert all({'type','device','seq','t'} <= set(e) for e in ev)
assert all((a['t'],a['device'],a['seq']) <= (b['t'],b['device'],b['seq']) for a,b in zip(ev,ev[1:]))
assert [e['device'] for e in ev if e['type']=='fail'] == [2]
sends={e['msg'] for e in ev if e['type']=='send'}; recvs={e['msg'] for e in ev if e['type']=='recv'}
assert recvs <= sends
" "$T_TMP/ev.jsonl" 2>"$T_TMP/pyerr"; then ok "--events writes JSON lines in (time, GPU, sequence) order, the failure included"
else not_ok "--events JSON lines" "$(cat "$T_TMP/pyerr")"; fi

run collective --gpus 4 --size 64KiB --trace "$T_TMP/t.json"
check_status 0 "--trace"
if python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
ev=d['traceEvents']
names={e['args']['name'] for e in ev if e['ph']=='M' and e['name']=='process_name'}
assert names=={'GPU 0','GPU 1','GPU 2','GPU 3'}, names
x=[e for e in ev if e['ph']=='X' and e.get('cat')=='comm']
assert len(x)==2*4*6, len(x)
s={e['id'] for e in ev if e['ph']=='s'}; f={e['id'] for e in ev if e['ph']=='f'}
assert s==f and len(s)==24
assert all('pid' in e and (e['ph']=='M' or isinstance(e['ts'],(int,float))) for e in ev)
assert any(e['ph']=='C' for e in ev)
" "$T_TMP/t.json" 2>"$T_TMP/pyerr"; then ok "--trace writes Chrome trace-event JSON: a process per GPU, slices, flows, counters"
else not_ok "--trace shape" "$(cat "$T_TMP/pyerr")"; fi
ls "$T_TMP" | grep -q tmp && not_ok "no temporary file left" || ok "no temporary file left"

# slices on one track must nest (Perfetto draws them as a stack): a double binary tree, whose
# two trees run on two streams, included
run collective --gpus 6 --size 1MiB --algo dbtree --trace "$T_TMP/d.json"
if python3 -c "
import json,sys,collections
ev=json.load(open(sys.argv[1]))['traceEvents']
tracks=collections.defaultdict(list)
for e in ev:
    if e['ph']=='X': tracks[(e['pid'],e['tid'])].append((e['ts'],e['ts']+e['dur']))
for k,xs in tracks.items():
    stack=[]
    for a,b in sorted(xs, key=lambda x:(x[0],-x[1])):
        while stack and stack[-1] <= a + 1e-9: stack.pop()
        assert not stack or b <= stack[-1] + 1e-9, (k,a,b,stack[-1])
        stack.append(b)
" "$T_TMP/d.json" 2>"$T_TMP/pyerr"; then ok "--trace: slices nest on every track (dbtree on two streams)"
else not_ok "--trace nesting" "$(cat "$T_TMP/pyerr")"; fi

run collective --gpus 8 --sweep --size 4MiB
check_status 0 "--sweep"
check_contains "$out" "crossover between" "--sweep finds the ring/tree crossover"

# all-to-all: every GPU's received blocks checked, (N-1)/N x size sent by each (its own block
# stays), N-1 steps, nccl-tests' busbw factor (N-1)/N; direct posts every send in one round
run collective --op alltoall --gpus 6 --size 6MiB --json
check_json "d['op']=='alltoall' and d['algo']=='pairwise' and d['verified'] is True and d['max_rel_error']==0" "alltoall: pairwise by default, verified exactly"
check_json "d['bytes_sent_total']==5*6*2**20 and all(b==5*2**20 for b in d['bytes_sent_per_gpu'])" "alltoall: each GPU sends (N-1)/N x size"
check_json "d['steps']==5 and d['rounds']==5 and abs(d['busbw_factor']-5/6)<1e-9" "alltoall: N-1 steps, busbw factor (N-1)/N (to JSON's 10 digits)"
check_json "abs(d['predicted_time_s']-5*(2e-6+2**20/450e9))<1e-9*d['predicted_time_s'] and d['simulated_time_s']==d['predicted_time_s']" "alltoall on one node: (N-1)(α + S/(Nβ)), simulated as predicted"
check_json "abs(d['busbw_GBps']-d['algbw_GBps']*5/6)<1e-6*d['busbw_GBps']" "alltoall: busbw = algbw x (N-1)/N"
pair=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['result_digest'])")
run collective --op alltoall --algo direct --gpus 6 --size 6MiB --json
check_json "d['algo']=='direct' and d['verified'] and d['rounds']==1 and d['steps']==5 and d['result_digest']=='$pair'" "direct: the same blocks, one round, the same 5 arrival moments"
run collective --op alltoall --algo direct --gpus 12 --size 12MiB --json
d12=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['simulated_time_s'])")
run collective --op alltoall --gpus 12 --size 12MiB --json
check_json "d['simulated_time_s']==d['predicted_time_s'] and d['simulated_time_s'] > $d12" "across two nodes the schedule decides: pairwise's steps wait for their slowest pair, direct is faster"
run collective --op alltoall --gpus 4 --size 4KiB --steps
check_status 0 "alltoall --steps"
check_contains "$out" "GPU 3 -> GPU 1: chunk 1" "alltoall --steps: in step 1 GPU 3 sends GPU 1 its block"
check_contains "$out" "every block but its own" "the text says why (N-1)/N"
run collective --op alltoall --gpus 3 --size 1000
check_status 2 "alltoall of a size N does not split"
check_contains "$err" "996 or 1008 bytes" "the refusal gives the sizes that split"
run collective --op alltoall --algo rhd
check_status 2 "alltoall by rhd"
check_contains "$err" "pairwise or direct" "the refusal names alltoall's algorithms"
run collective --op alltoall --gpus 3 --sweep --size 64KiB --json
check_json "d['other']=='direct' and all(r['size'] % 12 == 0 and r['pairwise_s']==r['pairwise_predicted_s'] and r['other_s']==r['other_predicted_s'] for r in d['sizes'])" "alltoall --sweep: sizes rounded to 3 blocks, pairwise against direct, simulated as predicted"

# bad options: exit 2, the option named
run collective --gpus 0
check_status 2 "0 GPUs"
check_contains "$err" "--gpus" "0 GPUs: the option is named"
run collective --gpus 257
check_status 2 "257 GPUs"
run collective --size -1MiB
check_status 2 "negative size"
check_contains "$err" "--size" "negative size: the option is named"
run collective --size lots
check_status 2 "unparsable size"
run collective --size 10
check_status 2 "a size that is not whole fp32 elements"
check_contains "$err" "whole number of fp32 elements" "the element size is explained"
run collective --op alltogether
check_status 2 "unknown op"
check_contains "$err" "alltogether" "unknown op named"
check_contains "$err" "alltoall" "the ops are listed"
run collective --algo butterfly
check_status 2 "unknown algorithm"
run collective --dtype fp64
check_status 2 "unknown dtype"
run collective --dtype e4m3
check_status 2 "fp8 is not a collective dtype"
run collective --cluster nosuch
check_status 2 "unknown preset"
check_contains "$err" "nosuch" "unknown preset named"
run collective --gpus 4 --fail 4@0
check_status 2 "failing GPU that does not exist"
check_contains "$err" "no GPU 4" "the missing GPU is named"
run collective --gpus 4 --fail 1@99
check_status 2 "failing step that does not exist"
run collective --gpus 4 --fail x
check_status 2 "unparsable --fail"
run collective --op allgather --algo rhd --gpus 6
check_status 2 "rhd all-gather on 6 GPUs"
check_contains "$err" "power-of-two" "rhd needs a power of two"
run collective --op broadcast --algo dbtree
check_status 2 "dbtree broadcast"
run collective --gpus 3 --nodes 2
check_status 2 "--nodes that does not divide the GPUs"

done_testing
