#!/bin/sh
# Issue 21, "Hardening 2": what a hostile tester tried, beside tests/cli/badinput.sh (a bad
# value of every option of every command): command lines that crashed or were wrongly
# accepted, progress files of every shape, low memory (ulimit -v) on train, run and bench,
# and signals. Each case gets a clear message, the right exit status, loses nothing and
# never hangs: every run is bounded by timeout(1), whose exit status 124 would fail the
# check, but the program must end by itself (the cases below end at once, or run a few steps).
. "$srcdir/tests/lib.sh"

D=$T_TMP
# The bound of a case that must end by itself: far above what any of them takes, even under
# a sanitizer on a machine busy ten times over, so that only a hang reaches it. (60 s was
# not: `bench --quick --only train` on the portable path, the suite run beside another and
# two CPU-bound processes, took longer.)
LIMIT=${HOSTILE_LIMIT:-300}
$sanitized && LIMIT=${HOSTILE_LIMIT:-600}

# brun ARGS...: run, bounded by LIMIT seconds.
brun() {
    timeout -k 2 "$LIMIT" "$SCALELAB" "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
    status=$?
    out=$(cat "$T_TMP/out")
    err=$(cat "$T_TMP/err")
}

# refuse NEEDLE ARGS...: exit 2 at once, NEEDLE in the one message, nothing on stdout.
refuse() {
    needle=$1; shift
    brun "$@"
    check_status 2 "scalelab $*"
    check_contains "$err" "$needle" "scalelab $*: the message says why"
    check_eq "$out" "" "scalelab $*: nothing on stdout"
}

# ---------------------------------------------------------------- command lines
# The interleaved schedule with one stage read past a buffer (rc 139): refused, whatever else
# is given with it.
refuse "--schedule interleaved needs --pp 2 or more" train --schedule interleaved --steps 1
refuse "--schedule interleaved needs --pp 2 or more" train --schedule interleaved --chunks 4 --steps 1
refuse "--schedule interleaved needs --pp 2 or more" train --schedule interleaved --tp 2 --steps 1

# Accepted and ignored, or refused with the wrong reason
refuse "--fail: step 1000 is outside the run's --steps 1..3" train --gpus 4 --batch 8 --steps 3 --fail 1@1000
refuse "--sequence-parallel goes with --tp 2 or more" memory --sequence-parallel
refuse "--sequence-parallel goes with --tp 2 or more" train --sequence-parallel --steps 1
# tensor-parallel GPUs share their data-parallel rank's batch: one sequence is enough
brun train --dp 1 --tp 2 --batch 1 --steps 2 --json --summary
check_status 0 "train --dp 1 --tp 2 --batch 1 (the batch splits over dp, not over every GPU)"
check_json "d['summary']['layout']['tp'] == 2 and d['summary']['steps'] == 2" "two tensor-parallel GPUs trained on one sequence"
refuse "--batch 3 does not split over 2 data-parallel ranks" train --dp 2 --tp 2 --batch 3 --steps 1
# without a scaler, the step that applied a NaN names its first non-finite tensor over every GPU
# (the GPU that stopped the run first had none of its own: "?")
brun train --gpus 4 --steps 4 --inject spike@3:1e308
check_status 1 "a NaN applied without a scaler on 4 GPUs"
check_contains "$err" "step 3 applied one (first non-finite tensor: logits, on GPU 0)" "the tensor and its GPU are named"
check_not_contains "$err" "tensor: ?" "never '?'"
brun train --steps 4 --inject spike@3:1e308
check_contains "$err" "step 3 applied one (first non-finite tensor: logits)" "one GPU names the same tensor"

# A lesson's @panel that the window refuses is refused by run too (exit 2, file:line)
lesson() { # FILE PANEL-LINE: a one-step lesson showing that panel
    printf '@title T\n@duration 5 min\n@outcome o\n\n@step S\n%s\ntext\n@end\n' "$2" >"$D/$1"
}
lesson nopanel.lesson "@panel nosuchpanel"
refuse "nopanel.lesson:6: no panel named 'nosuchpanel'" run "$D/nopanel.lesson"
lesson badkey.lesson "@panel formats colour=red"
refuse "badkey.lesson:6: " run "$D/badkey.lesson"
lesson range.lesson "@panel training batch=1000"
refuse "range.lesson:6: " run "$D/range.lesson"
lesson two.lesson "@panel training batch=0 nosuch=1"
refuse "; 1 more refused" run "$D/two.lesson"
lesson fine.lesson "@panel training precision=bf16 batch=8"
brun run "$D/fine.lesson"
check_status 0 "a lesson whose panel takes its settings runs"

