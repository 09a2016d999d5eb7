#!/bin/sh
# scalelab plan: ranked layouts, rejected ones with reasons, JSON, scale and bad input.
. "$srcdir/tests/lib.sh"
threadless "the planner runs on one thread"
D="$srcdir/tests/data/calc"

run plan
check_status 0 "plan with the defaults (synthetic-7b on 8 x H100)"
check_contains "$out" "rank" "a ranked table"
check_contains "$out" "GiB over the 80.00 GiB" "rejected layouts say by how much they overflow"
check_contains "$out" "6ΨT + 12LhsT" "states the compute formula"

run plan --json
check_status 0 "plan --json"
check_json 'len(d["layouts"]) == 10 and len(d["rejected"]) > 0' "top 10 layouts and rejected ones"
check_json 'all(l["dp"]*l["tp"]*l["pp"] == 8 for l in d["layouts"])' "dp x tp x pp = 8"
check_json 'all(l["per_gpu_bytes"] <= 80*2**30 for l in d["layouts"])' "every layout kept fits"
check_json 'all(a["step_time_s"] <= b["step_time_s"] for a, b in zip(d["layouts"], d["layouts"][1:]))' "best first"
check_json 'all(0 < l["mfu"] <= 0.5 for l in d["layouts"])' "MFU at most the efficiency"
check_json 'all(set(("dp","tp","pp","zero","checkpoint","micro_batch","per_gpu_bytes","step_time_s","mfu","comm_bytes_per_gpu")) <= set(l) for l in d["layouts"])' "the issue's JSON keys"
check_json 'all("reason" in r for r in d["rejected"])' "rejected layouts carry a reason"
check_json 'not any(l["dp"] == 8 and l["zero"] == 0 for l in d["layouts"])' "plain DDP of the 7B never fits 80 GiB"

run plan --nodes 6 --json --top 0
check_json 'any("tp 3 does not divide the 32 attention heads" in r["reason"] for r in d["rejected"])' "48 GPUs: tp 3 rejected for the heads"

run plan --model gpt3-175b --nodes 512 --global-batch 1536 --json
check_status 0 "GPT-3 on 4096 GPUs"
check_json 'len(d["layouts"]) > 0 and d["gpus"] == 4096' "4096 GPUs planned"
check_json 'any("more than the 96 layers" in r["reason"] for r in d["rejected"])' "pp beyond the layers rejected"

run plan --efficiency 0.25 --json
check_json 'all(l["mfu"] <= 0.25 for l in d["layouts"])' "--efficiency bounds MFU"

run plan --model tiny --cluster "$D/small-cluster.ini" --global-batch 4 --json
check_status 0 "tiny on a 2-GPU cluster file with 4 MiB per GPU"
check_json 'all(l["per_gpu_bytes"] <= 4 * 1048576 for l in d["layouts"])' "layouts fit the file's 4 MiB (and some do: all() of none fails)"

run plan --gpu-mem 1GiB
check_status 0 "nothing fits: still exit 0"
check_contains "$out" "no layout fits." "says so"

bad() { # WHAT NEEDLE ARGS...
    what=$1; needle=$2; shift 2
    run plan "$@"
    check_status 2 "$what"
    check_contains "$err" "$needle" "$what: the message"
}
bad "more GPUs than the cluster" "--gpus 16: the cluster has 8 GPUs" --gpus 16
bad "zero batch" "--global-batch: '0' is not allowed" --global-batch 0
bad "efficiency 0" "--efficiency: '0' is not allowed" --efficiency 0
bad "efficiency NaN" "--efficiency: 'nan' is not allowed" --efficiency nan
bad "efficiency above 1" "--efficiency: '1.5' is not allowed" --efficiency 1.5
bad "unknown model" "unknown model preset" --model nosuch
bad "malformed model file" "bad-tied.ini:10:" --model "$D/bad-tied.ini"
bad "seq beyond learned positions" "learned positions" --model gpt3-175b --seq 4096
bad "negative memory" "cannot be negative" --gpu-mem -1GiB

# --ep-max that cannot act is refused, not ignored: a dense model has no experts. (Without a
# capacity factor, as mixtral-8x7b's preset, the layouts are dropless: tests/cli/train_ep.sh.)
run plan --ep-max 8
check_status 2 "--ep-max on a dense model"
check_contains "$err" "synthetic-7b has none" "... says it has no experts"

done_testing
