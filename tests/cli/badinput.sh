#!/bin/sh
# Bad input, command by command: every invocation below must exit 2 with one error on stderr
# that starts "scalelab: " and names the option (or file:line), print nothing on stdout, and
# leave no sanitizer report (this suite also runs in the ASan+UBSan and TSan builds). A few
# valid edge cases at the end must succeed with the right values.
. "$srcdir/tests/lib.sh"
threadless "options and files are refused before any thread starts"

# bad NEEDLE ARGS...: scalelab ARGS must fail with exit 2 and NEEDLE in its message.
bad() {
    needle=$1; shift
    run "$@"
    what="scalelab $*"
    if [ "$status" -ne 2 ]; then
        not_ok "$what: exit $status, wanted 2" "stderr: $(printf '%s' "$err" | head -c 600)"
    elif [ -n "$out" ]; then
        not_ok "$what: printed on stdout" "stdout: $(printf '%s' "$out" | head -c 300)"
    else
        case "$err" in
        *Sanitizer* | *"runtime error"*) not_ok "$what: sanitizer report" "$(printf '%s' "$err" | head -c 600)" ;;
        "scalelab: "*"$needle"*) ok "$what" ;;
        *) not_ok "$what: message" "wanted 'scalelab: ...$needle...'" "stderr: $err" ;;
        esac
    fi
}

D=$T_TMP
mkdir "$D/dir"
: >"$D/empty.ini"
printf '[model]\nname = x\n' >"$D/unreadable.ini"; chmod 000 "$D/unreadable.ini"
# ini SECTION DEFAULTS FILE KEY=VALUE...: a preset file of SECTION with the DEFAULTS (space-
# separated key=value), each KEY=VALUE replacing or adding a key and each -KEY removing one.
ini() {
    section=$1 defaults=$2 f=$3; shift 3
    {
        echo "[$section]"
        for kv in $defaults; do
            k=${kv%%=*}
            skip=
            for o in "$@"; do case "$o" in "$k="*) skip=1 ;; "-$k") skip=1 ;; esac; done
            [ -z "$skip" ] && echo "$k = ${kv#*=}"
        done
        for o in "$@"; do case "$o" in -*) ;; *) echo "${o%%=*} = ${o#*=}" ;; esac; done
    } >"$D/$f"
}
model() { # FILE KEY=VALUE...: a tiny model file with the keys replaced or added
    ini model "name=m layers=2 d_model=64 heads=4 kv_heads=4 ffn=172 ffn_kind=swiglu vocab=64 \
tied=true seq=64" "$@"
}
model good.ini
model heads.ini heads=5
model kvheads.ini kv_heads=3
model zero.ini layers=0
model neg.ini d_model=-64
model huge.ini vocab=99999999999999999999
model nan.ini seq=nan
model kind.ini ffn_kind=relu
model tied.ini tied=maybe
model missing.ini -ffn
model extra.ini colour=blue
printf '[model]\nname = a\n[model]\nname = b\n' >"$D/dupsec.ini"
{ cat "$D/good.ini"; echo "layers = 3"; } >"$D/dupkey.ini"
{ cat "$D/good.ini"; echo "[other]"; echo "x = 1"; } >"$D/othersec.ini"
head -c 600 /dev/urandom >"$D/junk.ini"
printf '\0\0\0[model]\n' >"$D/nul.ini"
{ echo "[model]"; printf 'name = '; head -c 5000 /dev/zero | tr '\0' a; echo; } >"$D/long.ini"
printf 'name = x\n' >"$D/nosec.ini"
printf '[model\nname = x\n' >"$D/badsec.ini"
printf '[model]\nthis line has no equals sign\n' >"$D/noeq.ini"
# a comment longer than inih's line buffer must not turn into a syntax error on the next line
{ printf '# %0300d\n' 0; cat "$D/good.ini"; } >"$D/longcomment.ini"
{ printf '\357\273\277'; cat "$D/good.ini"; } >"$D/bom.ini"
cluster() { # FILE KEY=VALUE...
    ini cluster "name=c gpus_per_node=8 nodes=1 hbm=80GiB peak_flops=1e15 intra_latency=2e-6 \
intra_bandwidth=450e9 inter_latency=5e-6 inter_bandwidth=50e9" "$@"
}
cluster cgood.ini
cluster c0gpu.ini gpus_per_node=0
cluster cneg.ini inter_bandwidth=-1
cluster cinf.ini peak_flops=inf
cluster cnan.ini intra_latency=nan
cluster chbm.ini hbm=80GiBs
cluster cbig.ini nodes=2000000
cluster cmiss.ini -hbm
cluster cslow.ini intra_bandwidth=1e-300
cluster cflops.ini peak_flops=1e-300
cluster chbm1.ini hbm=1B

