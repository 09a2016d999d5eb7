"""The rules of DeepSpeed, Megatron-LM and PyTorch FSDP that scalelab's exports (plan --emit,
memory --emit) must follow, written from the frameworks' own source, each citing its file:
  DeepSpeed    v0.19 (deepspeedai/DeepSpeed): deepspeed/runtime/constants.py, config.py,
               engine.py, zero/config.py, zero/utils.py, precision_config.py,
               activation_checkpointing/config.py, pipe/engine.py, pipe/schedule.py,
               bf16_optimizer.py, deepspeed/__init__.py
  Megatron-LM  core_v0.19.0 (NVIDIA/Megatron-LM): megatron/training/arguments.py,
               megatron/training/config/*.py, megatron/core/transformer/transformer_config.py,
               megatron/core/num_microbatches_calculator.py, megatron/core/parallel_state.py
  PyTorch      torch/distributed/run.py (torchrun), torch/distributed/fsdp/api.py and
               fully_sharded_data_parallel.py, torch/distributed/algorithms/_checkpoint/
               checkpoint_wrapper.py (1.13 to 2.x)
It reads an export as the framework would and says (1) which rules it breaks and (2) the
layout the framework will run with those settings, in `scalelab memory` options, worked out
from the settings alone (not from scalelab's calc/framework.c): tests/cli/emit.sh then asks
`scalelab memory` for that layout's figure, which must be the export's heading's.

    python3 framework_rules.py FRAMEWORK OUT ERR GPUS   (OUT, ERR: the export's two streams)

prints one JSON object: {"violations": [...], "runs": [options], "heading": [options],
"predicted": "12.34 GiB", "fits": bool, "global_batch": n, "gpus": n}."""
import ast
import json
import re
import shlex
import sys

# ---------------------------------------------------------------------------------- DeepSpeed

DS_TOP = {  # deepspeed/runtime/constants.py
    'train_batch_size', 'train_micro_batch_size_per_gpu', 'gradient_accumulation_steps',
    'gradient_clipping', 'zero_optimization', 'fp16', 'bf16', 'data_types',
    'zero_allow_untested_optimizer', 'activation_checkpointing'}
DS_ZERO = {  # deepspeed/runtime/zero/config.py: DeepSpeedZeroConfig's fields and aliases
    'stage', 'reduce_bucket_size', 'allgather_bucket_size', 'overlap_comm',
    'contiguous_gradients', 'reduce_scatter', 'stage3_prefetch_bucket_size'}
DS_FP16 = {  # deepspeed/runtime/precision_config.py
    'enabled', 'loss_scale', 'initial_scale_power', 'loss_scale_window', 'hysteresis',
    'min_loss_scale'}
DS_AC = {  # deepspeed/runtime/activation_checkpointing/config.py
    'partition_activations', 'contiguous_memory_optimization', 'cpu_checkpointing',
    'synchronize_checkpoint_boundary'}
DS_DTYPES = {'fp32': 4, 'bf16': 2, 'fp16': 2}  # config.py DtypeEnum; bytes per element
# deepspeed/runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS (of the lab's optimizers)
DS_ZERO_TESTED = {'adamw'}


