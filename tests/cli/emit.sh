#!/bin/sh
# plan --emit and memory --emit against DeepSpeed's, Megatron-LM's and PyTorch FSDP's own rules
# (tests/framework_rules.py: a table written from their source, each rule citing its file).
# Every export breaks none of them; the layout the framework will run with the settings
# written, worked out from those settings alone, has the figure the export's heading predicts
# (`scalelab memory` for it) and keeps the GPUs and the global batch asked; a layout the
# framework cannot run is refused with its reason; one that does not fit is not written unless
# forced. Where PyTorch is installed, torchrun's own parser reads the launch lines and the
# FSDP snippet's checkpointing runs on a toy model.
. "$srcdir/tests/lib.sh"
threadless "the exports are computed on one thread"

RULES="$srcdir/tests"

# exports: python3 reads CASES, one per line: "FRAMEWORK<TAB>GPUS<TAB>BATCH<TAB>ARGS" (BATCH
# the global batch asked, or -), runs scalelab ARGS, and prints a verdict per case (PASS or
# FAIL, what, why): the export written (exit 0), no rule broken, the heading's `scalelab
# memory` options giving the same per-GPU figures as the options the framework's reading
# gives, the heading's figure theirs, dp x tp x pp = GPUS and the global batch BATCH.
exports() {
    printf '%s\n' "$1" >"$T_TMP/cases"
    python3 - "$RULES" "$SCALELAB" "$T_TMP" >"$T_TMP/verdicts" 2>&1 <<'PY' || echo "FAIL|the checker|$(tr '\n' ' ' <"$T_TMP/verdicts")" >>"$T_TMP/verdicts"
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
import framework_rules as R
exe, tmp = sys.argv[2], sys.argv[3]

def fmt(b):  # base/units.c units_format_bytes, binary
    units, f, i = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], 1, 0
    while i < 4 and abs(b) >= f * 1024:
        f, i = f * 1024, i + 1
    return '%.0f B' % b if i == 0 else '%.2f %s' % (b / f, units[i])

def memory(opts):
    p = subprocess.run([exe, 'memory', '--json'] + opts, capture_output=True, text=True)
    assert p.returncode == 0, (opts, p.stderr)
    return json.loads(p.stdout)['per_gpu']

def check(fw, gpus, batch, args):
    p = subprocess.run([exe] + args, capture_output=True, text=True)
    assert p.returncode == 0, 'exit %d: %s' % (p.returncode, p.stderr)
    open(tmp + '/o', 'w').write(p.stdout)
    open(tmp + '/e', 'w').write(p.stderr)
    bad, runs, got_batch = {'deepspeed': R.deepspeed, 'megatron': R.megatron,
                            'fsdp': R.fsdp}[fw](p.stdout, p.stderr, gpus)
    assert not bad, bad
    opts, pred, fits = R.heading(p.stderr if fw == 'deepspeed' else p.stdout)
    assert fits, 'the heading says it does not fit'
    where = opts[opts.index('--model'):opts.index('--model') + 2]
    for k in ('--cluster', '--nodes', '--seq'):
        if k in opts and k not in runs:
            where += [k, opts[opts.index(k) + 1]]
    runs = where + [str(x) for x in runs]
    want, got = memory(opts), memory(runs)
    assert got == want, ('the framework runs', runs, got, 'the heading says', opts, want)
    assert pred == fmt(want['total']), (pred, want['total'])
    lay = dict(zip(runs[::2], runs[1::2]))
    assert int(lay['--dp']) * int(lay['--tp']) * int(lay['--pp']) * int(lay.get('--cp', 1)) == gpus, (lay, gpus)
    assert batch == '-' or got_batch == int(batch), (got_batch, batch)

for line in open(tmp + '/cases'):
    if not line.strip():
        continue
    fw, gpus, batch, args = line.rstrip('\n').split('\t')
    what = '%s: %s' % (fw, args)
    try:
        check(fw, int(gpus), batch, args.split())
        print('PASS|%s' % what)
    except AssertionError as x:
        print('FAIL|%s|%s' % (what, ' '.join(str(x).split())))
PY
    while IFS='|' read -r v what why; do
        if [ "$v" = PASS ]; then ok "$what"; else not_ok "$what" "$why"; fi
    done <"$T_TMP/verdicts"
}

