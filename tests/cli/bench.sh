#!/bin/sh
# The benchmark's smoke test: "bench --quick --only formats --json" runs and reports every
# conversion with a positive rate and its ratio to the copy bandwidth. Timings are never
# asserted (they depend on the machine and its load).
. "$srcdir/tests/lib.sh"

run bench --quick --only formats --json
check_status 0 "bench --quick --only formats --json"
check_json 'd["copy_GBps"] > 0' "the copy bandwidth is measured"
for what in "fp32->fp16" "fp16->fp32" "fp32->bf16" "bf16->fp32" "fp_round_n fp16" "fp_round_n bf16"; do
    check_json "any(r['group'] == 'formats' and r['measure'].startswith('$what ') and r['unit'] == 'GB/s' and r['value'] > 0 and r['limit'] == 'copy' and r['ratio'] > 0 and abs(r['ratio'] - r['value'] / d['copy_GBps']) < 1e-3 * r['ratio'] for r in d['results'])" "$what: GB/s and its ratio to copy"
done
check_json 'all(r["group"] == "formats" for r in d["results"])' "--only runs one group"

# The train group: each model's step reports tokens/s, matmul GFLOP/s against the sgemm rate
# and the time of every phase (ms, none negative); the torch-compare model (PyTorch's side-by-side
# shape) runs in fp32.
# (One thread: nothing for TSan to see; the normal and ASan builds run it.)
if $tsan; then
    echo "ok $((T_N + 1)) # SKIP the train group under TSan"; T_N=$((T_N + 1))
else
    run bench --quick --only train --json
    check_status 0 "bench --quick --only train --json"
    for m in "small fp32" "small bf16" "small fp16" "torch-compare fp32"; do
        check_json "any(r['measure'] == '$m step: matmul GFLOP/s' and r['limit'] == 'sgemm' and abs(r['ratio'] - r['value'] / d['sgemm_GFLOPs']) < 1e-3 * r['ratio'] for r in d['results'])" "$m: matmul GFLOP/s and its ratio to sgemm"
        check_json "sorted(r['measure'][len('$m step: time in '):] for r in d['results'] if r['measure'].startswith('$m step: time in ') and r['unit'] == 'ms' and r['value'] >= 0) == sorted(['matmuls', 'attention', 'norms', 'RoPE', 'SwiGLU', 'loss', 'optimizer', 'rounding', 'kept tensors', 'the rest'])" "$m: the time of every phase"
    done
    check_json "any(r['measure'] == 'small bf16 step time / fp32 step time' and r['value'] > 0 for r in d['results'])" "bf16 step against fp32's"
fi

# The window group: the real window in a pseudo-terminal, lesson 1's training panel playing;
# its CPU is a positive share of a core (the panel drew while playing, or the group fails).
# (Under TSan the window's threads run many times slower: the normal and ASan builds run it.)
if $tsan; then
    echo "ok $((T_N + 1)) # SKIP the window group under TSan"; T_N=$((T_N + 1))
else
    run bench --quick --only window --json
    check_status 0 "bench --quick --only window --json"
    check_json "any(r['group'] == 'window' and r['unit'] == '% core' and r['value'] > 0 for r in d['results'])" "the window's CPU while the training panel plays"
fi

run bench --list
check_contains "$out" "formats" "bench --list names the formats group"
check_contains "$out" "window" "bench --list names the window group"

done_testing