def deepspeed(out, err, gpus):
    bad = []
    d = json.loads(out)
    if set(d) - DS_TOP:
        bad.append('keys DeepSpeed does not know: %s' % sorted(set(d) - DS_TOP))
    z = d['zero_optimization']
    if set(z) - DS_ZERO:
        bad.append('zero_optimization keys unknown: %s' % sorted(set(z) - DS_ZERO))
    if 'fp16' in d and set(d['fp16']) - DS_FP16:
        bad.append('fp16 keys unknown: %s' % sorted(set(d['fp16']) - DS_FP16))
    if 'activation_checkpointing' in d and set(d['activation_checkpointing']) - DS_AC:
        bad.append('activation_checkpointing keys unknown')
    stage = z['stage']
    model = 'fp16' if d.get('fp16', {}).get('enabled') else \
        'bf16' if d.get('bf16', {}).get('enabled') else 'fp32'
    # engine.py get_data_types: grad_accum_dtype, else the weights' type (0.18 and later;
    # before, fp32 for bf16 without ZeRO): the export must say which
    accum = d.get('data_types', {}).get('grad_accum_dtype')
    if accum not in DS_DTYPES:
        bad.append('data_types.grad_accum_dtype not written (its default changed in 0.18)')
        accum = model
    m = re.search(r'# pipeline parallel size (\d+)', err)
    pp = int(m.group(1)) if m else 1
    m = re.search(r'# tensor parallel size (\d+)', err) or re.search(r'T = (\d+)', err)
    tp = int(m.group(1)) if m else 1
    # config.py: world_size is the mpu's data-parallel size (a PipelineModule gives its own:
    # deepspeed/__init__.py), else every GPU; _batch_assertion: train = micro x gas x world
    if tp > 1 and not ('mpu=' in err or 'PipeModelDataParallelTopology' in err):
        bad.append('tp %d without an mpu: DeepSpeed would count all %d GPUs as data parallel'
                   % (tp, gpus))
    dp = gpus // (tp * pp)
    if d['train_batch_size'] != d['train_micro_batch_size_per_gpu'] * \
            d['gradient_accumulation_steps'] * dp:
        bad.append('train_batch_size != micro x accumulation x dp %d' % dp)
    # pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
    if pp > 1 and stage >= 2:
        bad.append('ZeRO-%d with a pipeline' % stage)
    opt = 'sgd-momentum' if '# optimizer SGD with momentum' in err else \
        'sgd' if '# optimizer SGD' in err else 'adamw'
    # engine.py _do_optimizer_sanity_check: an untested optimizer under ZeRO needs the key
    if stage >= 1 and opt not in DS_ZERO_TESTED and not d.get('zero_allow_untested_optimizer'):
        bad.append('%s under ZeRO without zero_allow_untested_optimizer' % opt)
    # engine.py: without ZeRO the weights' and the accumulation's types must agree
    if stage == 0 and model != accum:
        bad.append('unsupported mix of %s weights and %s accumulation without ZeRO'
                   % (model, accum))
    # what runs: ZeRO as configured, and without it for bf16 and a pipeline the
    # BF16_Optimizer (engine.py), which shards the fp32 master weights and the optimizer
    # state over the data-parallel GPUs (bf16_optimizer.py): ZeRO-1
    zero = stage
    if stage == 0 and model == 'bf16' and pp > 1:
        zero = 1
    if 'activation_checkpointing' in d:
        m = re.search(r'each segment of (\d+) consecutive layers', err)
        ckpt = 'every:' + m.group(1) if m else \
            'selective' if "each layer's attention core" in err else None
        if ckpt is None:
            bad.append('activation_checkpointing without what the model must checkpoint')
    else:
        ckpt = 'none'
    runs = ['--dp', dp, '--tp', tp, '--pp', pp, '--zero', zero, '--precision', model,
            '--optimizer', opt,
            '--grad-accum', 'fp32' if DS_DTYPES[accum] == 4 and model != 'fp32' else 'same',
            '--micro-batch', d['train_micro_batch_size_per_gpu'],
            '--micro-batches', d['gradient_accumulation_steps'], '--checkpoint', ckpt or 'none']
    if tp > 1 and '--sequence-parallel' in err:
        runs.append('--sequence-parallel')
    # zero/partitioned_param_coordinator.py: a prefetch bucket of 0 prefetches nothing
    if stage == 3 and z.get('stage3_prefetch_bucket_size') == 0:
        runs += ['--prefetch', 0]
    # pipe/schedule.py TrainSchedule holds min(stages - stage_id, micro_batches): 1F1B, the
    # lab's default
    return bad, runs, d['train_batch_size']

# ---------------------------------------------------------------------------------- Megatron-LM

MEGATRON = {  # megatron/training/arguments.py and megatron/training/config/*.py
    '--num-layers', '--hidden-size', '--num-attention-heads', '--group-query-attention',
    '--num-query-groups', '--ffn-hidden-size', '--seq-length', '--max-position-embeddings',
    '--swiglu', '--normalization', '--position-embedding-type', '--disable-bias-linear',
    '--untie-embeddings-and-output-weights', '--tensor-model-parallel-size',
    '--pipeline-model-parallel-size', '--context-parallel-size',
    '--num-layers-per-virtual-pipeline-stage',
    '--sequence-parallel', '--micro-batch-size', '--global-batch-size',
    '--recompute-granularity', '--recompute-method', '--recompute-num-layers',
    '--use-distributed-optimizer', '--use-megatron-fsdp', '--data-parallel-sharding-strategy',
    '--megatron-fsdp-main-grads-dtype', '--ckpt-format', '--bf16', '--fp16',
    '--initial-loss-scale', '--min-loss-scale', '--loss-scale-window', '--hysteresis',
    '--accumulate-allreduce-grads-in-fp32', '--optimizer', '--sgd-momentum', '--clip-grad',
    '--num-experts', '--moe-router-topk', '--moe-layer-freq', '--expert-model-parallel-size',
    '--moe-token-dispatcher-type', '--moe-expert-capacity-factor',
    '--moe-pad-expert-input-to-capacity', '--moe-token-drop-policy',
    '--moe-router-load-balancing-type', '--moe-aux-loss-coeff'}