TAB=$(printf '\t')
case_() { printf '%s\t%s\t%s\t%s\n' "$@"; } # FRAMEWORK GPUS BATCH ARGS

# ---- the layouts the frameworks were caught running otherwise than promised
exports "$(
    # the planner's layout on 64 A100s: Megatron-LM with its fp32 main gradients
    case_ megatron 64 256 "plan --model synthetic-7b --cluster a100-80gb --nodes 8 --emit megatron"
    # ZeRO-3 in Megatron-LM is Megatron-FSDP; ZeRO-2 its optim_grads
    case_ megatron 16 16 "memory --model synthetic-7b --gpus 16 --nodes 2 --zero 3 --checkpoint full --emit megatron"
    case_ megatron 8 64 "memory --model synthetic-7b --gpus 8 --zero 2 --precision fp16 --micro-batches 8 --emit megatron"
    # plain SGD: --sgd-momentum 0 (Megatron's default is 0.9); with momentum, its buffer
    case_ megatron 8 8 "memory --model synthetic-7b --gpus 8 --zero 1 --optimizer sgd --emit megatron"
    case_ megatron 8 8 "memory --model synthetic-7b --gpus 8 --optimizer sgd-momentum --gpu-mem 1TiB --emit megatron"
    # FSDP: every:4 is segments of 4 layers, each one unit; ZeRO-1 runs as SHARD_GRAD_OP
    case_ fsdp 8 32 "memory --model synthetic-7b --gpus 8 --zero 3 --checkpoint every:4 --micro-batches 4 --emit fsdp"
    case_ fsdp 16 16 "memory --model synthetic-7b --gpus 16 --nodes 2 --zero 1 --checkpoint selective --precision fp16 --emit fsdp"
    case_ fsdp 8 16 "memory --model synthetic-7b --gpus 8 --micro-batches 2 --gpu-mem 1TiB --emit fsdp"
    # DeepSpeed: SGD under ZeRO, fp32 accumulation, bf16 without ZeRO, tensor parallelism
    case_ deepspeed 8 8 "memory --model synthetic-7b --gpus 8 --zero 2 --optimizer sgd --emit deepspeed"
    case_ deepspeed 8 8 "memory --model synthetic-7b --gpus 8 --zero 1 --grad-accum fp32 --emit deepspeed"
    case_ deepspeed 8 8 "memory --model synthetic-7b --gpus 8 --gpu-mem 1TiB --emit deepspeed"
    case_ deepspeed 16 64 "memory --model synthetic-7b --gpus 16 --nodes 2 --tp 2 --pp 2 --zero 1 --precision fp16 --micro-batch 2 --micro-batches 8 --emit deepspeed"
    case_ deepspeed 16 32 "memory --model synthetic-7b --gpus 16 --nodes 2 --tp 2 --sequence-parallel --micro-batches 4 --checkpoint every:4 --emit deepspeed"
    # bf16, a pipeline and no ZeRO: DeepSpeed's BF16_Optimizer shards the optimizer (ZeRO-1)
    case_ deepspeed 8 32 "memory --model synthetic-7b --gpus 8 --pp 2 --micro-batches 8 --emit deepspeed"
    # ZeRO-3 without prefetching, in units of 2 layers: DeepSpeed turns its prefetching off and
    # fetches layers; Megatron-FSDP and FSDP prefetch their units of one layer
    case_ deepspeed 8 8 "memory --model tiny --gpus 8 --zero 3 --prefetch 0 --unit-layers 2 --emit deepspeed"
    case_ megatron 8 8 "memory --model tiny --gpus 8 --zero 3 --prefetch 0 --unit-layers 2 --emit megatron"
    case_ fsdp 8 8 "memory --model tiny --gpus 8 --zero 3 --prefetch 0 --unit-layers 2 --emit fsdp"
    # context parallelism: Megatron-LM's --context-parallel-size (the balanced split always)
    case_ megatron 8 2 "memory --model synthetic-7b --seq 8192 --checkpoint full --gpus 8 --cp 4 --zero 1 --emit megatron"
    case_ megatron 16 8 "memory --model synthetic-7b --seq 8192 --gpus 16 --nodes 2 --tp 2 --cp 2 --pp 2 --micro-batches 4 --checkpoint full --cp-naive --emit megatron"
    # expert parallelism: Megatron-LM's --expert-model-parallel-size, the experts' capacity
    # padded (--moe-pad-expert-input-to-capacity: the static shape the lab's all-to-alls send)
    case_ megatron 64 64 "memory --model mixtral-8x7b --seq 4096 --gpus 64 --nodes 8 --ep 8 --capacity-factor 1.25 --zero 1 --checkpoint full --emit megatron"
    case_ megatron 8 8 "memory --model tiny-moe --gpus 8 --ep 4 --capacity-factor 2 --emit megatron"
    # dropless (no capacity factor, as the lab trains tiny-moe): Megatron-LM's own default
    case_ megatron 8 8 "memory --model tiny-moe --gpus 8 --ep 4 --emit megatron"
    # the planner's best layout for Mixtral 8x7B on 64 H100s splits the experts 8 ways
    case_ megatron 64 256 "plan --model mixtral-8x7b --nodes 8 --seq 4096 --global-batch 256 --ep-max 8 --capacity-factor 1.25 --emit megatron"
)"

