#!/bin/sh
# scalelab memory: the synthetic-7b's numbers, the ZeRO paper's, JSON, files and bad input.
. "$srcdir/tests/lib.sh"
threadless "the calculator runs on one thread"
D="$srcdir/tests/data/calc"

run memory
check_status 0 "memory with the defaults"
check_contains "$out" "synthetic-7b: 7,289,966,592 parameters" "the 7B's count from its shape"
check_contains "$out" "model states           108.63 GiB" "16 bytes/param = 108.63 GiB"
check_contains "$out" "does NOT fit: over by" "says it does not fit on 80 GiB"
check_contains "$out" "formula: sbh(34.375) + 136sb" "names the activation formula: flash attention's, lse 4 a sb for the probabilities"
check_contains "$out" "flash attention: each row's log-sum-exp kept, no probabilities" "names the attention kernel"
run memory --attention eager
check_contains "$out" "formula: sbh(34.375 + 2as/h) + 8sb" "--attention eager: the probabilities' 2as/h"
check_contains "$out" "eager attention: the a s^2 b probabilities kept" "names the eager kernel"
check_contains "$out" "2 + 2 + K, K = 12" "names the 16-byte convention"

# --units auto (the default): each figure in the binary unit that suits it, so a tiny model's
# kilobytes and megabytes read as such (not "0.00 GiB"); GiB and GB print every figure in one.
run memory --model tiny
check_contains "$out" "$(printf "%-18s %14s" "weights" "395.12 KiB")" "tiny's weights in KiB: 2 x 202,304 B"
check_contains "$out" "$(printf "%-18s %14s" "optimizer state" "1.543 MiB")" "its optimizer state in MiB"
check_contains "$out" "$(printf "%-18s %14s" "capacity" "80.00 GiB")" "the GPU's memory in GiB"
check_contains "$out" "$(printf "%-16s %14s" "total" "0 B")" "nothing sent: 0 B"
check_eq "$(printf '%s\n' "$out" | grep -c ' 0\.00* GiB')" 0 "no figure rounds to 0.00 GiB"
run memory --model tiny --units GiB
check_contains "$out" "$(printf "%-18s %14s" "weights" "0.000 GiB")" "--units GiB: every figure in GiB"
run memory --model tiny --units auto
check_contains "$out" "395.12 KiB" "--units auto, named"

run memory --json
check_status 0 "memory --json"
check_json 'd["params"] == 7289966592 and d["fits"] is False and d["model"] == "synthetic-7b"' "JSON: count and verdict"
check_json 'sum(d["per_gpu"][k] for k in ("weights","gradients","master_weights","optimizer")) == 16 * 7289966592' "JSON: 16 bytes per parameter"
check_json 'd["per_gpu"]["total"] == sum(v for k, v in d["per_gpu"].items() if k != "total")' "JSON: the total is the sum of the parts"
check_json 'd["layout"] == {"dp": 1, "tp": 1, "pp": 1, "zero": 0} and d["capacity"] == 80 * 2**30' "JSON: layout and capacity"
check_json 'd["activations_per_layer"] == 2048*4096*34.375 + 4*32*2048 + 8*2048 and d["attention"] == "flash"' "JSON: one layer's activations by the formula, flash attention named"
run memory --attention eager --json
check_json 'd["activations_per_layer"] == 2048*4096*34.375 + 2*32*2048*2048 + 8*2048 and d["attention"] == "eager"' "JSON: eager attention's layer keeps the probabilities"

# The ZeRO paper (Rajbhandari et al. 2020, Figure 1): Ψ = 7.5B, N_d = 64.
i=0
for want in "120.00 GB" "31.41 GB" "16.64 GB" "1.875 GB"; do
    run memory --params 7.5e9 --gpus 64 --nodes 8 --zero $i --units GB
    check_contains "$out" "$(printf "%-18s %14s" "model states" "$want")" "ZeRO-$i of 7.5B on 64 GPUs: $want"
    i=$((i + 1))
