#!/bin/sh
# scalelab's tiny GPT against PyTorch: `train --dump` then tests/torch_check.py recomputes the
# loss and every gradient with torch.autograd on the same parameters and batch (fp32, 1e-5
# relative). Skipped when no python3 with PyTorch is installed (Debian: python3-torch).
. "$srcdir/tests/lib.sh"

py=$(torch_python)
if [ -z "$py" ]; then
    echo "ok 1 # SKIP no python3 with PyTorch (python3-torch)"
    echo "1..1"
    exit 0
fi
if $tsan; then # one GPU's numbers: nothing for TSan to see that train.sh does not show
    echo "ok 1 # SKIP under TSan (the normal and ASan builds compare with PyTorch)"
    echo "1..1"
    exit 0
fi
# torch_check ARGS...: tests/torch_check.py on the dump, in the normal build. Under ASan the
# dumps are written (scalelab's code, which it watches) but not compared: PyTorch's side runs
# none of scalelab's code, and its start took most of this test's CPU there.
torch_check() {
    if $sanitized; then
        [ -s "$T_TMP/d/params.f32" ] && [ -s "$T_TMP/d/grads.f32" ] && [ -s "$T_TMP/d/loss.txt" ]
        return
    fi
    "$py" "$srcdir/tests/torch_check.py" "$T_TMP/d" "$@" >"$T_TMP/check" 2>&1
}
# compared WHAT: the check's name, which says what a sanitizer build checked instead
compared() { if $sanitized; then echo "the dump is written (the normal build compares: $1)"; else echo "$1"; fi; }

for args in "--batch 2" "--batch 3 --seed 9 --checkpoint full" "--model small --batch 1"; do
    rm -rf "$T_TMP/d"
    run train --steps 1 $args --dump "$T_TMP/d"
    check_status 0 "train --dump ($args)"
    what=$(compared "loss and gradients agree with PyTorch to 1e-5 ($args)")
    if torch_check; then ok "$what"; else not_ok "$what" "$(tail -5 "$T_TMP/check" 2>/dev/null)"; fi
done

# bf16 and fp16: the dumped gradients (unscaled) differ from fp32's by the format's rounding:
# measured ~1e-3 (fp16, epsilon 2^-11 = 4.9e-4) and ~1e-2 (bf16, 2^-8 = 3.9e-3) relative in
# the worst tensor; the check wants more than 1e-5 (the rounding happened) and less than 30
# epsilons (it stayed rounding, not a wrong formula).
for fmt in "fp16 1e-5 1.5e-2" "bf16 1e-5 1.2e-1"; do
    set -- $fmt
    rm -rf "$T_TMP/d"
    run train --steps 1 --batch 2 --precision $1 --dump "$T_TMP/d"
    what=$(compared "$1 gradients are fp32's up to $1 rounding")
    if torch_check $2 $3; then ok "$what"; else not_ok "$what" "$(tail -3 "$T_TMP/check" 2>/dev/null)"; fi
done

# scripts/torch_compare.py (PyTorch's step beside bench's torch-compare line) runs the same
# model on a preset and reports a rate; a file that is not a model is refused with exit 2.
# (Python alone: the sanitizer builds leave it to the normal build.)
if $sanitized; then
    echo "ok $((T_N + 1)) # SKIP torch_compare.py under a sanitizer (no scalelab code runs)"; T_N=$((T_N + 1))
    done_testing
    exit
fi
if "$py" "$srcdir/scripts/torch_compare.py" "$srcdir/assets/models/tiny.ini" 2 0.2 \
    >"$T_TMP/tc" 2>&1 && grep -Eq '^torch .* fp32 step, batch 2 x 64, one thread: [1-9][0-9]* tokens/s' "$T_TMP/tc"; then
    ok "torch_compare.py times PyTorch's step of a preset"
else
    not_ok "torch_compare.py times PyTorch's step of a preset" "$(tail -3 "$T_TMP/tc")"
fi
"$py" "$srcdir/scripts/torch_compare.py" "$srcdir/README.md" >"$T_TMP/tc" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "not a model file" "$T_TMP/tc"; then
    ok "torch_compare.py refuses a file that is not a model (exit 2)"
else
    not_ok "torch_compare.py refuses a file that is not a model (exit 2)" "exit $rc: $(cat "$T_TMP/tc")"
fi
"$py" "$srcdir/scripts/torch_compare.py" "$srcdir/assets/models/tiny.ini" zero >"$T_TMP/tc" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "torch_compare.py: " "$T_TMP/tc" && ! grep -q Traceback "$T_TMP/tc"; then
    ok "torch_compare.py refuses a batch that is not a number (exit 2, no traceback)"
else
    not_ok "torch_compare.py refuses a batch that is not a number (exit 2, no traceback)" "exit $rc: $(cat "$T_TMP/tc")"
fi
done_testing
