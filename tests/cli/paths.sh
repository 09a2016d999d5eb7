#!/bin/sh
# The vector paths give the same bits: the AVX-512 code, the AVX2 code and the portable C loops
# (SCALELAB_CPU caps what the kernels use; base/cpu.h) train to the same step-1 gradients and
# the same losses and norms, and leave a collective with the same result. On a machine without
# AVX-512 (or AVX2) the capped runs repeat a path, which still holds.
. "$srcdir/tests/lib.sh"
threadless "numbers only: the vector paths' bits"

paths="native avx2 portable"

# each path's step-1 dump (gradients of the mean loss, bit for bit) and JSON steps, minus times
for p in $paths; do
    for prec in fp32 bf16; do
        mkdir -p "$T_TMP/$p-$prec"
        env SCALELAB_CPU=$p "$SCALELAB" train --model tiny --batch 8 --steps 4 --clip 0.5 \
            --precision $prec --json --dump "$T_TMP/$p-$prec" >"$T_TMP/out" 2>"$T_TMP/err"
        check_eq "$?" 0 "SCALELAB_CPU=$p: tiny $prec trains"
        grep '"step"' "$T_TMP/out" | sed 's/"sim_time_s":[^,]*,//' >"$T_TMP/$p-$prec.steps"
    done
    env SCALELAB_CPU=$p "$SCALELAB" train --model tiny --batch 8 --steps 4 --gpus 2 \
        --precision fp16 --clip 1 --json >"$T_TMP/out" 2>"$T_TMP/err"
    grep '"step"' "$T_TMP/out" | sed 's/"sim_time_s":[^,]*,//' >"$T_TMP/$p-ddp.steps"
    for dt in fp32 bf16; do
        env SCALELAB_CPU=$p "$SCALELAB" collective --gpus 5 --size 3MiB --dtype $dt --json \
            >"$T_TMP/out" 2>"$T_TMP/err"
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verified"], d["result_digest"], d["max_rel_error"])' \
            <"$T_TMP/out" >"$T_TMP/$p-coll-$dt"
    done
done
for p in avx2 portable; do
    for prec in fp32 bf16; do
        if cmp -s "$T_TMP/native-$prec/grads.f32" "$T_TMP/$p-$prec/grads.f32"; then
            ok "$p = native: tiny $prec step 1's gradients, bit for bit"
        else
            not_ok "$p = native: tiny $prec step 1's gradients, bit for bit"
        fi
        check_eq "$(cat "$T_TMP/$p-$prec.steps")" "$(cat "$T_TMP/native-$prec.steps")" \
            "$p = native: tiny $prec losses, norms and clip coefficients of 4 steps"
    done
    check_eq "$(cat "$T_TMP/$p-ddp.steps")" "$(cat "$T_TMP/native-ddp.steps")" \
        "$p = native: 2 GPUs of fp16 with a loss scaler, 4 steps"
    for dt in fp32 bf16; do
        check_eq "$(cat "$T_TMP/$p-coll-$dt")" "$(cat "$T_TMP/native-coll-$dt")" \
            "$p = native: a $dt all-reduce's check and result digest"
    done
done
check_contains "$(cat "$T_TMP/native-coll-bf16")" "True" "the all-reduce is verified"

done_testing