done
run memory --params 7.5B --gpus 64 --nodes 8 --zero 3 --json
check_json 'd["per_gpu"]["total"] == 1875000000 and d["activations_per_layer"] == 0' "ZeRO-3 JSON: exactly 1.875e9 bytes"
run memory --params 7.5e9 --gpus 64 --nodes 8 --zero 0 --json
check_json 'abs(d["communication"]["data_parallel"]["bytes"] - 2*63/64*7.5e9*2) < 1' "DDP sends 2(N-1)/N Ψ x 2 bytes"
check_contains "$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["communication"]["data_parallel"]["formula"])')" "2(N-1)/N" "the formula is stated beside the volume"
run memory --params 7.5e9 --gpus 64 --nodes 8 --zero 3 --json
check_json 'abs(d["communication"]["data_parallel"]["bytes"] - 1.5*2*63/64*7.5e9*2) < 1' "ZeRO-3 sends 1.5 times as much"

run memory --grad-accum fp32 --json
check_json 'd["bytes_per_param"] == 18' "--grad-accum fp32: 18 bytes per parameter"
run memory --precision fp32 --optimizer sgd --json
check_json 'd["bytes_per_param"] == 8 and d["per_gpu"]["master_weights"] == 0' "fp32 SGD: 8 bytes, no master copy"

# Fitting the 7B on 80 GiB GPUs.
run memory --gpus 8 --zero 3 --checkpoint full
check_status 0 "7B, ZeRO-3 on 8 GPUs, full checkpointing"
check_contains "$out" "fits:" "fits on 80 GiB"
run memory --gpus 8 --zero 3 --checkpoint full --json
check_json 'd["fits"] is True and d["per_gpu"]["total"] <= 80 * 2**30 and d["over"] == 0' "JSON: fits"
run memory --gpus 8 --zero 0 --checkpoint full --json
check_json 'd["fits"] is False and d["over"] == d["per_gpu"]["total"] - 80 * 2**30' "DDP alone does not: it says by how much"
run memory --gpu-mem 200GiB --json
check_json 'd["fits"] is True and d["capacity"] == 200 * 2**30' "--gpu-mem overrides the cluster's"

# Pipelines: GPipe holds all m micro-batches, 1F1B p.
run memory --pp 4 --micro-batches 16 --schedule gpipe --json
gpipe=$out
check_json 'd["in_flight"] == 16' "GPipe: the first stage holds all 16 micro-batches"
run memory --pp 4 --micro-batches 16 --schedule 1f1b --json
check_json 'd["in_flight"] == 4 and d["per_gpu"]["activations"] < '"$(printf '%s' "$gpipe" | python3 -c 'import json,sys; print(json.load(sys.stdin)["per_gpu"]["activations"])')" "1F1B: 4 in flight, fewer activations"

# Tensor and sequence parallelism (Korthikanti's variants on GPT-3).
run memory --model gpt3-175b --tp 8 --pp 8 --nodes 8 --attention eager --json
check_json 'd["activations_per_layer"] == 2048*12288*(10 + 24/8 + 5*96*2048/(12288*8))' "GPT-3, t = 8: sbh(10 + 24/t + 5as/(ht))"
check_json 'd["activation_formula"] == "sbh(10 + 24/t + 5as/(ht))"' "GPT-3: names Korthikanti's formula"
run memory --model gpt3-175b --tp 8 --pp 8 --nodes 8 --sequence-parallel --checkpoint selective --json
check_json 'd["activations_per_layer"] == 34*2048*12288/8' "GPT-3, sp + selective: 34 sbh/t"

# One attention model for every layout: at cp 1 and cp 2 the same flash kernel (each row's
# log-sum-exp, no probabilities), so cp 2 halves the activations of every token (they read
# 274.03 GiB, the probabilities kept, then 9.02 GiB); eager keeps the probabilities and needs
# cp 1; selective recompute goes with cp, as Megatron-LM accepts it.
long="--model synthetic-7b --seq 32768 --nodes 8 --tp 8 --sequence-parallel --zero 1 --json"
run memory $long
one=$(printf '%s' "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)['per_gpu']['activations'])")
run memory $long --cp 2
check_json "d['per_gpu']['activations'] * 2 == $one and d['attention'] == 'flash'" "cp 2 halves the activations of cp 1, one flash kernel"
run memory $long --attention eager
check_json "d['per_gpu']['activations'] > 10 * $one" "eager at 32768 tokens: the probabilities outweigh the rest"
run memory $long --cp 2 --attention eager
check_status 2 "eager attention with cp is refused"
check_contains "$err" "cp 2 with eager attention: ring attention is a flash-style kernel" "... saying why"
run memory ${long%--json} --cp 2 --checkpoint selective
check_status 0 "selective recompute with cp"
check_contains "$out" "m x 32 layers x 8 x (C-1)/C x S" "... repeats the ring's forward"