# dropless experts: no capacity, so none of the flags that set one, pad to it or drop past it
run memory --model tiny-moe --gpus 8 --ep 4 --emit megatron
check_contains "$out" "--expert-model-parallel-size 4" "dropless experts: split over 4 GPUs"
for flag in --moe-expert-capacity-factor --moe-pad-expert-input-to-capacity --moe-token-drop-policy; do
    check_not_contains "$out" "$flag" "dropless experts: no $flag (Megatron-LM's default: none, every token kept)"
done

# ---- a sweep: each framework, each ZeRO stage, pipelines, tensor parallelism, precisions,
# fp32 gradients, checkpoint policies and optimizers (one of each per layout, scattered); each
# layout is written and checked, or refused with the framework's reason (the table's)
i=0 cases="" refusals=""
policies="none selective full every:2" opts="adamw sgd sgd-momentum"
for fw in deepspeed megatron fsdp; do
    for zero in 0 1 2 3; do
        for tp in 1 2; do
            for pp in 1 2; do
                for prec in bf16 fp16 fp32; do
                    i=$((i + 1)) h=$((i * 40503 % 65536 / 16))
                    # a sanitizer build runs one layout in three
                    [ $sanitized = true ] && [ $((i % 3)) -ne 0 ] && continue
                    ckpt=$(echo $policies | cut -d' ' -f$((h % 4 + 1)))
                    opt=$(echo $opts | cut -d' ' -f$((h / 4 % 3 + 1)))
                    ga=same
                    [ $((h / 12 % 2)) -eq 0 ] && ga=fp32
                    args="memory --model tiny --gpus 8 --tp $tp --pp $pp --zero $zero --precision $prec --grad-accum $ga --checkpoint $ckpt --optimizer $opt --micro-batches 4 --emit $fw"
                    mixed=1
                    [ $prec = fp32 ] && mixed=0
                    # the table's refusals (framework_rules.py cites each)
                    why=""
                    if [ $fw = deepspeed ] && [ $pp -gt 1 ] && [ $zero -ge 2 ]; then
                        why="ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
                    elif [ $fw = deepspeed ] && [ $mixed = 1 ] && [ $ga = fp32 ] && [ $zero = 0 ]; then
                        why="unsupported mix of model_dtype and grad_accum_dtype"
                    elif [ $fw = megatron ] && [ $pp -gt 1 ] && [ $zero -ge 2 ]; then
                        why="Megatron-FSDP (--use-megatron-fsdp), which scalelab writes without a pipeline"
                    elif [ $fw = fsdp ] && { [ $tp -gt 1 ] || [ $pp -gt 1 ]; }; then
                        why="FSDP alone has no"
                    fi
                    if [ -n "$why" ]; then
                        refusals="$refusals$why$TAB$args
"
                    else
                        cases="$cases$(case_ $fw 8 $((8 / tp / pp * 4)) "$args")
"
                    fi
                done
            done
        done
    done
done
exports "$cases"
printf '%s' "$refusals" >"$T_TMP/refusals"
while IFS="$TAB" read -r why args; do
    [ -n "$args" ] || continue
    run $args
    if [ "$status" -eq 2 ] && [ -z "$out" ]; then
        check_contains "$err" "$why" "refused, nothing written: $args"
    else
        not_ok "refused, nothing written: $args" "exit $status" "$err"
    fi
done <"$T_TMP/refusals"