# the lab's load-balancing loss coefficient (par/settings.h's TRAIN_AUX_COEF, Switch
# Transformer's 10^-2), which a Megatron-LM run of its mixture must be given
LAB_AUX_COEF = 0.01
# torch/distributed/run.py: the spellings torch 1.13 and 2.x both take
TORCHRUN = {'--nnodes', '--nproc_per_node', '--node_rank', '--master_addr', '--master_port'}
FSDP_SHARDING = {'NO_SHARD': 0, 'SHARD_GRAD_OP': 2, 'FULL_SHARD': 3}  # fsdp/api.py


def command(text, script):
    """The torchrun line of text, its continuations joined: (torchrun's {flag: value}, the
    script's [(flag, value or True)])."""
    body = ' '.join(l.rstrip('\\') for l in text.splitlines()
                    if l.startswith(('torchrun', '    --')))
    words = shlex.split(body)
    i = words.index(script)
    launcher = dict(zip(words[1:i:2], words[2:i:2]))
    args, j = [], i + 1
    while j < len(words):
        if j + 1 < len(words) and not words[j + 1].startswith('--'):
            args.append((words[j], words[j + 1]))
            j += 2
        else:
            args.append((words[j], True))
            j += 1
    return launcher, args


def world(launcher, bad):
    if set(launcher) - TORCHRUN:
        bad.append('torchrun flags it does not take: %s' % sorted(set(launcher) - TORCHRUN))
    nodes = int(launcher['--nnodes'])
    if nodes > 1 and not {'--node_rank', '--master_addr', '--master_port'} <= set(launcher):
        bad.append('%d nodes without --node_rank, --master_addr, --master_port' % nodes)
    return nodes * int(launcher['--nproc_per_node'])


