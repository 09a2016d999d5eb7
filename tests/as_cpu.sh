# The numeric tests again, as another CPU runs them: sourced by tests/cli/as_avx2.sh and
# as_pre_avx.sh with CPU_PATH (scalelab's vector path, SCALELAB_CPU) and CPU_CORE (OpenBLAS's
# kernels, OPENBLAS_CORETYPE) set. A run's losses and norms move with the CPU's kernels; these
# tests hold them to the tolerances they state, so a developer on one machine sees another
# machine's numbers before CI does. Each test runs with both variables exported, with
# SCALELAB_TEST_QUICK=1 (the fewer layouts it checks under the sanitizers) and
# SCALELAB_TEST_NUMERIC=1 (only its checks a CPU can move: tests/lib.sh's numeric_done); its
# TAP lines are repeated here, named by configuration and test. Kernels this CPU cannot run (Haswell's on a
# machine without AVX2) are skipped, and the skip says so.
. "$srcdir/tests/lib.sh"

if $sanitized; then # the numbers are the normal build's to check; the sanitizers run each test
    echo "1..0 # SKIP the sanitizer builds run each numeric test once, natively"
    exit 0
fi
config="SCALELAB_CPU=$CPU_PATH OPENBLAS_CORETYPE=$CPU_CORE"
if ! OPENBLAS_VERBOSE=2 OPENBLAS_CORETYPE=$CPU_CORE "$SCALELAB" train --steps 1 --batch 2 \
    >/dev/null 2>"$T_TMP/core" || ! grep -q "Core: $CPU_CORE" "$T_TMP/core"; then
    echo "1..0 # SKIP this CPU does not run OpenBLAS's $CPU_CORE kernels: $(head -c 200 "$T_TMP/core")"
    exit 0
fi

# The tests whose figures a CPU's kernels can move: the recorded runs, the lessons' expected
# results, the pictures of runs, the vector paths' bits, the equivalences (N GPUs train as one)
# and the MPI ranks' bit-identity with the thread-GPUs.
numeric="tests/cli/train_bits.sh tests/cli/run.sh tests/cli/paths.sh tests/unit/test_snapshot
tests/cli/train_dp.sh tests/cli/train_tp.sh tests/cli/train_pp.sh tests/cli/train_cp.sh
tests/cli/train_ep.sh tests/cli/train_mpi.sh tests/cli/train_fp8.sh"

for t in $numeric; do
    case $t in
    *.sh) cmd="$srcdir/$t" ;;
    *) cmd="$(pwd)/$t" ;; # a unit test program, in the build folder
    esac
    # in a folder of its own: a unit test writes tests/snapshots-actual where it runs
    mkdir -p "$T_TMP/run/tests"
    t0=$(date +%s)
    (cd "$T_TMP/run" && env SCALELAB_CPU="$CPU_PATH" OPENBLAS_CORETYPE="$CPU_CORE" SCALELAB_TEST_QUICK=1 \
        SCALELAB_TEST_NUMERIC=1 \
        "$cmd" >"$T_TMP/tap" 2>"$T_TMP/tap.err")
    rc=$?
    name=$(basename "$t")
    echo "# $config $name: $(($(date +%s) - t0)) s"
    bad=0
    while IFS= read -r line; do
        case $line in
        "ok "*"# SKIP"*) T_N=$((T_N + 1)); echo "ok $T_N # SKIP $config $name: ${line#*# SKIP}" ;;
        "1..0 # SKIP"*) T_N=$((T_N + 1)); echo "ok $T_N # SKIP $config $name: ${line#*# SKIP}" ;;
        "ok "*) T_N=$((T_N + 1)); echo "ok $T_N - $config $name: ${line#ok * - }" ;;
        "not ok "*)
            T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); bad=1
            echo "not ok $T_N - $config $name: ${line#not ok * - }" ;;
        "#"*) echo "$line" ;;
        esac
    done <"$T_TMP/tap"
    if [ $rc -ne 0 ] && [ $bad -eq 0 ]; then
        not_ok "$config $name: exit $rc with no failed check" "$(tail -n 5 "$T_TMP/tap.err")"
    fi
    rm -rf "$T_TMP/run"
done
done_testing
