#!/bin/bash
# A randomized fuzzer of scalelab's command line, run by hand (never by make check).
#
#   tests/fuzz/fuzz_cli.sh [SECONDS [COMMAND...]]
#
# Takes small valid command lines of each COMMAND (default: all of formats memory plan pipeline
# collective train run bench help, and the top level), mutates them (a value swapped for a
# random token: empty, negative, zero, NaN, inf, huge, non-numeric, a unit typo, a folder, a
# missing file; an option dropped, duplicated or added; two arguments swapped) and runs each
# under a timeout. It flags:
#   crash    an exit status other than 0, 1 or 2 (a signal, an abort)
#   sanitizer  an AddressSanitizer/LeakSanitizer/UBSan/TSan report on stderr
#   hang     no exit within FUZZ_TIMEOUT seconds (look: a huge but valid size is just slow)
#   message  exit 1 or 2 without a "scalelab: " line on stderr
# and keeps each finding's command line and output in FUZZ_OUT (default ./fuzz-cli-out), and
# the runs that failed with exit 1 (a run's own failure, to read) in FUZZ_OUT/exit1.txt.
# It ends with a summary and exits 1 if anything was flagged.
#
# Environment: SCALELAB, the binary (build it with --enable-sanitizers --enable-debug: the
# point is to catch what the sanitizers see); SCALELAB_DATA, the source tree (for presets and
# lessons); FUZZ_SEED (default: the time), FUZZ_TIMEOUT (default 30), FUZZ_OUT.
#
# Train and collective lines stay tiny (few steps, small sizes, few GPUs) so that a run takes
# well under a second; a mutation may still ask for a large run, which is why a timeout is
# reported as "hang" for a person to judge, not as a crash.
set -u
SECONDS_TOTAL=${1:-60}
shift 2>/dev/null
CMDS=("$@")
[ ${#CMDS[@]} -eq 0 ] && CMDS=(formats memory plan pipeline collective train run bench help top)
: "${SCALELAB:=./scalelab}"
here=$(cd "$(dirname "$0")/../.." && pwd)
export SCALELAB_DATA="${SCALELAB_DATA:-$here}"
: "${FUZZ_SEED:=$(date +%s)}"
: "${FUZZ_TIMEOUT:=30}"
: "${FUZZ_OUT:=./fuzz-cli-out}"
RANDOM=$FUZZ_SEED
mkdir -p "$FUZZ_OUT" && FUZZ_OUT=$(cd "$FUZZ_OUT" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-cli.XXXXXX")
trap 'chmod -R u+rwx "$W" 2>/dev/null; rm -rf "$W"' EXIT
export XDG_STATE_HOME="$W/state"
case "$SCALELAB" in /*) ;; *) SCALELAB="$PWD/$SCALELAB" ;; esac
cd "$W" || exit 1 # a mutated '--trace tiny' writes ./tiny: here, not in the caller's folder
mkdir -p "$W/dir" "$W/out"
printf '[model]\nname = x\nlayers = 1\n' >"$W/partial.ini"
head -c 300 /dev/urandom >"$W/junk.ini"
printf '[cluster]\nname = c\ngpus_per_node = 0\n' >"$W/cluster0.ini"
printf '[model]\nname = m\nlayers = 2\nd_model = 64\nheads = 3\nkv_heads = 3\nffn = 172\nffn_kind = swiglu\nvocab = 64\ntied = true\nseq = 64\n' >"$W/heads.ini"
: >"$W/unreadable.ini"; chmod 000 "$W/unreadable.ini"

# Seeds: one valid line per entry, words separated by spaces (no word has a space).
seeds_formats=("formats" "formats 0.1 -1.5 inf" "formats --json 65504 1e-8 nan" "formats -- -0")
seeds_memory=("memory" "memory --gpus 8 --zero 3 --checkpoint full --json"
    "memory --model tiny --tp 2 --pp 2 --gpus 8 --micro-batches 4 --schedule gpipe"
    "memory --params 7.5B --gpus 64 --nodes 8 --zero 2 --units GB"
    "memory --model llama2-70b --cluster a100-40gb --tp 8 --sequence-parallel --checkpoint every:2 --tensors")
seeds_plan=("plan --model tiny --gpus 4 --cluster workstation-4gpu --top 3"
    "plan --gpus 8 --global-batch 64 --efficiency 0.4 --json"
    "plan --model small --gpus 16 --nodes 2 --seq 256 --gpu-mem 40GiB")
seeds_pipeline=("pipeline" "pipeline --stages 4 --micro-batches 8 --schedule gpipe --json"
    "pipeline --stages 2 --micro-batches 4 --schedule interleaved --chunks 2")
seeds_collective=("collective --gpus 4 --size 4KiB"
    "collective --gpus 5 --size 12 --algo tree --dtype bf16 --json"
    "collective --gpus 4 --size 1KiB --op reduce-scatter --algo rhd --steps"
    "collective --gpus 3 --size 64 --op broadcast --root 2 --algo tree"
    "collective --gpus 4 --size 256 --algo dbtree --fail 1@2"
    "collective --gpus 8 --size 4KiB --nodes 2 --trace $W/out/t.json --events $W/out/e.jsonl"
    "collective --gpus 4 --size 64KiB --sweep --json")
seeds_train=("train --steps 2 --batch 1"
    "train --steps 2 --batch 1 --precision fp16 --loss-scale dynamic --json"
    "train --steps 3 --batch 1 --precision bf16 --loss-scale 1 --clip 1.0 --checkpoint every:2 --inject nan@1"
    "train --steps 2 --batch 1 --lr 1e-3 --betas 0.9,0.95 --wd 0.1 --seed 7 --summary")
seeds_run=("run --list" "run --quantities --json" "run 1" "run $here/tests/data/lessons/run-good.lesson")
seeds_bench=("bench --list" "bench --list --json" "bench --quick --only formats"
    "bench --quick --only formats --json")
seeds_help=("help" "help memory" "help collective")
seeds_top=("--help" "--version")

# Random tokens a value may become.
TOKENS=("" " " "0" "-1" "-0" "1" "2" "3" "7" "64" "257" "65536" "2147483648" "9223372036854775807"
    "9223372036854775808" "-9223372036854775809" "99999999999999999999" "1e308" "-1e308" "1e-320"
    "nan" "-nan" "inf" "-inf" "NaN" "0x10" "1.5" "0.5" "1e" "1e+" "abc" "--" "-" "--json" "=" "@"
    "1@" "@1" "0@0" "3@99" "-1@1" "1@-1" "every:" "every:0" "every:99999" "every:-1" "64MiB"
    "64Mb" "64MIB" "1GiB" "4GiB" "1KiB" "0B" "-1KiB" "1e30GiB" "80 GiB" "7.5B" "7.5Q" "1T"
    "fp8" "fp16" "bf16" "fp32" "ring" "tree" "dbtree" "rhd" "auto" "allgather" "reduce"
    "gpipe" "1f1b" "interleaved" "full" "selective" "sqrt" "none" "dynamic" "swiglu"
    "tiny" "small" "synthetic-7b" "gpt3-175b" "h100-80gb" "nosuch" "../x" "/"
    "$W/dir" "$W/none/x" "$W/junk.ini" "$W/partial.ini" "$W/cluster0.ini" "$W/heads.ini"
    "$W/unreadable.ini" "$W/out/new.json" "$W/out/x.ini"
    "$(head -c 300 /dev/zero | tr '\0' 9)" "é" "%s%n" "0.9,0.95" "0.9,1" "1,0.5" "nan@1" "inf@0"
    "spike@1:100" "spike@1:-1")
OPTIONS=(--json --gpus --size --model --cluster --nodes --steps --batch --tp --pp --dp --zero
    --precision --checkpoint --algo --op --dtype --fail --trace --events --sweep --root --seed
    --stages --micro-batches --schedule --chunks --global-batch --efficiency --top --units
    --params --seq --gpu-mem --lr --clip --loss-scale --inject --dump --list --only --quick
    --steps --tensors --sequence-parallel --micro-batch --optimizer --grad-accum --quantities
    --help --version --ascii --nosuch -x)

pick() { # ARRAY-NAME: echoes a random element
    local -n a=$1
    printf '%s' "${a[RANDOM % ${#a[@]}]}"
}

runs=0 found=0
declare -A kinds=() exits=()
flag() { # KIND: records the last run
    found=$((found + 1))
    kinds[$1]=$((${kinds[$1]:-0} + 1))
    local f="$FUZZ_OUT/$1-$found.txt"
    {
        printf 'kind: %s\nexit: %s\nargs:' "$1" "$status"
        printf ' %q' "${args[@]}"
        printf '\n--- stderr\n'
        head -c 4000 "$W/stderr"
        printf '\n--- stdout\n'
        head -c 2000 "$W/stdout"
    } >"$f"
    printf '%-9s exit %3s:' "$1" "$status"
    printf ' %q' "${args[@]}"
    printf '\n'
}

end=$((SECONDS + SECONDS_TOTAL))
echo "# fuzz_cli: seed $FUZZ_SEED, $SECONDS_TOTAL s, commands: ${CMDS[*]}"
while [ $SECONDS -lt $end ]; do
    cmd=${CMDS[RANDOM % ${#CMDS[@]}]}
    seed=$(pick "seeds_${cmd}")
    read -r -a args <<<"$seed"
    nmut=$((1 + RANDOM % 2))
    for ((m = 0; m < nmut; m++)); do
        n=${#args[@]}
        first=1
        [ "$cmd" = top ] && first=0
        case $((RANDOM % 6)) in
        0 | 1) # a value (or any word after the command) becomes a random token
            if [ $n -gt $first ]; then
                i=$((first + RANDOM % (n - first)))
                args[i]=$(pick TOKENS)
            fi ;;
        2) # drop a word
            if [ $n -gt $first ]; then
                i=$((first + RANDOM % (n - first)))
                args=("${args[@]:0:i}" "${args[@]:i+1}")
            fi ;;
        3) # duplicate an option and its value
            if [ $n -gt $first ]; then
                i=$((first + RANDOM % (n - first)))
                args+=("${args[@]:i:2}")
            fi ;;
        4) # add an option with a random value
            args+=("$(pick OPTIONS)" "$(pick TOKENS)") ;;
        5) # swap two words
            if [ $n -gt $((first + 1)) ]; then
                i=$((first + RANDOM % (n - first))) j=$((first + RANDOM % (n - first)))
                t=${args[i]} args[i]=${args[j]} args[j]=$t
            fi ;;
        esac
    done
    # keep the real runs small: a train that survived the mutations gets few steps
    if [ "$cmd" = train ]; then args+=(--steps 2); fi
    # and a lesson one step (a whole shipped lesson under ASan on a busy machine took over 30 s)
    if [ "$cmd" = run ] && [[ " ${args[*]} " != *" --list "* ]]; then args+=(--step 1); fi
    # and a full benchmark takes minutes: without --list, only the quick formats group
    if [ "$cmd" = bench ] && [[ " ${args[*]} " != *" --list "* ]]; then
        args=(bench --quick --only formats "${args[@]:1}")
    fi
    timeout -k 5 "$FUZZ_TIMEOUT" "$SCALELAB" "${args[@]}" >"$W/stdout" 2>"$W/stderr" </dev/null
    status=$?
    runs=$((runs + 1))
    exits[$status]=$((${exits[$status]:-0} + 1))
    if [ $status -eq 124 ] || [ $status -eq 137 ]; then
        flag hang
    elif grep -qE 'Sanitizer|runtime error' "$W/stderr"; then
        flag sanitizer
    elif [ $status -gt 2 ]; then
        flag crash
    elif [ $status -ne 0 ] && ! grep -q '^scalelab: ' "$W/stderr"; then
        flag message
    elif [ $status -eq 1 ]; then # a run that failed: not a finding by itself, kept to read
        {
            printf 'args:'
            printf ' %q' "${args[@]}"
            printf '\n  %s\n' "$(head -c 300 "$W/stderr")"
        } >>"$FUZZ_OUT/exit1.txt"
    fi
    find "$W/out" -mindepth 1 -delete 2>/dev/null
done
summary=""
ex=""
for k in "${!exits[@]}"; do ex="$ex exit$k=${exits[$k]}"; done
echo "# exit statuses:$ex"
for k in "${!kinds[@]}"; do summary="$summary $k=${kinds[$k]}"; done
echo "# fuzz_cli: $runs runs in $SECONDS_TOTAL s, $found flagged${summary:+:$summary} (details in $FUZZ_OUT)"
[ $found -eq 0 ]
