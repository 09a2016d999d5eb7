# Helpers for scalelab's shell tests. Each test prints TAP ("ok N - what" / "not ok N - what")
# and exits 0 only if every check passed. Source it, call the checks, end with "done_testing".
#
# Environment (set by the test harness): SCALELAB, the binary under test; srcdir, the source tree.

: "${SCALELAB:=./scalelab}"
: "${srcdir:=.}"
export SCALELAB_DATA="${SCALELAB_DATA:-$srcdir}"
export LC_ALL=C.UTF-8
unset NO_COLOR
T_N=0
T_FAILED=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/scalelab-test.XXXXXX")
trap 'rm -rf "$T_TMP"' EXIT
# Saved progress of the window goes to the test's own folder: tests run in parallel and must
# not reopen where another test left off, nor touch the user's own progress.
export XDG_STATE_HOME="$T_TMP/state"
# python3 is Debian's (scripts/setup.sh installs it, with PyTorch and NumPy), even where a
# version manager puts its shim first on the PATH: pyenv's, a chain of shell scripts, took 0.2 s
# of CPU to start the interpreter that takes 0.03 s, on each of the suite's thousands of checks.
[ -x /usr/bin/python3 ] && python3() { /usr/bin/python3 "$@"; }

ok() { T_N=$((T_N + 1)); echo "ok $T_N - $1"; }
not_ok() {
    T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $1"
    shift; for line in "$@"; do printf '#   %s\n' "$line"; done
}

# run ARGS...: runs scalelab; sets $out, $err and $status. With SCALELAB_TEST_PROFILE=FILE,
# each run's CPU seconds (user + system, which a busy machine does not inflate as it does the
# wall's) and arguments are added to FILE (where a test's time goes).
run() {
    if [ -n "${SCALELAB_TEST_PROFILE:-}" ]; then
        # a subshell's `times`: its own CPU, then its children's ("0m1.50s 0m0.20s")
        status=$( ("$SCALELAB" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null; echo $? >"$T_TMP/rc"
            times >"$T_TMP/cpu") && cat "$T_TMP/rc")
        echo "$(sed -n 2p "$T_TMP/cpu" | sed 's/[ms]/ /g' | awk '{print $1 * 60 + $2 + $3 * 60 + $4}') $(basename "$0") $*" >>"$SCALELAB_TEST_PROFILE"
    else
        "$SCALELAB" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
        status=$?
    fi
    out=$(cat "$T_TMP/out")
    err=$(cat "$T_TMP/err")
}

# run_stdin INPUT ARGS...: the same, with INPUT on standard input.
run_stdin() {
    local input=$1; shift
    printf '%s' "$input" | "$SCALELAB" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
    status=$?
    out=$(cat "$T_TMP/out")
    err=$(cat "$T_TMP/err")
}

check_status() { # WANT WHAT
    if [ "$status" -eq "$1" ]; then ok "$2 (exit $1)"; else
        not_ok "$2: exit $status, wanted $1" "stderr: $err"; fi
}

# check_contains HAYSTACK NEEDLE WHAT: an empty NEEDLE (a grep that found nothing) fails: it
# would be in every haystack.
check_contains() {
    if [ -z "$2" ]; then not_ok "$3" "the needle is empty: nothing to look for"; return; fi
    case "$1" in *"$2"*) ok "$3" ;; *) not_ok "$3" "missing: $2" "in: $(printf '%s' "$1" | head -c 2000)" ;; esac
}

check_not_contains() { # HAYSTACK NEEDLE WHAT (an empty NEEDLE fails, as above)
    if [ -z "$2" ]; then not_ok "$3" "the needle is empty: nothing to look for"; return; fi
    case "$1" in *"$2"*) not_ok "$3" "unexpected: $2" ;; *) ok "$3" ;; esac
}

check_eq() { # GOT WANT WHAT
    if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:  $1" "want: $2"; fi
}

# The python of every check below: all(...) over an empty list raises instead of holding, so a
# check of every GPU, step or layer cannot pass on a list that came out empty.
T_PY_ALL='import builtins
def all(xs):
    xs = list(xs)
    assert xs, "all() over an empty list"
    return builtins.all(xs)
'

# check_json EXPR WHAT: evaluates a python3 expression on the JSON in $out (bound to 'd').
check_json() {
    if printf '%s' "$out" | python3 -c "$T_PY_ALL
import json,sys,math; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)" 2>"$T_TMP/pyerr"; then
        ok "$2"
    else
        not_ok "$2" "expression: $1" "$(cat "$T_TMP/pyerr")" "json: $(printf '%s' "$out" | head -c 1500)"
    fi
}