# ---------------------------------------------------------------- top level
bad "unknown command" nosuch
bad "unknown command" ""
bad "unknown option" --nosuch
bad "help" help nosuch
bad "help" help ""
bad "help" help memory extra
bad "--version" --version extra
bad "--help" --help memory
bad "--ascii" --ascii memory

# ---------------------------------------------------------------- formats
bad "abc" formats abc
bad "''" formats ""
bad "1e" formats 1e
bad "0x" formats 0x1p3x
bad "--json" formats --json=1
bad "unknown option" formats --bogus 1

# ---------------------------------------------------------------- memory
bad "--gpus" memory --gpus
bad "--gpus" memory --gpus ""
bad "--gpus" memory --gpus 0
bad "--gpus" memory --gpus -8
bad "--gpus" memory --gpus nan
bad "--gpus" memory --gpus inf
bad "--gpus" memory --gpus 1e308
bad "--gpus" memory --gpus 9223372036854775808
bad "--gpus" memory --gpus 99999999999999999999
bad "--gpus" memory --gpus 8x
bad "--gpus" memory --gpus 2.5
bad "--tp" memory --tp 0
bad "--pp" memory --pp 100000
bad "--zero" memory --zero 4
bad "--zero" memory --zero -1
bad "--params" memory --params 0
bad "--params" memory --params -7B
bad "--params" memory --params 7.5Q
bad "--params" memory --params nan
bad "--params" memory --params 1e308
bad "--gpu-mem" memory --gpu-mem 80GiBs
bad "--gpu-mem" memory --gpu-mem 0
bad "--gpu-mem" memory --gpu-mem -80GiB
bad "--gpu-mem" memory --gpu-mem inf
bad "--gpu-mem" memory --gpu-mem 1e308
bad "--gpu-mem" memory --gpu-mem 1e400
bad "--gpu-mem" memory --gpu-mem 80Gb
bad "--units" memory --units TB
bad "--precision" memory --precision fp8
bad "--optimizer" memory --optimizer adam
bad "--checkpoint" memory --checkpoint every:0
bad "--checkpoint" memory --checkpoint every:
bad "--checkpoint" memory --checkpoint every:-1
bad "--checkpoint" memory --checkpoint some
bad "--schedule" memory --schedule interleaved2
bad "--grad-accum" memory --grad-accum fp16
bad "--seq" memory --seq 0
bad "--micro-batch" memory --micro-batch 0
bad "--micro-batch" memory --micro-batch 65536 --seq 1048576
bad "--nodes" memory --nodes 0
bad "--nodes" memory --nodes 99999999999
bad "inconsistent layout" memory --gpus 8 --dp 3
bad "--tp" memory --tp 5
bad "--tp" memory --tp 3 --model tiny
bad "--pp" memory --pp 5 --model tiny
bad "--model" memory --model nosuch
bad "--model" memory --model ""
bad "--model" memory --model "$D/dir"
bad "--model" memory --model "$D/none.ini"
bad "--model" memory --model "$D/empty.ini"
[ "$(id -u)" -ne 0 ] && bad "--model" memory --model "$D/unreadable.ini"
bad "heads.ini:11: heads (5) must divide d_model (64, line 4)" memory --model "$D/heads.ini"
bad "kvheads.ini:" memory --model "$D/kvheads.ini"
bad "zero.ini:" memory --model "$D/zero.ini"
bad "neg.ini:" memory --model "$D/neg.ini"
bad "huge.ini:" memory --model "$D/huge.ini"
bad "nan.ini:" memory --model "$D/nan.ini"
bad "kind.ini:" memory --model "$D/kind.ini"
bad "tied.ini:" memory --model "$D/tied.ini"
bad "missing.ini" memory --model "$D/missing.ini"
bad "extra.ini:" memory --model "$D/extra.ini"
bad "dupsec.ini:" memory --model "$D/dupsec.ini"
bad "dupkey.ini:" memory --model "$D/dupkey.ini"
bad "othersec.ini:" memory --model "$D/othersec.ini"
bad "junk.ini" memory --model "$D/junk.ini"
bad "nul.ini" memory --model "$D/nul.ini"
bad "longcomment.ini:1: a line longer" memory --model "$D/longcomment.ini"
bad "long.ini:2: a line longer" memory --model "$D/long.ini"
bad "nosec.ini:" memory --model "$D/nosec.ini"
bad "badsec.ini:" memory --model "$D/badsec.ini"
bad "noeq.ini:" memory --model "$D/noeq.ini"
bad "--cluster" memory --cluster nosuch
bad "--cluster" memory --cluster "$D/good.ini"
bad "c0gpu.ini:" memory --cluster "$D/c0gpu.ini"
bad "cneg.ini:" memory --cluster "$D/cneg.ini"
bad "cinf.ini:" memory --cluster "$D/cinf.ini"
bad "cnan.ini:" memory --cluster "$D/cnan.ini"
bad "chbm.ini:" memory --cluster "$D/chbm.ini"
bad "cbig.ini:" memory --cluster "$D/cbig.ini"
bad "cmiss.ini" memory --cluster "$D/cmiss.ini"
# absurdly small rates made the α-β times infinite, and memory --json dropped them
bad "cslow.ini:10: 'intra_bandwidth' must be a number at least 1000" memory --json --cluster "$D/cslow.ini"
bad "cflops.ini:10: 'peak_flops'" plan --cluster "$D/cflops.ini"
bad "chbm1.ini:10: 'hbm'" collective --cluster "$D/chbm1.ini"
bad "--params" memory --model tiny --params 1e6
bad "--tensors" memory --params 7B --tensors
bad "twice" memory --gpus 8 --gpus 4
bad "twice" memory --json --json
bad "unexpected" memory extra
bad "--gpus" memory --json --gpus 0
bad "--model" memory --json --model "$D/heads.ini"

