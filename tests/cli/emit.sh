#!/bin/sh
# plan --emit and memory --emit: the layout in DeepSpeed's, Megatron-LM's and PyTorch FSDP's own
# names and structure, its numbers the lab's, its comments naming what has no equivalent.
. "$srcdir/tests/lib.sh"

# py WHAT CODE: a python3 check; out.txt and err.txt hold the last run's output.
py() {
    what=$1; shift
    printf '%s\n' "$out" >"$T_TMP/out.txt"
    printf '%s\n' "$err" >"$T_TMP/err.txt"
    if python3 - "$T_TMP" >"$T_TMP/py.out" 2>&1 <<PY
import ast, json, shlex, sys
T = sys.argv[1]
out = open(T + "/out.txt").read()
err = open(T + "/err.txt").read()
def megatron_args(text):
    # the torchrun line and its continuations, comments dropped: {flag: value or True}
    body = " ".join(l.rstrip("\\\\") for l in text.splitlines() if l and not l.startswith("#"))
    words = shlex.split(body)
    assert words[:5] == ["torchrun", "--nnodes", words[2], "--nproc-per-node", words[4]], words[:5]
    i = words.index("pretrain_gpt.py") + 1
    args = {}
    while i < len(words):
        assert words[i].startswith("--"), words[i]
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            args[words[i]] = words[i + 1]; i += 2
        else:
            args[words[i]] = True; i += 1
    return int(words[2]), int(words[4]), args
$1
PY
    then ok "$what"; else not_ok "$what" "$(cat "$T_TMP/py.out")"; fi
}

# DeepSpeed's documented config keys (deepspeed.ai/docs/config-json) this lab writes
DS_TOP="{'train_batch_size','train_micro_batch_size_per_gpu','gradient_accumulation_steps','gradient_clipping','zero_optimization','bf16','fp16','activation_checkpointing'}"
DS_ZERO="{'stage','reduce_bucket_size','allgather_bucket_size','overlap_comm','contiguous_gradients','reduce_scatter','stage3_prefetch_bucket_size'}"

run memory --model synthetic-7b --gpus 8 --zero 1 --checkpoint full --json
total=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['per_gpu']['total'])")
run memory --model synthetic-7b --gpus 8 --zero 1 --checkpoint full --emit deepspeed
check_status 0 "memory --emit deepspeed"
py "ds_config.json: DeepSpeed's key names, nothing else" "d = json.loads(out); assert set(d) <= $DS_TOP and set(d['zero_optimization']) <= $DS_ZERO, (set(d), set(d['zero_optimization']))"
py "ds_config.json: the batch is micro x accumulation x dp" "d = json.loads(out); assert d['train_micro_batch_size_per_gpu'] == 1 and d['gradient_accumulation_steps'] == 1 and d['train_batch_size'] == 8, d"
py "ds_config.json: stage 1, 25 MiB buckets counted in bf16 elements" "z = json.loads(out)['zero_optimization']; assert z['stage'] == 1 and z['reduce_bucket_size'] == 25 * 2**20 // 2 == z['allgather_bucket_size'], z"
py "ds_config.json: bf16 on, checkpointing configured, clipping at 1.0" "d = json.loads(out); assert d['bf16'] == {'enabled': True} and 'fp16' not in d and 'activation_checkpointing' in d and d['gradient_clipping'] == 1.0"
py "the comments (standard error) give memory's prediction" "assert '# scalelab predicts %.2f GiB per GPU' % ($total / 2**30) in err, err"

run memory --model synthetic-7b --gpus 16 --nodes 2 --tp 2 --pp 2 --zero 1 --precision fp16 --micro-batch 2 --micro-batches 8 --emit deepspeed
py "fp16: the lessons' loss scaler in DeepSpeed's names" "f = json.loads(out)['fp16']; assert f == {'enabled': True, 'loss_scale': 0, 'initial_scale_power': 16, 'loss_scale_window': 2000, 'hysteresis': 1, 'min_loss_scale': 1}, f"
py "dp 4 x micro 2 x 8 micro-batches = train_batch_size 64" "d = json.loads(out); assert (d['train_batch_size'], d['train_micro_batch_size_per_gpu'], d['gradient_accumulation_steps']) == (64, 2, 8), d"
py "tensor and pipeline sizes DeepSpeed's config cannot hold are named" "assert '# no equivalent: tensor parallel size 2' in err and '# no equivalent: pipeline parallel size 2' in err, err"