# ---- the table's rules one by one, where the sweep's verdict would not say which
run memory --model synthetic-7b --gpus 8 --zero 2 --optimizer sgd --emit deepspeed
check_json "d['zero_allow_untested_optimizer'] is True" "DeepSpeed: SGD under ZeRO gets zero_allow_untested_optimizer"
check_contains "$err" "engine.py" "DeepSpeed: the note says where ZeRO refuses it"
run memory --model synthetic-7b --gpus 8 --zero 1 --grad-accum fp32 --emit deepspeed
check_json "d['data_types'] == {'grad_accum_dtype': 'fp32'} and d['zero_optimization']['reduce_bucket_size'] == 25 * 2**20 // 4" "DeepSpeed: fp32 accumulation is data_types.grad_accum_dtype, buckets in fp32 elements"
run memory --model synthetic-7b --gpus 8 --gpu-mem 1TiB --emit deepspeed
check_json "d['data_types'] == {'grad_accum_dtype': 'bf16'} and d['bf16'] == {'enabled': True}" "DeepSpeed: bf16 without ZeRO says it accumulates in bf16 (the default changed in 0.18)"
run memory --model synthetic-7b --gpus 16 --nodes 2 --tp 2 --emit deepspeed
check_contains "$err" "deepspeed.initialize(..., mpu=...)" "DeepSpeed: tp 2 names the mpu its batch identity needs"
check_contains "$err" "get_data_parallel_world_size() is 8" "DeepSpeed: the mpu's data-parallel size"
run memory --model synthetic-7b --gpus 16 --nodes 2 --tp 2 --pp 2 --emit deepspeed
check_contains "$err" "PipeModelDataParallelTopology(num_pp=P, num_mp=T, num_dp=D)" "DeepSpeed: tp and pp: the PipelineModule's topology"
check_contains "$err" "P = 2, T = 2, D = 4" "DeepSpeed: its sizes"
run memory --model synthetic-7b --gpus 8 --pp 2 --micro-batches 8 --emit deepspeed
check_contains "$err" "ZeRO-1, not ZeRO-0: with bf16 and a pipeline DeepSpeed runs its BF16_Optimizer" "DeepSpeed: the heading says bf16 and a pipeline run the BF16_Optimizer"
run memory --model synthetic-7b --gpus 8 --zero 1 --optimizer sgd --emit megatron
check_contains "$out" "--sgd-momentum 0 " "Megatron-LM: plain SGD is --sgd-momentum 0"
run memory --model synthetic-7b --gpus 16 --nodes 2 --zero 3 --emit megatron
check_contains "$out" "--data-parallel-sharding-strategy optim_grads_params" "Megatron-LM: ZeRO-3 is Megatron-FSDP's optim_grads_params"
check_not_contains "$out" "no ZeRO-3" "Megatron-LM: no claim it has no ZeRO-3"
check_contains "$out" "--megatron-fsdp-main-grads-dtype fp32" "Megatron-LM: Megatron-FSDP's main gradients in fp32, as predicted"
check_contains "$out" "fp32 gradients: Megatron-LM accumulates and all-reduces gradients in fp32" "Megatron-LM: the heading says why the prediction counts fp32 gradients"
run memory --model synthetic-7b --gpus 8 --zero 3 --checkpoint every:4 --emit fsdp
check_contains "$out" "units of 4 layers" "FSDP: every:4's segments are 4-layer units, said so"
check_contains "$out" "--unit-layers 4" "FSDP: and predicted so"
check_not_contains "$(printf '%s\n' "$out" | grep -v '^#')" "no_sync" "FSDP: no no_sync() in the snippet"
run memory --model synthetic-7b --gpus 8 --zero 1 --emit fsdp
check_contains "$out" "sharding_strategy=ShardingStrategy.SHARD_GRAD_OP," "FSDP: ZeRO-1 runs as SHARD_GRAD_OP"
check_contains "$out" "ZeRO-2, not ZeRO-1" "FSDP: and the heading says so"
refused "FSDP: tensor parallelism is refused" "FSDP alone has no tensor parallelism" memory --model synthetic-7b --gpus 64 --nodes 8 --tp 8 --emit fsdp
check_contains "$err" "8 times this layout's global batch" "FSDP: the refusal says what tp 8 would do to the batch"
refused "DeepSpeed: context parallelism is refused" "no ring attention" memory --model synthetic-7b --gpus 8 --cp 2 --emit deepspeed
refused "FSDP: context parallelism is refused" "no context parallelism" memory --model synthetic-7b --gpus 8 --cp 2 --emit fsdp
refused "DeepSpeed: expert parallelism is refused" "set in the model's code" memory --model tiny-moe --gpus 4 --ep 2 --capacity-factor 2 --emit deepspeed
refused "FSDP: expert parallelism is refused" "no expert parallelism" memory --model tiny-moe --gpus 4 --ep 2 --capacity-factor 2 --emit fsdp
refused "DeepSpeed: ZeRO-3 with a pipeline is refused" "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" memory --model synthetic-7b --gpus 8 --pp 2 --zero 3 --emit deepspeed
check_contains "$err" "deepspeed/runtime/pipe/engine.py" "DeepSpeed: the refusal cites its source"

