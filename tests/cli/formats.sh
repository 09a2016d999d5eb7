#!/bin/sh
# scalelab formats: the properties table, values in text and JSON, stdin, negative values,
# and bad input (exit 2, the value named, nothing on stdout). Expected bits are IEEE 754
# binary16, bfloat16 and fp8 (e4m3fn, e5m2) round-to-nearest-even, as PyTorch casts.
. "$srcdir/tests/lib.sh"
threadless "formats runs on one thread"

# fp32 bits of a JSON value, for checks that the printed number reads back exactly.
F32='(lambda v: __import__("struct").unpack(">I", __import__("struct").pack(">f", v))[0])'

# ---------------------------------------------------------------- properties
run formats
check_status 0 "formats without values"
for want in "fp32" "fp16" "bf16" "fp8 e4m3" "fp8 e5m2" "65504" "448" "57344" \
    "3.40282347e+38" "3.38953139e+38" "6.10351562e-05" "5.96046448e-08" "0.0009765625" \
    "0.0078125" "0.001953125" "1.52587891e-05"; do
    check_contains "$out" "$want" "properties table shows $want"
done
check_contains "$(printf '%s\n' "$out" | grep '^fp16 ')" "16    5   10   15" "fp16: 16 bits, 5 exponent, 10 mantissa, bias 15"
check_contains "$(printf '%s\n' "$out" | grep '^fp8 e4m3')" "no: overflow and inf become NaN" "e4m3 has no inf"

run formats --json
check_status 0 "formats --json without values"
check_json 'len(d["formats"]) == 5 and [f["key"] for f in d["formats"]] == ["fp32","fp16","bf16","fp8_e4m3","fp8_e5m2"]' "JSON lists the five formats"
check_json 'd["formats"][1]["max"] == 65504 and d["formats"][1]["min_normal"] == 2**-14 and d["formats"][1]["min_subnormal"] == 2**-24 and d["formats"][1]["epsilon"] == 2**-10' "fp16 properties"
check_json 'd["formats"][2]["max"] == (2 - 2**-7) * 2**127 and d["formats"][2]["min_subnormal"] == 2**-133 and d["formats"][2]["epsilon"] == 2**-7' "bf16 properties"
check_json 'd["formats"][3]["max"] == 448 and d["formats"][3]["has_inf"] is False and d["formats"][3]["min_subnormal"] == 2**-9 and d["formats"][3]["epsilon"] == 0.125' "e4m3 properties"
check_json 'd["formats"][4]["max"] == 57344 and d["formats"][4]["min_normal"] == 2**-14 and d["formats"][4]["min_subnormal"] == 2**-16 and d["formats"][4]["epsilon"] == 0.25' "e5m2 properties"
check_json 'all(f["bits"] == 1 + f["exponent_bits"] + f["mantissa_bits"] for f in d["formats"])' "bits = 1 + exponent + mantissa"

# ---------------------------------------------------------------- values, text
run formats 0.1
check_status 0 "formats 0.1"
check_contains "$out" "0x3dcccccd" "0.1 in fp32 is 0x3dcccccd"
check_contains "$out" "0.100000001" "0.1 held in fp32 as 0.100000001"
check_contains "$(printf '%s\n' "$out" | grep 'fp16 ')" "0.0999755859     0x2e66" "0.1 in fp16: 0.0999755859, 0x2e66"
check_contains "$(printf '%s\n' "$out" | grep 'bf16 ')" "0x3dcd" "0.1 in bf16: 0x3dcd"
check_contains "$(printf '%s\n' "$out" | grep 'e4m3 ')" "0x1d" "0.1 in e4m3: 0x1d"
check_contains "$(printf '%s\n' "$out" | grep 'e5m2 ')" "0x2e" "0.1 in e5m2: 0x2e"

run formats 65520 500 1e-8 1e39
check_status 0 "formats with overflow and underflow"
check_contains "$out" "0x7c00 inf        overflow: inf" "65520 overflows fp16 to inf"
check_contains "$out" "0x7f   n/a        overflow: NaN" "500 overflows e4m3 to NaN"
check_contains "$out" "0x0000 -1         underflow to 0" "1e-8 underflows fp16 to 0"
check_contains "$out" "too large for fp32" "1e39 is said to be too large for fp32"
run formats 1e-40 1e-50
check_contains "$out" "(0x000116c2), a subnormal in fp32" "1e-40 is an fp32 subnormal"
check_contains "$out" "too small for fp32" "1e-50 is said to be too small for fp32"