# Megatron-LM's argument names (megatron/training/arguments.py)
MEGATRON="{'--num-layers','--hidden-size','--num-attention-heads','--group-query-attention','--num-query-groups','--ffn-hidden-size','--seq-length','--max-position-embeddings','--swiglu','--normalization','--position-embedding-type','--disable-bias-linear','--untie-embeddings-and-output-weights','--tensor-model-parallel-size','--pipeline-model-parallel-size','--num-layers-per-virtual-pipeline-stage','--sequence-parallel','--micro-batch-size','--global-batch-size','--recompute-granularity','--recompute-method','--recompute-num-layers','--use-distributed-optimizer','--bf16','--fp16','--initial-loss-scale','--min-loss-scale','--loss-scale-window','--hysteresis','--accumulate-allreduce-grads-in-fp32','--optimizer','--clip-grad'}"
run memory --model synthetic-7b --gpus 64 --nodes 8 --tp 4 --pp 2 --zero 1 --precision fp16 --checkpoint every:2 --sequence-parallel --micro-batches 16 --grad-accum fp32 --emit megatron
check_status 0 "memory --emit megatron"
py "Megatron-LM: its argument names only" "n, g, a = megatron_args(out); assert set(a) <= $MEGATRON, set(a) - $MEGATRON"
py "Megatron-LM: 8 nodes of 8, tp 4, pp 2, sequence parallel, batch 8 x 1 x 16" "n, g, a = megatron_args(out); assert (n, g) == (8, 8) and a['--tensor-model-parallel-size'] == '4' and a['--pipeline-model-parallel-size'] == '2' and a['--sequence-parallel'] is True and a['--micro-batch-size'] == '1' and a['--global-batch-size'] == '128', a"
py "Megatron-LM: synthetic-7b's shape" "n, g, a = megatron_args(out); assert (a['--num-layers'], a['--hidden-size'], a['--num-attention-heads'], a['--ffn-hidden-size'], a['--seq-length']) == ('32', '4096', '32', '12544', '2048') and a['--swiglu'] is True and a['--normalization'] == 'RMSNorm' and '--untie-embeddings-and-output-weights' not in a, a"
py "Megatron-LM: every:2 is uniform recompute of chunks of 2 layers" "n, g, a = megatron_args(out); assert (a['--recompute-granularity'], a['--recompute-method'], a['--recompute-num-layers']) == ('full', 'uniform', '2'), a"
py "Megatron-LM: ZeRO-1, fp16 with the lessons' scaler, fp32 gradients" "n, g, a = megatron_args(out); assert a['--use-distributed-optimizer'] is True and a['--fp16'] is True and a['--initial-loss-scale'] == '65536' and a['--loss-scale-window'] == '2000' and a['--accumulate-allreduce-grads-in-fp32'] is True, a"
run memory --model synthetic-7b --gpus 8 --zero 3 --checkpoint selective --emit megatron
py "Megatron-LM: ZeRO-3 has no equivalent, said so; selective recompute" "n, g, a = megatron_args(out); assert '# no equivalent: ZeRO-3' in out and a['--recompute-granularity'] == 'selective' and '--recompute-method' not in a, out"

# plan --emit --pick K writes the K-th ranked layout
run plan --model synthetic-7b --json
printf '%s' "$out" >"$T_TMP/plan.json"
run plan --model synthetic-7b --emit megatron --pick 3
check_status 0 "plan --emit megatron --pick 3"
py "--pick 3 is the third ranked layout, its memory in the comment" "l = json.load(open(T + '/plan.json'))['layouts'][2]; n, g, a = megatron_args(out); assert int(a['--tensor-model-parallel-size']) == l['tp'] and int(a['--pipeline-model-parallel-size']) == l['pp'] and int(a['--micro-batch-size']) == l['micro_batch'] and int(a['--global-batch-size']) == 256 and ('--use-distributed-optimizer' in a) == (l['zero'] >= 1) and 'predicts %.2f GiB' % (l['per_gpu_bytes'] / 2**30) in out, (l, a)"
run plan --model synthetic-7b --emit deepspeed
py "plan --emit deepspeed: the best layout's stage and batch" "l = json.load(open(T + '/plan.json'))['layouts'][0]; d = json.loads(out); assert d['zero_optimization']['stage'] == l['zero'] and d['train_micro_batch_size_per_gpu'] == l['micro_batch'] and d['gradient_accumulation_steps'] == l['micro_batches'] and d['train_batch_size'] == 256, (l, d)"