# run re-executed /proc/self/exe for its experiments: under valgrind that is valgrind's own
# tool ("You cannot run 'scalelab' directly"), through the dynamic loader the loader. Each
# experiment runs the program as it was started now.
good="$srcdir/tests/data/lessons/run-good.lesson"
loader=$(ldd "$SCALELAB" 2>/dev/null | sed -n 's|^[[:space:]]*\(/[^ ]*ld-linux[^ ]*\) .*|\1|p' | head -n 1)
if [ -n "$loader" ] && [ -x "$loader" ]; then
    timeout -k 2 "$LIMIT" "$loader" "$SCALELAB" run "$good" >"$T_TMP/out" 2>"$T_TMP/err"
    status=$? out=$(cat "$T_TMP/out") err=$(cat "$T_TMP/err")
    check_status 0 "run through the dynamic loader ($loader)"
    check_contains "$out" "3 expectations held, 0 failed" "its experiments ran"
else
    ok "# SKIP no dynamic loader named by ldd"
fi
if command -v valgrind >/dev/null 2>&1 && ! ldd "$SCALELAB" | grep -q 'lib[at]san'; then
    timeout -k 2 "$LIMIT" valgrind -q "$SCALELAB" run "$good" >"$T_TMP/out" 2>"$T_TMP/err"
    status=$? out=$(cat "$T_TMP/out") err=$(cat "$T_TMP/err")
    check_status 0 "run under valgrind"
    check_contains "$out" "3 expectations held, 0 failed" "its experiments ran"
else
    ok "# SKIP valgrind is not installed, or the build has a sanitizer"
fi

# ---------------------------------------------------------------- damaged lessons
# One lesson cut short (no @end) in the data folder: the others are still listed and shown,
# the damaged one is named, exit 2 (it failed every lesson)
mkdir "$D/data"
cp -r "$SCALELAB_DATA/lessons" "$SCALELAB_DATA/assets" "$D/data/"
head -c 3000 "$SCALELAB_DATA/lessons/03-collectives.lesson" >"$D/data/lessons/03-collectives.lesson"
SCALELAB_DATA="$D/data" brun run --list
check_status 2 "run --list with lesson 3 cut short"
check_contains "$out" " 4  Scaling and distributed training" "the other lessons are listed"
check_not_contains "$out" "Collective" "but not the damaged one"
check_contains "$err" "03-collectives.lesson:" "which is named"
check_contains "$err" "the file ends without @end" "with why"
SCALELAB_DATA="$D/data" brun progress
check_status 2 "progress with lesson 3 cut short"
check_contains "$out" "ZeRO and FSDP" "progress shows the others"
check_contains "$err" "03-collectives.lesson:" "and names the damaged one"
SCALELAB_DATA="$D/data" brun run 4 --step 1
check_status 0 "run 4 is not touched by lesson 3's damage"
rm -rf "$D/data"

# ---------------------------------------------------------------- progress files
# Every shape a progress file may take: progress shows what can be read (every valid line),
# names what cannot (exit 2), never blocks on it or reads it without end; --reset N changes
# lesson N only, and refuses to replace a file it could not read.
P="$XDG_STATE_HOME/scalelab/progress"
mkdir -p "$XDG_STATE_HOME/scalelab"
good='# scalelab progress 2\ncurrent collectives\nlesson mixed-precision step 2 correct 0.0\nlesson collectives step 5 correct 1.0\n'
fresh() { rm -rf "$XDG_STATE_HOME/scalelab"; mkdir -p "$XDG_STATE_HOME/scalelab"; }
# 1 missing, 2 empty, 3 valid
fresh
brun progress
check_status 0 "progress: no file"
check_contains "$out" "none saved yet" "says nothing is saved"
: >"$P"
brun progress
check_status 2 "progress: an empty file"
check_contains "$err" "progress:1: the file is empty" "says it is empty"
printf "$good" >"$P"
brun progress --json
check_status 0 "progress: a valid file"
check_json "d['lessons'][0]['step'] == 3 and d['lessons'][2]['step'] == 6 and d['current'] == 3" "every lesson read"
# 4 one bad line: the others shown, the bad one named
printf "$good"'lesson 9 step zz\n' >"$P"
brun progress --json
check_status 2 "progress: a bad line"
check_json "d['lessons'][0]['step'] == 3 and d['lessons'][2]['step'] == 6" "the valid lines are shown"
check_contains "$err" "progress:5: skipped 'lesson 9 step zz' (not a progress line)" "the bad one is named"
# 5 over 4 MiB: one 10 MB line among valid ones was ignored whole, and --reset 5 wrote a file
# without the other lessons
{ printf '# scalelab progress 2\nlesson mixed-precision step 2 correct 0.0\n'; head -c 10000000 /dev/zero | tr '\0' x
  printf '\nlesson collectives step 5 correct 1.0\nlesson zero step 1\ncurrent zero\n'; } >"$P"