# ---------------------------------------------------------------- values, JSON
run formats --json 0.1 65504 65519 65520 500 464 61440 1e-8 6e-8 1e39 nan -inf 0
check_status 0 "formats --json with values"
check_json 'len(d["values"]) == 13 and [v["input"] for v in d["values"]][:3] == ["0.1", "65504", "65519"]' "one entry per value, inputs kept"
check_json 'd["values"][0]["fp32"]["bits"] == "0x3dcccccd" and d["values"][0]["fp16"]["bits"] == "0x2e66" and d["values"][0]["bf16"]["bits"] == "0x3dcd" and d["values"][0]["fp8_e4m3"]["bits"] == "0x1d" and d["values"][0]["fp8_e5m2"]["bits"] == "0x2e"' "0.1: bits in every format"
check_json "$F32(d['values'][0]['fp32']['value']) == 0x3dcccccd" "the fp32 value reads back exactly"
check_json 'd["values"][0]["fp16"]["value"] == 0.0999755859375 and d["values"][0]["bf16"]["value"] == 0.10009765625' "0.1: exact fp16 and bf16 values"
check_json 'abs(d["values"][0]["fp16"]["rel_error"] - (0.0999755859375 / d["values"][0]["fp32"]["value"] - 1)) < 1e-15' "rel_error = value / fp32 - 1"
check_json 'd["values"][1]["fp16"]["bits"] == "0x7bff" and d["values"][2]["fp16"]["bits"] == "0x7bff" and d["values"][2]["fp16"]["value"] == 65504' "65504 and 65519 stay 65504 in fp16"
check_json 'd["values"][3]["fp16"] == {"bits": "0x7c00", "value": "inf", "rel_error": "inf"}' "65520 -> fp16 inf"
check_json 'd["values"][4]["fp8_e4m3"] == {"bits": "0x7f", "value": "nan", "rel_error": None} and d["values"][4]["fp16"]["rel_error"] == 0' "500 -> e4m3 NaN, rel_error null; fp16 exact"
check_json 'd["values"][5]["fp8_e4m3"]["bits"] == "0x7e" and d["values"][5]["fp8_e4m3"]["value"] == 448' "464 -> e4m3 448 (tie to even)"
check_json 'd["values"][6]["fp8_e5m2"]["bits"] == "0x7c" and d["values"][6]["fp8_e5m2"]["value"] == "inf"' "61440 -> e5m2 inf"
check_json 'd["values"][7]["fp16"] == {"bits": "0x0000", "value": 0, "rel_error": -1} and d["values"][7]["bf16"]["bits"] == "0x322c"' "1e-8 -> fp16 0, bf16 keeps it"
check_json 'd["values"][8]["fp16"]["bits"] == "0x0001" and d["values"][8]["fp16"]["value"] == 2**-24' "6e-8 -> the smallest fp16 subnormal"
check_json 'd["values"][9]["fp32"] == {"bits": "0x7f800000", "value": "inf"} and d["values"][9]["fp16"]["rel_error"] == 0' "1e39 -> fp32 inf"
check_json 'd["values"][10]["fp32"]["value"] == "nan" and all(d["values"][10][k]["value"] == "nan" and d["values"][10][k]["rel_error"] is None for k in ("fp16","bf16","fp8_e4m3","fp8_e5m2"))' "nan stays NaN, rel_error null"
check_json 'd["values"][11]["fp16"]["value"] == "-inf" and d["values"][11]["fp8_e4m3"]["value"] == "nan" and d["values"][11]["fp8_e5m2"]["bits"] == "0xfc"' "-inf: -inf, e4m3 NaN"
check_json 'd["values"][12]["fp16"] == {"bits": "0x0000", "value": 0, "rel_error": 0}' "0 is exact"
check_json "all($F32(v['fp32']['value']) == int(v['fp32']['bits'], 16) for v in d['values'] if not isinstance(v['fp32']['value'], str))" "every fp32 value matches its bits"

# ---------------------------------------------------------------- negative values
run formats -1.5
check_status 0 "formats -1.5"
check_contains "$out" "0xbfc00000" "-1.5 without --"
check_contains "$out" "0xbe00" "-1.5 in fp16 is 0xbe00"
run formats -- -1.5
check_status 0 "formats -- -1.5"
check_contains "$out" "0xbfc00000" "-1.5 after --"
run formats --json -65520 -inf
check_json 'd["values"][0]["fp16"]["bits"] == "0xfc00" and d["values"][0]["fp16"]["value"] == "-inf" and d["values"][0]["fp8_e4m3"]["bits"] == "0xff"' "-65520 -> fp16 -inf, e4m3 NaN"

# ---------------------------------------------------------------- standard input
run_stdin "$(printf '0.1\n65504\n  -2 \n')" formats --json -
check_status 0 "values from stdin"
check_json '[v["input"] for v in d["values"]] == ["0.1", "65504", "-2"] and d["values"][1]["fp16"]["bits"] == "0x7bff" and d["values"][2]["bf16"]["bits"] == "0xc000"' "stdin values, one per line"
run_stdin "$(printf '3\n')" formats 1 - 2
check_status 0 "arguments and stdin together"
check_contains "$out" "1: held in fp32" "arguments and stdin mix (1)"
check_contains "$out" "3: held in fp32" "arguments and stdin mix (3 from stdin)"