# The ZeRO lines name the divisor their figure has: with ep the experts' states shard over the
# GPUs of an expert rank, N_x = dp / ep, the rest over N_d = dp ("4 B x Ψ / N_d, N_d = dp =
# 64" was printed for both); with cp over N_d = dp x cp, even with dp 1.
run memory --model mixtral-8x7b --gpus 64 --nodes 8 --ep 8 --zero 1 --capacity-factor 1.25
check_contains "$out" "4 B x (Ψ - Ψ_x) / N_d + 4 B x Ψ_x / N_x" "ep: the master weights' divisors, N_d and N_x"
check_contains "$out" "8 B x (Ψ - Ψ_x) / N_d + 8 B x Ψ_x / N_x" "ep: the optimizer state's"
check_contains "$out" "N_d = dp = 64, the experts' N_x = dp / ep = 8" "ep: N_x named"
psi=$(printf '%s\n' "$out" | sed -n 's/.*Ψ = \([0-9,]*\), of them its experts. Ψ_x = \([0-9,]*\);.*/\1 \2/p' | tr -d ,)
run memory --model mixtral-8x7b --gpus 64 --nodes 8 --ep 8 --zero 1 --capacity-factor 1.25 --json
check_json "(lambda p, x: d['per_gpu']['master_weights'] == 4 * (math.ceil((p - x) / 64) + math.ceil(x / 8)))(*[int(v) for v in '$psi'.split()])" \
    "ep: the master weights are 4 B x ((Ψ - Ψ_x) / 64 + Ψ_x / 8), each shard rounded up"
run memory --model synthetic-7b --tp 8 --cp 2 --nodes 2 --zero 1
check_contains "$out" "4 B x Ψ / N_d" "cp 2, dp 1: sharded over N_d = dp x cp"

# The lists behind the numbers (tiny, b = 2, s = 64, bf16; by hand in tests/unit/test_calc.c).
run memory --model tiny --micro-batch 2 --attention eager --json
check_json '[t["name"] for t in d["activation_tensors"]] == ["x","attn_rstd","xn1","q","k","v","att","attn_out","x1","mlp_rstd","xn2","gate","up","act"]' "JSON: the activation list, in order"
check_json 'sum(t["bytes"] for t in d["activation_tensors"]) == 329728 == d["activations_per_layer"]' "JSON: the list adds up to one layer's 329,728 bytes"
check_json 'sum(t["rows"]*t["cols"]*(4 if t["where"]=="layer" else 1) for t in d["param_tensors"]) == d["params"]' "JSON: the parameter tensors add up to the count"
run memory --model tiny --micro-batch 2 --attention eager --tensors
check_contains "$out" "att           as^2b             32,768 x 2 B =      64.00 KiB" "--tensors lists the attention matrix"
check_contains "$out" "w_gate                 64 x 172                11,008  each layer  split by tp" "--tensors lists the parameters"

# Files.
run memory --model "$D/mine.ini" --json
check_json 'd["params"] == 21792 and d["model"] == "mine"' "--model FILE: counted from its shape"
run memory --model "$D/bad-tied.ini"
check_status 2 "malformed model file"
check_contains "$err" "bad-tied.ini:10: 'tied' must be true or false, not 'maybe'" "file:line: what was expected"
run memory --cluster "$D/bad-hbm.ini"
check_status 2 "malformed cluster file"
check_contains "$err" "bad-hbm.ini:5: 'hbm' must be a size" "cluster file:line"
run memory --cluster "$D/small-cluster.ini" --model tiny --json
check_json 'd["capacity"] == 4 * 1048576' "--cluster FILE: its capacity"