# check_jsonl EXPR WHAT: EXPR (python) over d, the list of the JSON lines of $out.
check_jsonl() {
    if printf '%s\n' "$out" | python3 -c "$T_PY_ALL
import json, sys, math
d = [json.loads(l) for l in sys.stdin if l.strip()]
sys.exit(0 if ($1) else 1)" 2>"$T_TMP/pyerr"; then
        ok "$2"
    else
        not_ok "$2" "expression: $1" "$(cat "$T_TMP/pyerr")" "out: $(printf '%s' "$out" | head -c 1500)"
    fi
}

# refused WHAT NEEDLE ARGS...: scalelab ARGS is refused, exit 2, with NEEDLE in its message.
refused() {
    what=$1 needle=$2; shift 2
    run "$@"
    check_status 2 "$what"
    check_contains "$err" "$needle" "$what: the message says why"
}

# A sanitizer build runs about ten times slower: tests check fewer cases there. Under TSan,
# whose worth is in the threads' races and not in the numbers, a training test runs one
# layout of each kind (the normal and ASan builds run them all).
sanitized=false tsan=false
if ldd "$SCALELAB" 2>/dev/null | grep -q 'libasan\|libtsan'; then sanitized=true; fi
if ldd "$SCALELAB" 2>/dev/null | grep -q 'libtsan'; then tsan=true; fi
# quick: the fewer cases, under the sanitizers and where tests/as_cpu.sh runs the numeric tests
# again under other CPU configurations (SCALELAB_TEST_QUICK=1). There (SCALELAB_TEST_NUMERIC=1)
# a test checks only what a CPU's kernels can move (losses, gradients, bit-identities between
# layouts), which comes first in it: numeric_done ends it where the rest begins (ledgers, bytes,
# orders, refusals: the same on every CPU).
quick=$sanitized
[ -n "${SCALELAB_TEST_QUICK:-}" ] && quick=true
# threadless WHY: under TSan, which looks for races between threads, a test whose commands
# run on one thread (parsers, the calculator) or which checks numbers only is skipped whole;
# the normal and ASan builds run it.
threadless() {
    $tsan || return 0
    echo "1..0 # SKIP under TSan: $1 (the normal and ASan builds run it)"
    exit 0
}
# tsan_covered WHERE: under TSan, a test whose threads are the ones WHERE runs under TSan, at a
# fraction of its cost (a window driving runs and collectives the CLI and unit tests drive
# directly), is skipped whole; the normal and ASan builds run it.
tsan_covered() {
    $tsan || return 0
    echo "1..0 # SKIP under TSan: its threads are those $1 runs under TSan (the normal and ASan builds run it)"
    exit 0
}
numeric_done() {
    [ -n "${SCALELAB_TEST_NUMERIC:-}" ] || return 0
    done_testing
    exit $?
}

# save NAME: the last run's output, for py's load(NAME).
save() { printf '%s\n' "$out" >"$T_TMP/$1.jsonl"; }

# The python3 that has PyTorch (Debian's python3-torch): python3 on the PATH first, then the
# system's own (a PATH may put another python3 first); empty if neither has it.
torch_python() {
    for p in python3 /usr/bin/python3; do
        if "$p" -c "import importlib.util as u; assert u.find_spec('torch')" 2>/dev/null; then
            echo "$p"; return
        fi
    done
}

