#!/bin/sh
# The figures the README and DESIGN.md give of the running example, synthetic-7b, against the
# calculator: its parameter count, its 16 bytes per parameter in GB and in GiB (DESIGN.md's
# opening, README's example of an answer). A change of the preset or of the calculator that
# moves them fails here, so the prose is updated with it.
. "${srcdir:-.}/tests/lib.sh"
threadless "the calculator runs on one thread"

run memory --model synthetic-7b --json
check_status 0 "memory of synthetic-7b"
# params, the states in GB (2 decimals) and GiB (2 decimals), as the documents write them
read -r params gb gib <<EOT
$(printf '%s' "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin); p = d['per_gpu']
s = p['weights'] + p['gradients'] + p['master_weights'] + p['optimizer']
assert s == 16 * d['params'], 'the states are 16 bytes per parameter'
print('{:,}'.format(d['params']), '%.2f' % (s / 1e9), '%.2f' % (s / 2**30))")
EOT
design=$(cat "$srcdir/DESIGN.md")
readme=$(cat "$srcdir/README.md")
check_contains "$design" "computed from that shape:
$params." "DESIGN.md: the parameter count ($params)"
check_contains "$design" "16 bytes per parameter: $gb GB" "DESIGN.md: the states in GB ($gb)"
check_contains "$design" "**$gib GiB**" "DESIGN.md: the states in GiB ($gib)"
check_contains "$readme" "\`$gb GB\` or \`$gib\` for a question in GiB" \
    "README: the example answer is the states' figure ($gb GB, $gib GiB)"
done_testing