# ---- torchrun's spellings: underscores, which torch 1.13 and 2.x both take
run memory --model synthetic-7b --gpus 16 --nodes 2 --zero 3 --emit fsdp
check_contains "$out" "torchrun --nnodes 2 --nproc_per_node 8 --node_rank \$NODE_RANK --master_addr \$MASTER_ADDR --master_port 29500 train.py" "FSDP: torchrun in the underscore spelling"
fsdp2=$out
run memory --model synthetic-7b --gpus 16 --nodes 2 --zero 1 --emit megatron
check_contains "$out" "torchrun --nnodes 2 --nproc_per_node 8 --node_rank \$NODE_RANK --master_addr \$MASTER_ADDR --master_port 6000 pretrain_gpt.py" "Megatron-LM: torchrun in the underscore spelling"
megatron2=$out

# ---- a layout that does not fit: the heading says so, nothing else is written, exit 1;
# --force writes it
run memory --model synthetic-7b --gpus 1 --emit megatron
check_status 1 "a layout that does not fit"
check_contains "$out" "# does NOT fit: 51.23 GiB over the 80.00 GiB of each GPU; not written (--force writes it)" "the heading says by how much, and that it is not written"
check_not_contains "$out" "torchrun" "no command is written"
check_contains "$err" "--force" "standard error names --force"
run memory --model synthetic-7b --gpus 1 --emit megatron --force
check_status 0 "--force writes it"
check_contains "$out" "# does NOT fit: 51.23 GiB over the 80.00 GiB of each GPU (written anyway: --force)" "--force: the heading still says it does not fit"
check_contains "$out" "pretrain_gpt.py" "--force: the command is written"
run memory --model synthetic-7b --gpus 1 --emit deepspeed
check_status 1 "deepspeed: a layout that does not fit"
check_eq "$out" "" "deepspeed: no ds_config.json written"
check_contains "$err" "# does NOT fit" "deepspeed: the heading (standard error) says so"
run memory --model synthetic-7b --gpus 8 --force
check_status 2 "--force without --emit"
# 51.23 above is memory's own: 131.23 GiB on one 80 GiB GPU with fp32 gradients (flash
# attention, the calculator's and Megatron-LM's)
run memory --model synthetic-7b --gpus 1 --grad-accum fp32 --json
check_json "abs(d['over'] / 2**30 - 51.23) < 0.005" "(51.23 GiB over is memory's own figure for Megatron-LM's layout)"

# ---- plan --framework ranks only what the framework runs; --emit --pick K writes its K-th
for fw in deepspeed megatron fsdp; do
    run plan --model synthetic-7b --nodes 2 --framework $fw --json
    printf '%s' "$out" >"$T_TMP/plan.json"
    run plan --model synthetic-7b --nodes 2 --emit $fw --pick 3
    printf '%s\n' "$out" >"$T_TMP/out.txt"
    printf '%s\n' "$err" >"$T_TMP/err.txt"
    PYCODE="
sys.path.insert(0, '$RULES')
import framework_rules as R
l = json.load(open(T + '/plan.json'))['layouts'][2]
bad, runs, batch = getattr(R, '$fw')(open(T + '/out.txt').read(), open(T + '/err.txt').read(), 16)
assert not bad, bad
lay = dict(zip(runs[::2], runs[1::2]))
assert (lay['--dp'], lay['--tp'], lay['--pp'], lay['--zero'], lay['--micro-batch']) == (l['dp'], l['tp'], l['pp'], l['zero'], l['micro_batch']) and batch == 256, (lay, l)
opts, pred, fits = R.heading(open(T + ('/err.txt' if '$fw' == 'deepspeed' else '/out.txt')).read())
assert fits and pred == '%.2f GiB' % (l['per_gpu_bytes'] / 2**30), (pred, l)
" py "plan --emit $fw --pick 3 writes plan --framework $fw's third layout, its figure in the heading"
    PYCODE="