# Bad input: exit 2, a message naming the option.
bad() { # WHAT NEEDLE ARGS...
    what=$1; needle=$2; shift 2
    run memory "$@"
    check_status 2 "$what"
    check_contains "$err" "$needle" "$what: the message"
}
bad "tp not dividing the heads" "--tp 3 does not divide the 32 attention heads" --tp 3
bad "pp above the layers" "--pp 33 is more than the 32 layers" --pp 33
bad "zb-h1 with experts" "tiny-moe has experts: schedule zb-h1 runs B and W apart" --model tiny-moe --pp 2 --micro-batches 4 --schedule zb-h1
bad "zero above 3" "--zero: '4' is not allowed (a whole number from 0 to 3)" --zero 4
bad "inconsistent layout" "inconsistent layout: --dp 4 x --tp 1 x --pp 1 = 4, not --gpus 8" --gpus 8 --dp 4
bad "gpus not a multiple of tp x pp" "--gpus 6 is not a multiple of --tp 4" --gpus 6 --tp 4
bad "more GPUs than the cluster" "use --nodes K" --gpus 64
bad "zero micro-batch" "--micro-batch: '0' is not allowed" --micro-batch 0
bad "negative seq" "--seq: '-5' is not allowed" --seq -5
bad "NaN memory" "--gpu-mem: 'nan' is not a size" --gpu-mem nan
bad "zero memory" "--gpu-mem: '0' must be above 0" --gpu-mem 0
bad "NaN params" "--params: 'nan' is not allowed" --params nan
bad "absurd params" "--params: '1e20' is not allowed" --params 1e20
bad "unknown model preset" "unknown model preset 'synthetic-8b' (presets: gpt3-175b" --model synthetic-8b
bad "missing model file" "cannot open" --model /nonexistent/m.ini
bad "unknown cluster" "unknown cluster preset 'h100'" --cluster h100
bad "fp8, not counted yet" "--precision: 'fp8' trains (train --precision fp8) but its memory is not counted here yet" --precision fp8
# One reader of a training precision (num/fp.h's table) for every command: the same words.
run memory --precision e4m3
mem_said=${err#scalelab: memory: }
mem_said=${mem_said%; see *}
run train --steps 1 --precision e4m3
check_status 2 "train --precision e4m3 refused"
train_said=${err#scalelab: train: }
check_eq "${train_said%; see *}" "$mem_said" "train and memory refuse --precision e4m3 in the same words"
# One reader of a capacity factor (base/experts.h) for every command: ' 1.25' is no number to
# either, 65 beyond the bound of both.
for v in " 1.25" 65; do
    run memory --model tiny-moe --capacity-factor "$v"
    check_status 2 "memory --capacity-factor '$v' refused"
    mem_said=${err#scalelab: }
    run train --steps 1 --model tiny-moe --capacity-factor "$v"
    check_status 2 "train --capacity-factor '$v' refused"
    train_said=${err#scalelab: train: }
    check_eq "${train_said%; see *}" "$mem_said" "train and memory refuse --capacity-factor '$v' in the same words"
done
run memory --model tiny-moe --capacity-factor 64
check_status 0 "memory --capacity-factor 64, the bound, taken"
bad "bad optimizer" "use adamw, sgd or sgd-momentum" --optimizer adam
bad "bad policy" "use none, full, selective, sqrt or every:K" --checkpoint some
bad "every:0" "every:K needs a whole number K" --checkpoint every:0
bad "bad units" "--units: 'MB' is not a unit system" --units MB
bad "model and params" "exclude each other" --model tiny --params 1e9
bad "seq beyond learned positions" "longer than the 2048 learned positions" --model gpt3-175b --seq 4096
bad "sp needs t | s" "--tp 2 must divide --seq 3" --tp 2 --sequence-parallel --seq 3
bad "unknown option" "unknown option '--zer'" --zer 1
bad "absurd tokens per micro-batch" "more than 2^30 tokens per micro-batch" --micro-batch 65536 --seq 1048576
bad "absurd sequence" "--seq: '99999999' is not allowed" --seq 99999999

# Huge but allowed sizes stay numbers in the JSON, never wrapped integers.
run memory --model tiny --micro-batch 1024 --seq 1048576 --attention eager --json
check_json 'd["per_gpu"]["activations"] > 1e16 and d["fits"] is False' "huge activations stay positive numbers"

# Every refusal names the one condition that failed, and an option that cannot act is refused,
# never ignored: ep 8 not dividing 60 GPUs (mixtral-8x7b's preset has no capacity factor: its
# expert parallelism is dropless, train_ep.sh checks its figures); --cp-naive without cp, ZeRO's
# options at another stage, a schedule without a pipeline.
run memory --model mixtral-8x7b --gpus 64 --nodes 8 --ep 8
check_status 0 "ep without a capacity factor: dropless"
check_contains "$out" "dropless" "... says so"
run memory --model mixtral-8x7b --gpus 60 --nodes 8 --ep 8 --capacity-factor 1
check_contains "$err" "dp must be a multiple of it (not 60)" "ep not dividing dp: that alone"
check_not_contains "$err" "capacity" "... and not the capacity factor, which was given"
for bad in "--cp-naive|--cp-naive splits a sequence" "--prefetch 0|it goes with --zero 3, not 0" \
    "--bucket 1MiB --zero 1|it goes with --zero 2, not 1" "--unit-layers 2 --zero 2|it goes with --zero 3, not 2" \
    "--schedule gpipe|it goes with --pp 2 or more"; do
    args=${bad%%|*}
    # shellcheck disable=SC2086
    run memory $args
    check_status 2 "memory $args is refused"
    check_contains "$err" "${bad#*|}" "... saying what it goes with"
done

# The step time as plan computes it, term by term (issue 32): the terms add up to the step; the
# compute is 6 Ψ T + 12 L h s T over the GPUs at the preset's peak x 0.5 (Kaplan's 6 per
# parameter and token, PaLM's attention; plan's efficiency), T the global batch's tokens
# dp x micro-batch x micro-batches x s; and it is the step train --time-as puts beside a run of
# that layout. Tolerance 2e-9: the JSON's 10 significant digits, twice.
peak=$(sed -n 's/^peak_flops *= *//p' "$srcdir/assets/clusters/h100-80gb.ini")
key() { sed -n "s/^$1 *= *//p" "$srcdir/assets/models/synthetic-7b.ini"; }
L=$(key layers) h=$(key d_model) s=$(key seq)
run memory --model synthetic-7b --dp 4 --tp 2 --zero 3 --micro-batch 2 --json
check_json "abs(sum(d['step_time'][k] for k in ('compute_s', 'bubble_s', 'imbalance_s', 'dp_exposed_s', 'tp_exposed_s', 'pp_exposed_s', 'cp_exposed_s', 'ep_exposed_s')) / d['step_time']['step_time_s'] - 1) < 2e-9" \
    "memory's step time: its terms add up to the step"
check_json "abs(d['step_time']['compute_s'] / ((6 * d['params'] + 12 * $L * $h * $s) * 8 * $s / (8 * $peak * 0.5)) - 1) < 2e-9" \
    "memory's compute: (6 Ψ T + 12 L h s T) / (GPUs x peak x 0.5), T = 8 x s"
mem=$out
run memory --model synthetic-7b --dp 4 --tp 2 --zero 3 --micro-batch 2
check_contains "$out" "step time, as plan computes it" "memory prints the step time with its terms"
check_contains "$out" "exposed tp" "... each a named line"
layers=$L
sed "s/^name = tiny/name = tiny-deep/; s/^layers = .*/layers = $layers/" \
    "$srcdir/assets/models/tiny.ini" >"$T_TMP/deep.ini"
run train --model "$T_TMP/deep.ini" --batch 8 --precision bf16 --steps 1 --tp 2 --dp 4 --zero 3 \
    --time-as synthetic-7b --json --summary
out=$(printf '{"m": %s, "t": %s}' "$mem" "$(printf '%s' "$out" | tail -1)")
check_json "abs(d['m']['step_time']['step_time_s'] / d['t']['summary']['timed_as']['predicted']['step_time_s'] - 1) < 2e-9" \
    "memory's step time is the calculator's that train --time-as shows for the layout"

done_testing