brun progress --json
check_status 2 "progress: a 10 MB line among valid ones"
check_json "d['lessons'][0]['step'] == 3 and d['lessons'][2]['right'] == 1 and d['lessons'][4]['step'] == 2 and d['current'] == 5" \
    "every valid line is kept, before the long one and after it"
check_contains "$err" "progress:3: skipped a line of 10000000 bytes (too long)" "the long line is named"
size=$(wc -c <"$P")
brun progress --reset 5
check_status 0 "--reset 5 with the long line"
brun progress --json
check_json "d['lessons'][0]['step'] == 3 and d['lessons'][2]['right'] == 1 and not d['lessons'][4]['visited']" \
    "--reset 5 forgets lesson 5 only"
check_eq "$(wc -c <"$P.bad")" "$size" "the file as it was is kept as progress.bad"
# 6 binary junk: nothing usable, said
fresh
head -c 3000 /dev/urandom >"$P"
brun progress
check_status 2 "progress: binary junk"
check_contains "$err" "progress:1: skipped" "said"
# 7-9 links to devices, 10 a FIFO, 11 a folder: said, never read (no hang), never replaced
for dev in /dev/full /dev/zero /dev/urandom; do
    fresh
    ln -s "$dev" "$P"
    brun progress
    check_status 2 "progress: a link to $dev"
    check_contains "$err" "a device where the progress file should be" "said, not read"
    brun progress --reset 1
    check_status 2 "--reset 1 with a link to $dev: refused"
    check_contains "$err" "nothing changed" "and says nothing changed"
    check_eq "$(readlink "$P")" "$dev" "the link is left as it was"
done
fresh
mkfifo "$P"
brun progress
check_status 2 "progress: a FIFO (opening it waited for a writer)"
check_contains "$err" "a FIFO where the progress file should be" "said, not read"
brun progress --reset
check_status 1 "--reset with a FIFO: the save refuses to replace it"
check_contains "$err" "a FIFO, not a regular file: progress is not saved there" "said"
check_eq "$(stat -c %F "$P")" "fifo" "the FIFO is left"
fresh
mkdir "$P"
brun progress
check_status 2 "progress: a folder"
check_contains "$err" "a folder where the progress file should be" "said"
# 12 a link to a regular file elsewhere: followed on save, the link stays a link
fresh
printf "$good" >"$D/kept-elsewhere"
ln -s "$D/kept-elsewhere" "$P"
brun progress --reset 1
check_status 0 "--reset 1 through a link"
check_eq "$(readlink "$P")" "$D/kept-elsewhere" "the link stays a link"
check_contains "$(cat "$D/kept-elsewhere")" "lesson collectives step 5 correct 1.0" "the file it leads to keeps lesson 3"
check_not_contains "$(cat "$D/kept-elsewhere")" "lesson mixed-precision " "and forgets lesson 1"
# 13 a state folder that takes no file (read-only; root writes anyway, so a file stands where
# the folder should be): the save fails, exit 1, said
fresh
printf "$good" >"$P"
if [ "$(id -u)" -ne 0 ]; then chmod 0500 "$XDG_STATE_HOME/scalelab"
else rm -rf "$XDG_STATE_HOME/scalelab" && printf x >"$XDG_STATE_HOME/scalelab"; fi
brun progress --reset
check_status 1 "--reset where no file can be saved"
check_contains "$err" "scalelab: " "said"
chmod 0700 "$XDG_STATE_HOME/scalelab" 2>/dev/null
fresh

# ---------------------------------------------------------------- signals
# until_true CMD...: polls CMD every 0.1 s until it holds, or $pid has ended, LIMIT seconds at
# most (a state, not a time: the run has started its steps, the experiment's process exists)
until_true() {
    i=0
    while ! "$@" && kill -0 "$pid" 2>/dev/null && [ $i -lt $((LIMIT * 10)) ]; do
        sleep 0.1
        i=$((i + 1))
    done
    "$@"
}
has_lines() { [ -s "$1" ]; }
# ends SIG: sends SIG to $pid and waits for it to end (LIMIT seconds, then SIGKILL: a hang
# fails the check instead of the test), its status in $status
ends() {
    kill -"$1" "$pid"
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt $((LIMIT * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid"
    status=$?
}
# A headless train ends at once on SIGTERM and SIGINT, 128 + the signal, and leaves no trace
# file, whole or partial (it is written after the run, through a temporary name). (A shell
# without job control starts its background commands with SIGINT ignored: env gives it back,
# as a terminal's Ctrl-C finds it.)
signum() { case $1 in HUP) echo 1 ;; INT) echo 2 ;; TERM) echo 15 ;; esac; }
for sig in TERM INT; do
    # The last round's output goes first: the new child truncates it only once forked, and a
    # signal sent on the old lines would reach the forked shell, where SIGINT is still ignored.
    rm -f "$D/steps"
    env --default-signal=INT "$SCALELAB" train --steps 30000 --json --trace "$D/t$sig.json" \
        >"$D/steps" 2>"$D/err" </dev/null &
    pid=$!
    until_true has_lines "$D/steps"
    ends $sig
    check_eq "$status" "$((128 + $(signum $sig)))" "train ends on SIG$sig with 128 + its number"
    check_eq "$(ls "$D" | grep -c "t$sig.json")" 0 "no trace written, nor a temporary one"