# ---------------------------------------------------------------- plan
bad "--gpus" plan --gpus 0
bad "--gpus" plan --gpus 99999999999999999999
bad "--global-batch" plan --global-batch 0
bad "--global-batch" plan --global-batch -1
bad "--efficiency" plan --efficiency 0
bad "--efficiency" plan --efficiency 1.5
bad "--efficiency" plan --efficiency nan
bad "--efficiency" plan --efficiency -inf
bad "--top" plan --top -1
bad "--seq" plan --seq 0
bad "--gpu-mem" plan --gpu-mem 80XB
bad "--units" plan --units gib2
bad "--model" plan --model "$D/junk.ini"
bad "--cluster" plan --cluster "$D/dir"
bad "--cluster" plan --cluster "$D/c0gpu.ini"
bad "twice" plan --top 3 --top 4
bad "--efficiency" plan --json --efficiency 2

# ---------------------------------------------------------------- pipeline
bad "--stages" pipeline --stages 0
bad "--stages" pipeline --stages 65
bad "--stages" pipeline --stages ""
bad "--micro-batches" pipeline --micro-batches 0
bad "--micro-batches" pipeline --micro-batches 1025
bad "--micro-batches" pipeline --micro-batches 1e308
bad "--schedule" pipeline --schedule zb
bad "--chunks" pipeline --schedule interleaved --chunks 1
bad "--chunks" pipeline --schedule interleaved --chunks 17
bad "--micro-batches" pipeline --schedule interleaved --stages 4 --micro-batches 6
bad "--chunks" pipeline --schedule 1f1b --chunks 4
bad "twice" pipeline --stages 2 --stages 3
bad "--stages" pipeline --json --stages nan