# py WHAT: runs the python3 in $PYCODE, where load(NAME) gives a saved run's JSON lines and
# f32(PATH) a file of little-endian floats; ok if it raises nothing.
py() {
    if python3 - "$T_TMP" >"$T_TMP/py.out" 2>&1 <<PY
$T_PY_ALL
import json, sys, math, os, struct
T = sys.argv[1]
def load(name):
    return [json.loads(l) for l in open(os.path.join(T, name + ".jsonl")) if l.strip()]
def f32(p):
    b = open(p, 'rb').read(); return struct.unpack('<%df' % (len(b) // 4), b)
$PYCODE
PY
    then ok "$1"; else not_ok "$1" "$(cat "$T_TMP/py.out")"; fi
}

# The training tests' shared checks: a run on several thread-GPUs against one GPU's, and
# against the calculator. Each is one TAP check on the last run; the tolerance is the
# caller's, who says why next to it.

# check_losses REF STEPS TOL WHAT [GPUS]: the last run (train --steps STEPS --json) and the
# saved one-GPU run REF have STEPS step lines and a summary each, and at every step the loss
# is within TOL of REF's, relative to REF's; with GPUS, the run's layout has that many GPUs.
# The step's agreement too (the GPUs' loss, norm and inf/NaN verdict): at every step the
# global sum of squares of the gradients within AGREE_TOL of REF's and the clip coefficient
# within it, relative, the same skip verdict and loss scale; and every GPU of the run holds
# that same verdict, scale after the step, coefficient and sum of squares.
#
# AGREE_TOL is 1e-6, relative to the sum of squares: an element of tiny's 202,304 parameters
# holds on average 1/202,304 = 4.9e-6 of it, so a GPU whose norm misses one element of its
# shard (or counts one twice) exceeds it, at one step or another (planted, 2e-6 to 6e-4 over
# 30 steps); what else differs is the order of the sums, whose fp32 roundings AdamW carries on
# from step to step: at most 5.4e-7 on the development host over every layout below.
AGREE_TOL=1e-6
check_losses() {
    local gpus=""
    [ -n "${5:-}" ] && gpus="assert b[-1]['summary']['layout']['gpus'] == $5, b[-1]['summary']['layout']"
    save _losses
    PYCODE="
a, b = load('$1'), load('_losses')
assert len(a) == len(b) == $2 + 1, (len(a), len(b))
worst = max(abs(x['loss'] - y['loss']) / abs(x['loss']) for x, y in zip(a[:-1], b[:-1]))
assert worst < $3, worst
$gpus
" py "$4: every step's loss within $3 of one GPU's"
    PYCODE="
a, b = load('$1'), load('_losses')
for x, y in zip(a[:-1], b[:-1]):
    s = x['step']
    assert abs(y['grad_sumsq'] - x['grad_sumsq']) <= $AGREE_TOL * x['grad_sumsq'], (s, x['grad_sumsq'], y['grad_sumsq'])
    assert abs(y['clip_coef'] - x['clip_coef']) <= $AGREE_TOL * x['clip_coef'], (s, x['clip_coef'], y['clip_coef'])
    assert (y['skipped'], y['loss_scale']) == (x['skipped'], x['loss_scale']), (s, x, y)
    for g, p in enumerate(y.get('per_gpu', [])):
        assert (p['skipped'], p['clip_coef'], p['grad_sumsq']) == (y['skipped'], y['clip_coef'], y['grad_sumsq']), (s, g, p, y)
        assert p['next_scale'] == y['per_gpu'][0]['next_scale'], (s, g, p)
" py "$4: every step's norm, clip coefficient and skip verdict are one GPU's, on every GPU"
}

# check_grads REF DIR TOL WHAT: the --dump folders REF (one GPU) and DIR hold step 1's
# gradients within TOL of REF's, relative to REF's largest gradient, and the same batch and
# initial weights to the bit.
check_grads() {
    PYCODE="
a, b = f32('$1/grads.f32'), f32('$2/grads.f32')
assert len(a) == len(b), (len(a), len(b))
scale = max(abs(x) for x in a)
worst = max(abs(x - y) for x, y in zip(a, b)) / scale
assert worst < $3, worst
assert open('$1/tokens.i32', 'rb').read() == open('$2/tokens.i32', 'rb').read(), 'the batch differs'
assert open('$1/params.f32', 'rb').read() == open('$2/params.f32', 'rb').read(), 'the weights differ'
" py "$4: step 1's gathered gradients within $3 of one GPU's, the same batch and weights"
}

# check_predicted WHAT [GPUS]: in the last run's summary (train --json --summary), measured =
# predicted to the byte: every GPU's ledger peaks (weights, gradients, master weights,
# optimizer, activations, communication) and its bytes sent per step (data-parallel,
# tensor-parallel, pipeline, and context- and expert-parallel where they ran) equal the
# calculator's for its stage, and the summary's own
# difference is 0; with one stage, its peaks also equal the layout's per-GPU prediction and
# its bytes sent the layout's comm_bytes_per_gpu. There are dp x tp x pp GPUs (GPUS of them,
# when given).
check_predicted() {
    local gpus=""
    [ -n "${2:-}" ] && gpus="== $2"
    save _predicted
    PYCODE="
s = load('_predicted')[-1]['summary']
lay, pred = s['layout'], s['predicted']
assert len(s['per_gpu']) == lay['gpus'] == lay['dp'] * lay['tp'] * lay['pp'] * lay.get('cp', 1) $gpus, (len(s['per_gpu']), lay)
keys = ('weights', 'gradients', 'master_weights', 'optimizer', 'activations', 'communication')
for g in s['per_gpu']:
    p = pred['per_stage'][g['coord']['pp']]
    for want in [p] + ([pred['per_gpu']] if lay['pp'] == 1 else []):
        for k in keys:
            assert g['peak'][k] == want[k], (g['gpu'], k, g['peak'][k], want[k])
    for k in ('data_parallel', 'tensor_parallel', 'pipeline') + (('context_parallel',) if 'cp' in lay else ()) + (('expert_parallel',) if 'ep' in lay else ()):
        assert g['comm_bytes_per_step'][k] == p['comm_bytes_per_step'][k], (g['gpu'], k, g['comm_bytes_per_step'], p['comm_bytes_per_step'])
    if lay['pp'] == 1:
        assert g['sent_bytes_per_step'] == pred['comm_bytes_per_gpu'], (g['gpu'], g['sent_bytes_per_step'], pred['comm_bytes_per_gpu'])
assert s['measured_minus_predicted'] == {'memory_bytes': 0, 'comm_bytes': 0}, s['measured_minus_predicted']
" py "$1: every GPU's peaks and bytes sent equal the calculator's, to the byte"
}

# The same checks over a list of layouts, each layout's options joined by ':' (a list is
# split on white space). Every run is also checked to exit 0.

# losses_per_layout STEPS TOL LAYOUTS: trains STEPS steps on one GPU, then on each layout;
# check_losses with TOL for each. The runs clip the global norm at 1 (tiny's first steps are
# above it), so that the clip coefficient, which every GPU computes from the agreed norm,
# is compared too.
losses_per_layout() {
    local l args
    run train --steps "$1" --clip 1 --json
    check_status 0 "one GPU, the reference"
    save ref
    for l in $3; do
        args=$(printf '%s' "$l" | tr ':' ' ')
        run train --steps "$1" --clip 1 $args --json
        check_status 0 "train $args"
        check_losses ref "$1" "$2" "$args"
    done
}

# grads_per_layout TOL LAYOUTS: dumps step 1 on one GPU, then on each layout; check_grads
# with TOL for each.
grads_per_layout() {
    local l args i=0
    run train --steps 1 --dump "$T_TMP/dump0" --json
    check_status 0 "--dump on one GPU"
    for l in $2; do
        args=$(printf '%s' "$l" | tr ':' ' ')
        i=$((i + 1))
        run train --steps 1 $args --dump "$T_TMP/dump$i" --json
        check_status 0 "--dump with $args"
        check_grads "$T_TMP/dump0" "$T_TMP/dump$i" "$1" "$args"
    done
}

# predicted_per_case CASES: one step of each case, MODEL:PRECISION:LAYOUT; check_predicted.
predicted_per_case() {
    local c model rest prec args
    for c in $1; do
        model=${c%%:*}; rest=${c#*:}; prec=${rest%%:*}; args=$(printf '%s' "${rest#*:}" | tr ':' ' ')
        run train --model "$model" --precision "$prec" --steps 1 $args --json --summary
        check_status 0 "$model $prec $args"
        check_predicted "$model $prec $args"
    done
}

# mpi_setup: skips the test (exit 0) where MPI cannot run: scalelab built without it, no
# mpirun, or a sanitizer build (Open MPI's own allocations and threads are reported as ours:
# leaks at MPI_Init, races in its progress thread; the normal build runs these). Then shared
# memory between the ranks, no network probing, more ranks than cores allowed.
mpi_setup() {
    if ! "$SCALELAB" --version | grep -q "MPI transport: Open MPI"; then
        echo "1..0 # SKIP scalelab was built without MPI (apt-get install libopenmpi-dev openmpi-bin)"
        exit 0
    fi
    if [ -z "$MPIRUN" ] || ! command -v "$MPIRUN" >/dev/null 2>&1; then
        echo "1..0 # SKIP mpirun is not installed (apt-get install openmpi-bin)"
        exit 0
    fi
    if ldd "$SCALELAB" 2>/dev/null | grep -q 'libasan\|libtsan'; then
        echo "1..0 # SKIP Open MPI under a sanitizer reports its own leaks and races; the normal build runs these"
        exit 0
    fi
    export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
    MPI_ROOT_FLAG=
    [ "$(id -u)" -eq 0 ] && MPI_ROOT_FLAG=--allow-run-as-root
}

# mrun N ARGS...: scalelab ARGS on N ranks (after mpi_setup); sets $out, $err and $status. The
# timeout (MRUN_TIMEOUT, 300 s) only keeps a broken build from hanging the suite: every wait
# inside has its own deadline.
mrun() {
    n=$1; shift
    timeout "${MRUN_TIMEOUT:-300}" "$MPIRUN" $MPI_ROOT_FLAG --oversubscribe -n "$n" "$SCALELAB" "$@" \
        >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
    status=$?
    out=$(cat "$T_TMP/out")
    err=$(cat "$T_TMP/err")
}

done_testing() {
    echo "1..$T_N"
    [ "$T_FAILED" -eq 0 ]
}