def megatron(out, err, gpus):
    bad = []
    launcher, pairs = command(out, 'pretrain_gpt.py')
    a = dict(pairs)
    if len(a) != len(pairs):
        bad.append('a flag given twice')
    if set(a) - MEGATRON:
        bad.append('flags Megatron-LM does not take: %s' % sorted(set(a) - MEGATRON))
    n = world(launcher, bad)
    tp, pp = int(a['--tensor-model-parallel-size']), int(a['--pipeline-model-parallel-size'])
    cp = int(a.get('--context-parallel-size', 1))
    # megatron/core/parallel_state.py: world = tp x cp x pp x dp
    if n % (tp * pp * cp):
        bad.append('world %d not a multiple of tp x cp x pp' % n)
    dp = n // (tp * pp * cp)
    mbs, gbs = int(a['--micro-batch-size']), int(a['--global-batch-size'])
    # num_microbatches_calculator.py: global batch divisible by micro batch x dp
    if gbs % (mbs * dp):
        bad.append('global batch %d not divisible by micro batch x dp' % gbs)
    layers = int(a['--num-layers'])
    runs = ['--dp', dp, '--tp', tp, '--pp', pp]
    # utils.py get_batch_on_this_cp_rank: 2 cp chunks, rank i holding i and 2cp-1-i (balanced)
    if cp > 1:
        runs += ['--cp', cp]
    # arguments.py: num_experts divisible by the expert-model-parallel size; parallel_state.py's
    # expert rank generator splits the dp x cp x tp / etp ranks (etp = tp) into ep x expert-dp
    ep = int(a.get('--expert-model-parallel-size', 1))
    if ep > 1:
        experts = int(a.get('--num-experts', 0))
        if not experts or experts % ep or (dp * cp) % ep:
            bad.append('--expert-model-parallel-size %d with %d experts on dp x cp %d'
                       % (ep, experts, dp * cp))
        runs += ['--ep', ep]
    # moe_utils.py get_capacity: ceil(tokens x topk / experts x factor); padding needs it and
    # the all-to-all dispatcher (arguments.py)
    if '--moe-pad-expert-input-to-capacity' in a and (
            '--moe-expert-capacity-factor' not in a or
            a.get('--moe-token-dispatcher-type') != 'alltoall'):
        bad.append('padding to capacity without a capacity factor and the alltoall dispatcher')
    if '--moe-expert-capacity-factor' in a:
        runs += ['--capacity-factor', a['--moe-expert-capacity-factor']]
        # moe_utils.py topk_routing_with_score_function: the default policy, probs, drops the
        # lowest gates; the lab drops the last tokens, position's
        if a.get('--moe-token-drop-policy') != 'position':
            bad.append('a capacity factor without --moe-token-drop-policy position')
    # arguments.py: --moe-aux-loss-coeff defaults to 0, no load-balancing loss
    if '--num-experts' in a and (a.get('--moe-router-load-balancing-type', 'aux_loss') != 'aux_loss'
                                 or float(a.get('--moe-aux-loss-coeff', 0)) != LAB_AUX_COEF):
        bad.append('experts without the lab\'s aux loss, --moe-aux-loss-coeff %g' % LAB_AUX_COEF)
    # arguments.py validate_args: tensor or context parallelism on a GPU before Blackwell (the
    # presets') asserts CUDA_DEVICE_MAX_CONNECTIONS == "1", unless Megatron-FSDP or Torch-FSDP2
    # run (which want it above 1)
    env = re.search(r'^export CUDA_DEVICE_MAX_CONNECTIONS=(\S+)$', out, re.M)
    if (tp > 1 or cp > 1) and '--use-megatron-fsdp' not in a and (not env or env.group(1) != '1'):
        bad.append('tp or cp without CUDA_DEVICE_MAX_CONNECTIONS=1')
    if '--use-megatron-fsdp' in a and env and env.group(1) == '1':
        bad.append('Megatron-FSDP with CUDA_DEVICE_MAX_CONNECTIONS=1')
    if '--num-layers-per-virtual-pipeline-stage' in a:
        # arguments.py: layers per stage divisible by it; v = (L / pp) / that
        per = int(a['--num-layers-per-virtual-pipeline-stage'])
        if pp == 1 or (layers // pp) % per:
            bad.append('--num-layers-per-virtual-pipeline-stage does not divide a stage')
        else:
            runs += ['--schedule', 'interleaved', '--chunks', layers // pp // per]
    gran = a.get('--recompute-granularity')
    if gran == 'selective':
        if '--recompute-method' in a:  # arguments.py: no method with selective
            bad.append('--recompute-method with selective recompute')
        ckpt = 'selective'
    elif gran == 'full':
        # transformer_config.py: uniform, recompute_num_layers layers per recompute unit
        if a.get('--recompute-method') != 'uniform' or '--recompute-num-layers' not in a:
            bad.append('full recompute without uniform and its layers')
        ckpt = 'every:%s' % a.get('--recompute-num-layers')
    else:
        ckpt = 'none'
    prec = 'bf16' if '--bf16' in a else 'fp16' if '--fp16' in a else 'fp32'
    fsdp = '--use-megatron-fsdp' in a
    if fsdp:
        zero = {'no_shard': 0, 'optim': 1, 'optim_grads': 2, 'optim_grads_params': 3}[
            a.get('--data-parallel-sharding-strategy', 'optim_grads_params')]
        if a.get('--ckpt-format') != 'fsdp_dtensor':  # arguments.py asserts it
            bad.append('Megatron-FSDP without --ckpt-format fsdp_dtensor')
        # the main gradients: --megatron-fsdp-main-grads-dtype, 'auto' the weights' type
        grads32 = prec == 'fp32' or a.get('--megatron-fsdp-main-grads-dtype') == 'fp32'
    else:
        zero = 1 if '--use-distributed-optimizer' in a else 0
        # arguments.py: --bf16 turns --accumulate-allreduce-grads-in-fp32 on by itself
        grads32 = prec == 'fp32' or prec == 'bf16' or '--accumulate-allreduce-grads-in-fp32' in a
    opt = a.get('--optimizer', 'adam')
    if fsdp and opt not in ('adam', 'sgd'):
        bad.append('Megatron-FSDP takes adam or sgd')
    # arguments.py: --sgd-momentum 0.9 unless given; no momentum buffer at 0
    opt = 'adamw' if opt == 'adam' else \
        'sgd' if float(a.get('--sgd-momentum', 0.9)) == 0 else 'sgd-momentum'
    runs += ['--zero', zero, '--precision', prec, '--optimizer', opt,
             '--grad-accum', 'fp32' if grads32 and prec != 'fp32' else 'same',
             '--micro-batch', mbs, '--micro-batches', gbs // (mbs * dp),
             '--seq', int(a['--seq-length']), '--checkpoint', ckpt]
    if '--sequence-parallel' in a and tp > 1:  # arguments.py turns it off for tp 1
        runs.append('--sequence-parallel')
    return bad, runs, gbs

# ---------------------------------------------------------------------------------- PyTorch FSDP


def fsdp(out, err, gpus):
    bad = []
    launcher, _ = command(out, 'train.py')
    n = world(launcher, bad)
    src = out[out.index('import functools'):]
    tree = ast.parse(src)  # the snippet is Python
    calls = {getattr(c.func, 'id', getattr(c.func, 'attr', '')): c
             for c in ast.walk(tree) if isinstance(c, ast.Call)}
    kw = {k.arg: k.value for c in calls.values() for k in c.keywords}
    strategy = ast.unparse(kw['sharding_strategy']).split('.')[-1]
    if strategy not in FSDP_SHARDING:
        bad.append('ShardingStrategy.%s is not one the lab writes' % strategy)
    zero = FSDP_SHARDING.get(strategy, 0)
    prec = {'torch.bfloat16': 'bf16', 'torch.float16': 'fp16'}.get(
        ast.unparse(kw['param_dtype']), 'fp32') if 'param_dtype' in kw else 'fp32'
    # fully_sharded_data_parallel.py: no_sync() keeps the full unsharded gradients (its
    # docstring) where the lab keeps shards
    code = '\n'.join(l for l in src.splitlines() if not l.lstrip().startswith('#'))
    if 'no_sync' in code and zero > 0:
        bad.append('no_sync() under a sharded strategy')
    m = re.search(r'# each step: (\d+) micro-batch(?:es)? of (\d+) sequences? per GPU', out)
    mb, mbs = int(m.group(2)), int(m.group(1))
    if 'checkpoint_wrapper' in calls:
        m = re.search(r'blocks\[i : i \+ (\d+)\]', src)
        every = int(m.group(1)) if m else 1
        ckpt = 'every:%d' % every
        # checkpoint_wrapper.py: NO_REENTRANT is the one that composes with FSDP's hooks
        if 'CheckpointImpl.NO_REENTRANT' not in src:
            bad.append('reentrant checkpointing')
        unit = ast.unparse(kw['transformer_layer_cls'])
        if unit != '{CheckpointWrapper}':
            bad.append('FSDP units are not the checkpointed segments: %s' % unit)
    else:
        every, ckpt = 1, 'none'
    runs = ['--dp', n, '--tp', 1, '--pp', 1, '--zero', zero, '--precision', prec,
            '--optimizer', 'sgd-momentum' if 'SGD with momentum step' in out else
            'sgd' if 'SGD step' in out else 'adamw',
            # fully_sharded_data_parallel.py _cast_grad_to_param_dtype: reduced gradients are
            # cast to the fp32 parameters and accumulated there
            '--grad-accum', 'fp32' if prec != 'fp32' else 'same',
            '--micro-batch', mb, '--micro-batches', mbs, '--checkpoint', ckpt]
    if zero == 3 and every > 1:  # each segment one unit: gathered and reduced whole
        runs += ['--unit-layers', every]
    return bad, runs, n * mb * mbs


def heading(text):
    """The export's claims: the `scalelab memory` options its figure comes from, the figure,
    whether it fits, the model and sequence length."""
    m = re.search(r'^#   = scalelab memory (.*)$', text, re.M)
    opts = shlex.split(m.group(1))
    pred = re.search(r'^# scalelab predicts (\S+ \S+) per GPU', text, re.M).group(1)
    return opts, pred, 'does NOT fit' not in text


if __name__ == '__main__':
    fw, out, err, gpus = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read(), \
        int(sys.argv[4])
    bad, runs, batch = {'deepspeed': deepspeed, 'megatron': megatron, 'fsdp': fsdp}[fw](
        out, err, gpus)
    opts, pred, fits = heading(err if fw == 'deepspeed' else out)
    model = opts[opts.index('--model') + 1]
    seq = opts[opts.index('--seq') + 1]
    if '--seq' not in runs:
        runs += ['--seq', seq]
    runs = ['--model', model] + [str(x) for x in runs]
    json.dump({'violations': bad, 'runs': runs, 'heading': opts, 'predicted': pred,
               'fits': fits, 'global_batch': batch}, sys.stdout)