# ---------------------------------------------------------------- bad input
for bad in abc 1e "" 0x 1.5.5 "1 2"; do
    run formats 0.1 "$bad"
    check_status 2 "formats '$bad'"
    check_contains "$err" "scalelab: formats: '$bad' is not a number" "'$bad' is named"
    check_eq "$out" "" "nothing printed for '$bad'"
done
run formats --json 0.1 abc
check_status 2 "--json with a bad value"
check_eq "$out" "" "--json: nothing printed when a value is bad"
run_stdin "$(printf '0.1\n\n2\n')" formats -
check_status 2 "empty line on stdin"
check_contains "$err" "stdin:2: '' is not a number" "the empty stdin line is named"
check_contains "$out" "0.1: held in fp32" "stdin streams: the line before the empty one is answered"
check_not_contains "$out" "2: held in fp32" "stdin streams: nothing after the empty line"
run_stdin "$(printf '1\nzz\n')" formats --json -
check_status 2 "bad stdin value"
check_contains "$err" "stdin:2: 'zz' is not a number" "the bad stdin value is named"
check_contains "$out" '"input": "1"' "stdin streams: the value before the bad one is answered"
printf '1\n2\0x\n' | "$SCALELAB" formats - >"$T_TMP/out" 2>"$T_TMP/err"
status=$?; out=$(cat "$T_TMP/out"); err=$(cat "$T_TMP/err")
check_status 2 "a NUL byte on stdin"
check_contains "$err" "stdin:2: a NUL byte" "the line with the NUL byte is named"
check_not_contains "$out" "2: held" "nothing printed for the line with a NUL byte"

# ---------------------------------------------------------------- a stream of any size
# (issue 11: "formats - < /dev/zero" grew to 24 GB; "yes 1 | formats - | head -1" never ended)
# Memory is capped at 300 MB of address space: reading the whole input first cannot pass.
# (Not under a sanitizer: those reserve terabytes of address space; the time limit stays.)
# The time limit only ends a stream that never would (what issue 11 found): it is far above
# what the 200,000 values take on a busy machine (an ASan run beside two other suites answered
# 172,788 of them in 60 s).
if ldd "$SCALELAB" 2>/dev/null | grep -q 'lib[at]san'; then
    limited() { timeout -k 2 600 "$@"; }
else
    limited() { (ulimit -v 300000 2>/dev/null; exec timeout -k 2 120 "$@"); }
fi
limited "$SCALELAB" formats - </dev/zero >"$T_TMP/out" 2>"$T_TMP/err"
status=$?; out=$(cat "$T_TMP/out"); err=$(cat "$T_TMP/err")
check_status 2 "formats - < /dev/zero"
check_eq "$err" "scalelab: formats: stdin:1: a NUL byte (not text)" "a NUL byte is refused at once"
head -c 100000000 /dev/zero | tr '\0' 7 | limited "$SCALELAB" formats - >"$T_TMP/out" 2>"$T_TMP/err"
status=$?; err=$(cat "$T_TMP/err")
check_status 2 "a 100 MB line"
check_eq "$err" "scalelab: formats: stdin:1: line longer than 256 bytes" "the line limit is named"
printf '1\n2\n%0300d\n' 0 | "$SCALELAB" formats - >"$T_TMP/out" 2>"$T_TMP/err"
status=$?; err=$(cat "$T_TMP/err")
check_contains "$err" "stdin:3: line longer than 256 bytes" "the long line's number"
first=$(yes 1 | limited "$SCALELAB" formats - 2>"$T_TMP/err" | head -n 1)
check_eq "$first" "1: held in fp32 as 1 (0x3f800000)" "yes 1 | formats - | head -1: the first answer, at once"
check_eq "$(cat "$T_TMP/err")" "" "the closed pipe ends it quietly"
# with SIGPIPE ignored (as some parents leave it), the write fails with EPIPE: quiet as well
first=$( (trap '' PIPE; yes 2.5 | limited "$SCALELAB" formats --json - 2>"$T_TMP/err" | head -n 3) | tail -n 1)
check_eq "$first" '    {' "formats --json - streams one object per value"
check_eq "$(cat "$T_TMP/err")" "" "EPIPE ends it quietly"
# 200,000 values stream through in bounded memory (the count of answers is exact)
n=$(yes 0.1 | head -n 200000 | limited "$SCALELAB" formats - | grep -c '^0.1: held')
check_eq "$n" 200000 "200,000 values from stdin, each answered"
yes 1 | limited "$SCALELAB" formats - >/dev/full 2>"$T_TMP/err"
status=$?
check_status 1 "an endless stream into a full disk stops"
check_eq "$(cat "$T_TMP/err")" "scalelab: write error: No space left on device" "and says why"
run formats --jsn
check_status 2 "misspelt option"
check_contains "$err" "did you mean '--json'?" "misspelt option gets a hint"

done_testing