# ---------------------------------------------------------------- collective
bad "--gpus" collective --gpus 0
bad "--gpus" collective --gpus 257
bad "--gpus" collective --gpus -1
bad "--gpus" collective --gpus 4.5
bad "--size" collective --size 0
bad "--size" collective --size -1
bad "--size" collective --size 1e308
bad "--size" collective --size 64MiBB
bad "--size" collective --size 64Mb
bad "--size" collective --size 3 --dtype fp32
bad "--size" collective --size nan
bad "--size" collective --size 9223372036854775808
bad "--size" collective --gpus 256 --size 1GiB
bad "--op" collective --op alltogether
bad "--size" collective --op alltoall --gpus 3 --size 1000
bad "--algo" collective --op alltoall --algo tree
bad "--algo" collective --algo direct
bad "--algo" collective --algo butterfly
bad "--algo" collective --op broadcast --algo rhd
bad "--algo" collective --op allgather --algo rhd --gpus 6
bad "--dtype" collective --dtype fp64
bad "--root" collective --op broadcast --root 8 --gpus 8
bad "--root" collective --op broadcast --root -1
bad "--fail" collective --fail 8@0 --gpus 8
bad "--fail" collective --fail 0@999 --gpus 4 --size 1KiB
bad "--fail" collective --fail x@1
bad "--fail" collective --fail 1
bad "--fail" collective --fail @
bad "--fail" collective --fail 1@-1
bad "--nodes" collective --nodes 3 --gpus 8
bad "--nodes" collective --nodes 0
bad "--cluster" collective --cluster nosuch
bad "--cluster" collective --cluster "$D/cnan.ini"
bad "--seed" collective --seed -1
bad "--seed" collective --seed abc
bad "--trace" collective --gpus 2 --size 1KiB --trace "$D/dir"
bad "--trace" collective --gpus 2 --size 1KiB --trace "$D/none/t.json"
bad "--events" collective --gpus 2 --size 1KiB --events "$D/dir"
bad "--trace" collective --gpus 2 --size 1KiB --trace ""
bad "twice" collective --gpus 2 --gpus 4
bad "--sweep" collective --sweep --steps
bad "--steps" collective --steps --json --gpus 2 --size 1KiB
bad "--sweep" collective --sweep --size 512
bad "--sweep" collective --sweep --json --size 1020
bad "--gpus" collective --json --gpus 0

# ---------------------------------------------------------------- train (options only: no run)
bad "--steps" train --steps 0
bad "--steps" train --steps -1
bad "--steps" train --steps 1e308
bad "--batch" train --batch 0
bad "--lr" train --lr -1
bad "--lr" train --lr nan
bad "--clip" train --clip 0
bad "--precision" train --precision e4m3
bad "--loss-scale" train --loss-scale abc
bad "--checkpoint" train --checkpoint every:0
# outputs and options that would fail only after the run are refused before it
bad "--trace" train --steps 1 --trace "$D/dir"
bad "--trace" train --steps 1 --trace ""
bad "--dump" train --steps 1 --dump "$D/none/d"
bad "--dump" train --steps 1 --dump "$D/good.ini"
bad "--dump" train --steps 1 --dump ""
bad "given twice" train --steps 1 --steps 2
bad "given twice" train --steps 1 --json --json
bad "--model" train --steps 1 --model "$D/dir"
bad "--model" train --steps 1 --model ""
bad "--model" train --steps 1 --model "$D/heads.ini"
bad "--inject" train --inject nan@0
bad "--inject" train --inject nan@99999 --steps 10
bad "heads.ini:11:" train --model "$D/heads.ini"
bad "dir" train --model "$D/dir"
bad "--betas" train --betas 0.9
bad "--eps" train --eps inf