d = json.load(open(T + '/plan.json'))
assert d['framework'] and d['layouts'], d.keys()
if '$fw' == 'fsdp':
    assert all(l['tp'] == 1 and l['pp'] == 1 for l in d['layouts'])
    assert any('FSDP alone has no tensor parallelism' in r['reason'] for r in d['rejected'])
    assert all(l['zero'] != 1 for l in d['layouts'])
if '$fw' == 'deepspeed':
    assert all(l['pp'] == 1 or l['zero'] < 2 for l in d['layouts'])
" py "plan --framework $fw ranks only layouts $fw runs"
done
# the planner's 64 A100s for Megatron-LM: its first layout fits with fp32 gradients
run plan --model synthetic-7b --cluster a100-80gb --nodes 8 --framework megatron --json
check_json "all(l['per_gpu_bytes'] <= d['capacity'] for l in d['layouts']) and d['layouts'][0]['zero'] in (0, 1, 2, 3)" "plan --framework megatron: every layout fits as Megatron-LM runs it"

# ---- PyTorch, where installed (python3-torch): its own source and parser (Python alone, on
# an export the lines above wrote: the sanitizer builds leave it to the normal build)
tpy=$($sanitized || torch_python)
torch_dir=$([ -n "$tpy" ] && "$tpy" -c "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])" 2>/dev/null)
if [ -n "$torch_dir" ] && [ -d "$torch_dir/distributed/fsdp" ]; then
    # torchrun's own argument parser (torch/distributed/run.py) reads both launch lines
    for line in "$(printf '%s\n' "$fsdp2" | grep '^torchrun')" "$(printf '%s\n' "$megatron2" | grep '^torchrun' | sed 's/ \\$//')"; do
        if NODE_RANK=1 MASTER_ADDR=node0 "$tpy" - "$line" >"$T_TMP/tr" 2>&1 <<'PY'
import os, shlex, sys
from torch.distributed.run import get_args_parser
words = shlex.split(os.path.expandvars(sys.argv[1]))[1:]
a = get_args_parser().parse_args(words)
assert (a.nnodes, a.nproc_per_node, a.node_rank, a.master_addr) == ('2', '8', 1, 'node0'), a
assert a.training_script in ('train.py', 'pretrain_gpt.py'), a
PY
        then ok "torchrun's own parser reads: ${line%% train.py*}"; else not_ok "torchrun's own parser reads: $line" "$(cat "$T_TMP/tr")"; fi
    done
    # every name the snippet takes from torch is in this PyTorch's source
    run memory --model synthetic-7b --gpus 8 --zero 3 --checkpoint every:4 --precision fp16 --emit fsdp
    printf '%s\n' "$out" >"$T_TMP/fsdp.txt"
    PYCODE="
import ast, glob, re
out = open(T + '/fsdp.txt').read()
src = out[out.index('import functools'):]
torch = ''.join(open(f).read() for d in ('distributed/fsdp', 'distributed/algorithms/_checkpoint') for f in glob.glob('$torch_dir/' + d + '/*.py'))
tree = ast.parse(src)
members = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ('ShardingStrategy', 'BackwardPrefetch', 'CheckpointImpl')}
kws = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'id', '') != 'partial' for k in n.keywords}
imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith('torch.distributed') for a in n.names}
missing = [m for m in members if not re.search(r'\\n\\s+%s = auto\\(\\)' % m, torch)]
missing += [k for k in kws | {'transformer_layer_cls'} if not re.search(r'\\b%s\\s*[:=]' % k, torch)]
missing += [i for i in imported if not re.search(r'(def|class) %s\\b' % i, torch)]
assert not missing, missing
" py "FSDP: every name the snippet uses is in this PyTorch's source ($torch_dir)"
    # the snippet's checkpointing, run: FSDP itself needs GPUs and a process group (and
    # Debian 12's torch 1.13 FSDP does not import on Python 3.11), so its four names are
    # stand-ins that record their arguments; checkpoint_wrapper and torch's checkpoint are
    # real. A toy of 10 layers: segments of 4, 4 and 2, each keeping only its input, each
    # layer run again in the backward pass, the gradients those of the model unwrapped.
    if "$tpy" - "$T_TMP/fsdp.txt" >"$T_TMP/toy" 2>&1 <<'PY'
