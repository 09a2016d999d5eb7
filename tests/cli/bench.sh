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

run bench --list
check_contains "$out" "formats" "bench --list names the formats group"

done_testing