# ---------------------------------------------------------------- run, bench, help
bad "run" run
bad "99" run 99
bad "nosuch" run nosuch
bad "dir" run "$D/dir"
bad "none.lesson" run "$D/none.lesson"
bad "empty.ini" run "$D/empty.ini"
bad "unknown option" run --bogus
bad "--list" run --list 1
bad "--list and --quantities" run --list --quantities
bad "benchmark" bench --only nosuch
bad "benchmark" bench --only ""
bad "unexpected" bench extra
bad "twice" bench --only formats --only train
bad "--list" bench --list --only formats
bad "--list" bench --list --quick

# ---------------------------------------------------------------- valid edge cases
run collective --gpus 1 --size 4 --json
check_status 0 "collective on 1 GPU, one element"
check_json 'd["verified"] and d["bytes_sent_total"] == 0 and d["gpus"] == 1' "1 GPU: verified, sends nothing"
check_json 'd["algbw_GBps"] is None and d["busbw_GBps"] is None and d["host_algbw_GBps"] is None' \
    "1 GPU: no bandwidth (null), not 0 GB/s"
run collective --gpus 1 --size 4
check_status 0 "collective on 1 GPU, text"
check_contains "$out" "algbw, busbw: none on one GPU" "1 GPU: the text says there is no bandwidth"
check_not_contains "$out" "algbw 0.00" "and prints no 0 GB/s"
run collective --gpus 4 --size 4 --json
check_status 0 "collective of one element on 4 GPUs"
check_json 'd["verified"] and d["bytes_sent_total"] == 2*3*4' "one element: 2(N-1) x size bytes in all"
run collective --gpus 256 --size 1KiB --json
check_status 0 "collective on 256 GPUs, 1 KiB"
check_json 'd["verified"] and d["bytes_sent_total"] == 2*255*1024' "256 GPUs: 2(N-1) x size"
for a in tree dbtree rhd; do
    run collective --gpus 5 --size 12 --algo "$a" --dtype bf16 --json
    check_status 0 "$a all-reduce of 6 bf16 elements on 5 GPUs"
    check_json 'd["verified"] and d["max_rel_error"] == 0 or d["verified"]' "$a: verified"
done
run pipeline --stages 1 --micro-batches 1 --json
check_status 0 "a one-stage pipeline"
check_json 'd["bubble_over_ideal"] == 0 and d["bubble_over_wall"] == 0' "one stage: no bubble"
run memory --model "$D/good.ini" --gpus 1 --json
check_status 0 "a user's model file"
# 2 layers of d 64, 4 heads, ffn 172, vocab 64 tied: 64*64 + 2*(2*64 + 4*64*64 + 3*64*172) + 64
check_json 'd["model"] == "m" and d["params"] == 64*64 + 2*(2*64 + 4*64*64 + 3*64*172) + 64' "its name and shape are read"
run memory --model "$D/bom.ini" --json
check_status 0 "a model file that starts with a UTF-8 byte-order mark"
check_json 'd["params"] == 64*64 + 2*(2*64 + 4*64*64 + 3*64*172) + 64' "read as without it"
run memory --params 1 --json
check_status 0 "a model of one parameter"
check_json 'd["per_gpu"]["total"] == 16' "one parameter: 16 bytes"
# beyond double's range is still a number: it becomes inf in fp32, as 1e39 does (and as
# Python's float('1e400') is inf); below it, the nearest value, zero
run formats --json 1e400 -1e-400
check_status 0 "formats of values beyond double's range"
check_json 'd["values"][0]["fp32"]["value"] == "inf" and d["values"][1]["fp32"]["bits"] == "0x80000000"' "1e400 is inf, -1e-400 is -0"
run bench --list --json
check_status 0 "bench --list --json"
check_json '[g["name"] for g in d["groups"]][:3] == ["formats", "collective", "train"]' "the groups as JSON (it printed text)"
run help help
check_status 0 "help help: the overview"
check_contains "$out" "usage: scalelab" "help help shows the usage"
run formats -- -0
check_status 0 "formats -0"
check_contains "$out" "0x80000000" "-0 keeps its sign"

done_testing