import copy, enum, sys, types
import torch
out = open(sys.argv[1]).read()
src = out[out.index('import functools'):]
seen = {}
fsdp = types.ModuleType('torch.distributed.fsdp')
fsdp.ShardingStrategy = enum.Enum('ShardingStrategy', 'FULL_SHARD SHARD_GRAD_OP NO_SHARD HYBRID_SHARD')
fsdp.BackwardPrefetch = enum.Enum('BackwardPrefetch', 'BACKWARD_PRE BACKWARD_POST')
fsdp.MixedPrecision = lambda **kw: seen.setdefault('mixed', kw)
fsdp.FullyShardedDataParallel = lambda model, **kw: (seen.setdefault('fsdp', kw), model)[1]
wrap = types.ModuleType('torch.distributed.fsdp.wrap')
wrap.transformer_auto_wrap_policy = lambda *a, **kw: True
scaler = types.ModuleType('torch.distributed.fsdp.sharded_grad_scaler')
scaler.ShardedGradScaler = lambda **kw: None
sys.modules.update({'torch.distributed.fsdp': fsdp, 'torch.distributed.fsdp.wrap': wrap,
                    'torch.distributed.fsdp.sharded_grad_scaler': scaler})
torch.cuda.current_device = lambda: 0
calls = []
class Block(torch.nn.Module):
    def __init__(self, i):
        super().__init__()
        self.i, self.lin = i, torch.nn.Linear(16, 16)
    def forward(self, x):
        calls.append(self.i)
        return torch.tanh(self.lin(x)) + x
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(Block(i) for i in range(10))
        self.head = torch.nn.Linear(16, 1)
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x).sum()
torch.manual_seed(0)
model = Model()
plain = copy.deepcopy(model)
exec(compile(src, 'snippet', 'exec'), {'model': model, 'Block': Block})
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper
segs = [[b.i for b in w._checkpoint_wrapped_module] for w in model.layers]
assert all(isinstance(w, CheckpointWrapper) for w in model.layers), model.layers
assert segs == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]], segs
assert seen['fsdp']['sharding_strategy'].name == 'FULL_SHARD', seen
x = torch.randn(3, 16, requires_grad=True)
saved = []
def pack(t):
    saved.append(t.numel() * t.element_size())
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    loss = model(x)
# outside the checkpoints only the head saves anything: its input and weight (3x16 + 16)
assert sum(saved) == (3 * 16 + 16) * 4, saved
assert calls == list(range(10)), calls
loss.backward()
assert sorted(calls) == sorted(list(range(10)) * 2), calls  # each layer recomputed once
x2 = x.detach().clone().requires_grad_(True)
plain(x2).backward()
assert torch.equal(x.grad, x2.grad)
for (n, p), q in zip(model.named_parameters(), plain.parameters()):
    assert torch.equal(p.grad, q.grad), n
PY
    then ok "FSDP: the snippet checkpoints segments of 4 layers on a toy model (PyTorch $($tpy -c 'import torch; print(torch.__version__)'))"
    else not_ok "FSDP: the snippet checkpoints segments of 4 layers on a toy model" "$(cat "$T_TMP/toy")"; fi
elif $sanitized; then
    ok "# SKIP PyTorch's parser and FSDP's names under a sanitizer (no scalelab code runs)"
else
    ok "# SKIP PyTorch is not installed here (python3-torch): the rules above stand"
fi

# ---- bad usage
run plan --emit horovod
check_status 2 "--emit: an unknown framework"
check_contains "$err" "deepspeed, megatron or fsdp" "the error lists the frameworks"
run plan --framework fsdp --emit megatron
check_status 2 "--framework and --emit disagree"
run plan --pick 2
check_status 2 "--pick without --emit"
run plan --emit fsdp --pick 100000
check_status 2 "--pick past the layouts that fit"
check_contains "$err" "layouts fit" "the error says how many fit"
run plan --emit deepspeed --json
check_status 2 "--emit with --json"
run memory --params 7B --emit megatron
check_status 2 "memory --emit needs a shape"

done_testing