done
# run ends its experiment's process with it: SIGTERM used to leave the experiment training
# alone, orphaned. The experiment is known by a seed no other run uses.
seed=$(( $$ % 100000 + 900000001 ))
printf '@title Slow\n@duration 5 min\n@outcome o\n\n@step S\ntext\n@run train --steps 1000000 --seed %s --json --summary\n@end\n' "$seed" >"$D/slow.lesson"
child_up() { pgrep -f -- "--seed $seed" >/dev/null; }
for sig in TERM INT HUP; do
    "$SCALELAB" run "$D/slow.lesson" >/dev/null 2>&1 </dev/null &
    pid=$!
    until_true child_up
    ends $sig
    check_eq "$status" "$((128 + $(signum $sig)))" "run ends on SIG$sig with 128 + its number"
    i=0
    while child_up && [ $i -lt $((LIMIT * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    if child_up; then
        not_ok "run's experiment ends with it (SIG$sig)" "$(pgrep -af -- "--seed $seed")"
        pkill -KILL -f -- "--seed $seed"
    else
        ok "run's experiment ends with it (SIG$sig)"
    fi
done

# ---------------------------------------------------------------- low memory (ulimit -v)
# OpenBLAS's allocator tried again forever when its 128 MiB matrix buffer could not be mapped:
# train, run and bench spun at 100% under 300 or 400 MB, and below about 190 MB even
# `formats` did (OpenBLAS's pool thread asked for one as it loaded, and exit waited for it).
# Now a run checks first what it needs, and says it (exit 1), or runs. Sanitizer builds
# reserve terabytes of address space: only the normal build runs under a limit.
if ldd "$SCALELAB" 2>/dev/null | grep -q 'lib[at]san'; then
    ok "# SKIP ulimit -v under a sanitizer"
else
    # lim ARGS...: scalelab ARGS under ulimit -v $L, bounded
    lim() {
        (ulimit -v "$L"; exec timeout -k 2 "$LIMIT" "$SCALELAB" "$@") >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
        status=$? out=$(cat "$T_TMP/out") err=$(cat "$T_TMP/err")
    }
    # ran_or_said WHAT: exit 0, or exit 1 with the message saying what it needed
    ran_or_said() {
        case "$status:$err$out" in
        0:*) ok "$1: ran" ;;
        1:*"needs "*" MiB, the process may use "*" MiB more (its address space: ulimit -v)"*)
            ok "$1: refused, saying what it needs" ;;
        *) not_ok "$1: exit $status" "stderr: $(printf '%s' "$err" | tail -c 600)" ;;
        esac
    }
    L=150000 lim formats 1 --json
    check_status 0 "formats under 150 MB (OpenBLAS's pool thread spun as it loaded)"
    for L in 300000 400000 600000; do
        lim train --steps 5 --json --summary
        ran_or_said "train --steps 5 under $((L / 1000)) MB"
        [ "$status" = 0 ] && check_json "d['summary']['steps'] == 5" "train under $((L / 1000)) MB: 5 steps"
        lim train --gpus 4 --zero 3 --steps 3 --json --summary
        ran_or_said "train --gpus 4 --zero 3 under $((L / 1000)) MB"
        lim run 5 --step 4
        ran_or_said "run 5 --step 4 under $((L / 1000)) MB"
        lim bench --quick --only dp
        ran_or_said "bench --quick --only dp under $((L / 1000)) MB"
        lim bench --quick --only train
        ran_or_said "bench --quick --only train under $((L / 1000)) MB"
    done
    # what a refusal looks like, once: the parts and the limit named; OpenBLAS's buffers are
    # one per GPU, at most one per CPU (more would compute no faster)
    cpus=$(nproc)
    bufs=$((cpus < 4 ? cpus : 4))
    L=300000 lim train --model small --gpus 4 --steps 1
    check_status 1 "small on 4 GPUs under 300 MB: refused"
    check_contains "$err" "scalelab: the run (4 GPUs: their buffers and threads " "the run's own buffers"
    check_contains "$err" "OpenBLAS's matrix buffers $((bufs * 128))." "and OpenBLAS's, $bufs of them on $cpus CPUs"
    check_eq "$out" "" "nothing ran"
    L=600000 lim train --gpus 2 --zero 3 --steps 3 --json --summary
    check_status 0 "2 GPUs at ZeRO-3 under 600 MB: it runs"
fi

done_testing