# PyTorch FSDP: a torchrun line and a snippet that parses, in torch's names
run memory --model synthetic-7b --gpus 16 --nodes 2 --zero 3 --checkpoint full --precision fp16 --emit fsdp
check_status 0 "memory --emit fsdp"
py "FSDP: torchrun with --nnodes 2 --nproc-per-node 8" "line = [l for l in out.splitlines() if l.startswith('torchrun')][0].split(); assert line[1:5] == ['--nnodes', '2', '--nproc-per-node', '8'], line"
py "FSDP: the snippet is Python, FULL_SHARD for ZeRO-3, fp16 MixedPrecision, checkpointing, a sharded scaler" "src = out[out.index('import functools'):]; tree = ast.parse(src); names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}; kws = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords}; assert 'FULL_SHARD' in names and 'float16' in names and {'sharding_strategy', 'mixed_precision', 'auto_wrap_policy', 'backward_prefetch', 'device_id', 'param_dtype', 'reduce_dtype', 'buffer_dtype', 'checkpoint_wrapper_fn', 'check_fn', 'init_scale', 'growth_interval'} <= kws, (names, kws); assert 'apply_activation_checkpointing' in src and 'ShardedGradScaler' in src and 'HYBRID_SHARD' in out"
for z in 0:NO_SHARD 2:SHARD_GRAD_OP 1:SHARD_GRAD_OP; do
    run memory --model synthetic-7b --gpus 8 --zero "${z%%:*}" --emit fsdp
    py "FSDP: ZeRO-${z%%:*} is ShardingStrategy.${z#*:}" "assert 'sharding_strategy=ShardingStrategy.${z#*:},' in out"
done
py "FSDP: ZeRO-1 has no exact equivalent, said so" "assert '# no equivalent: ZeRO-1' in out"
# Where PyTorch is installed (python3-torch), its own source holds every name the snippet uses.
# (Its source is read, not imported: Debian 12's torch 1.13 FSDP does not import on Python 3.11.)
tpy=$(torch_python)
torch_dir=$([ -n "$tpy" ] && "$tpy" -c "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])" 2>/dev/null)
if [ -n "$torch_dir" ] && [ -d "$torch_dir/distributed/fsdp" ]; then
    run memory --model synthetic-7b --gpus 8 --zero 3 --checkpoint full --precision fp16 --emit fsdp
    py "FSDP: every name the snippet uses is in this PyTorch's source ($torch_dir)" "
import glob, re
src = out[out.index('import functools'):]
torch = ''.join(open(f).read() for d in ('distributed/fsdp', 'distributed/algorithms/_checkpoint') for f in glob.glob('$torch_dir/' + d + '/*.py'))
tree = ast.parse(src)
members = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ('ShardingStrategy', 'BackwardPrefetch')}
kws = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'id', '') != 'partial' for k in n.keywords}
imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith('torch.distributed') for a in n.names}
missing = [m for m in members if not re.search(r'\\n\\s+%s = auto\\(\\)' % m, torch)]
missing += [k for k in kws | {'transformer_layer_cls'} if not re.search(r'\\b%s\\s*[:=]' % k, torch)]
missing += [i for i in imported if not re.search(r'(def|class) %s\\b' % i, torch)]
assert not missing, missing"
else
    ok "# SKIP PyTorch is not installed here (python3-torch): the names above stand"
fi

# bad usage
run plan --emit horovod
check_status 2 "--emit: an unknown framework"
check_contains "$err" "deepspeed, megatron or fsdp" "the error lists the frameworks"
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
