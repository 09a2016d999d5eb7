#!/bin/sh
# train --time-as MODEL (issue 32): the run computes its own small model while its simulated
# clock charges what MODEL costs in the same layout. Held here: what the clock says it shows,
# the refusals, the time scale's compute against the run timed as itself, and measured =
# predicted in seconds: the run's step beside the calculator's (plan_time) for MODEL.
. "$srcdir/tests/lib.sh"

# --- What the clock shows, said in the header.
run train --model tiny --steps 1 --gpus 2
check_contains "$out" "time: the run timed as itself, tiny at the h100-80gb's peak" \
    "without --time-as the header says the run is timed as itself"
run train --model tiny --steps 1 --time-as small
check_contains "$out" "time: timed as small on 1 h100-80gb GPU" \
    "with --time-as the header names the model and the GPUs the time is of"
check_contains "$out" "the calculator for small in this layout: step" \
    "and the summary puts the calculator's step for it beside the run's"

# --- Refusals: exit 2, naming --time-as and the reason.
refused "an unknown model" "--time-as: unknown model preset 'nosuch'" \
    train --model tiny --steps 1 --time-as nosuch
refused "a layout the model cannot hold (synthetic-7b's states on 2 GPUs)" \
    "--time-as synthetic-7b does not fit this layout" \
    train --model tiny --steps 1 --gpus 2 --time-as synthetic-7b
refused "a mixture of experts, not timed yet" "a mixture of experts is not timed" \
    train --model tiny --steps 1 --time-as mixtral-8x7b
refused "the run's flash attention at cp 1, not timed yet" "flash attention is not timed" \
    train --model tiny --steps 1 --attention flash --time-as small

# --- The scale's compute against an independent count: tiny timed as tiny on one GPU charges
# the calculator's FLOPs of its step, 6 Ψ T + 12 L h s T (Kaplan's 6 per parameter and token,
# PaLM's attention), at the preset's peak x 0.5 (plan's efficiency); the step is all compute.
# Tolerance 2e-9: the JSON's 10 significant digits, twice.
peak=$(sed -n 's/^peak_flops *= *//p' "$srcdir/assets/clusters/h100-80gb.ini")
key() { sed -n "s/^$1 *= *//p" "$srcdir/assets/models/tiny.ini"; }
L=$(key layers) h=$(key d_model) s=$(key seq) T=$((16 * $(key seq)))
run train --model tiny --batch 16 --steps 2 --time-as tiny --json --summary
check_json "abs(d['summary']['sim_step_time_s'] / ((6 * d['summary']['parameters'] * $T + 12 * $L * $h * $s * $T) / ($peak * 0.5)) - 1) < 2e-9 and d['summary']['timed_as']['model'] == 'tiny'" \
    "tiny timed as tiny: its step is (6 Ψ T + 12 L h s T) / (peak x 0.5)"
check_json "d['summary']['timed_as']['predicted']['step_time_s'] == d['summary']['timed_as']['predicted']['compute_s'] and abs(d['summary']['sim_step_time_s'] / d['summary']['timed_as']['predicted']['step_time_s'] - 1) < 2e-9" \
    "and the calculator's step for it is that compute"

# --- Measured = predicted, in seconds. The run's model has MODEL's layers (tiny's shape with
# synthetic-7b's layer count, read from its preset), so each of its layers stands for one of
# MODEL's: the run's overlap then has MODEL's granularity (with tiny's 4 layers each stands
# for 8, and the gradients of the last 8 layers are reduced after the backward pass, where
# synthetic-7b reduces the last one's: +9% for DDP, +8% for ZeRO-3; tp and pp agree as
# well either way). A second shape has 8 heads for tp 8.
# Tolerance: 5% of the calculator's step (the issue's). What the run has that the calculator
# does not count: every bucket's and unit's α (it counts one collective's), the pipeline's
# sends sharing ports with the buckets; measured 0.0 to 0.8% here, 3D 2.0 to 3.7%. ZeRO-3
# with tp was 12% apart while the model charged a layer's compute after its sums (all of them
# then waited for the next unit's gather); it charges each part where it runs now. The
# compute is the same sum of the same operations' FLOPs on one stage: 2e-9 relative (the
# JSON's 10 digits, twice). Context parallelism (cp 2, 4, 8, balanced and naive, with dp and
# tp): its ring's blocks are charged as synthetic-7b's causal blocks, each send posted before
# its block; steps +0.0 to +0.7%, every term within 0.7% of the step but the naive cp 4's:
# the run's GPU on the step's path is a lighter one, which waits for the busiest on the ring
# through its neighbours' late sends, so its cp is 7.2 ms longer than the calculator's ring
# and its bubble as much shorter than the busiest GPU's extra attention (3.2% of the step).
# zb-h1 is +2.2% (+3.7% while the calculator took the bubble of its slot timeline, F = B = W,
# where a layer's B also runs the attention core's backward and its W only the matmuls' weight
# gradients: it now takes (p-1)(F+B-W) with those). zb-h2 is +0.7%: its step waits for the later
# of stage 0's (p-1)(F+B-2W) and the last stage's late start, (p-1)F (the parallelogram's
# ends; +1.5% while the calculator added the two).
layers=$(sed -n 's/^layers *= *//p' "$srcdir/assets/models/synthetic-7b.ini")
sed "s/^name = tiny/name = tiny-deep/; s/^layers = .*/layers = $layers/" \
    "$srcdir/assets/models/tiny.ini" >"$T_TMP/deep.ini"
sed "s/^heads = .*/heads = 8/; s/^kv_heads = .*/kv_heads = 8/; s/^ffn = .*/ffn = 176/" \
    "$T_TMP/deep.ini" >"$T_TMP/deep8.ini"
cases="deep:--gpus=8:--zero=0:--cluster=h200 deep:--gpus=8:--zero=1 deep:--gpus=8:--zero=2
deep:--gpus=8:--zero=3 deep:--gpus=8:--zero=3:--prefetch=0 deep:--gpus=8:--zero=1:--checkpoint=selective
deep:--gpus=4:--zero=1:--micro-batches=2 deep:--tp=4:--gpus=4 deep:--tp=4:--gpus=4:--sequence-parallel
deep8:--tp=8:--gpus=8:--sequence-parallel deep:--tp=4:--dp=2:--sequence-parallel
deep:--tp=2:--dp=4:--sequence-parallel:--zero=1 deep:--tp=2:--dp=4:--zero=1 deep:--tp=2:--dp=4:--zero=3
deep:--tp=4:--dp=2 deep:--pp=4:--micro-batches=4
deep:--pp=4:--micro-batches=8:--schedule=gpipe deep:--pp=4:--micro-batches=8
deep:--pp=4:--micro-batches=8:--schedule=interleaved:--chunks=2 deep:--pp=4:--micro-batches=8:--checkpoint=full
deep:--pp=4:--micro-batches=8:--schedule=zb-h1 deep:--pp=4:--micro-batches=8:--schedule=zb-h2:--cluster=h200
deep:--pp=8:--micro-batches=8 deep:--pp=2:--dp=2:--micro-batches=4:--cluster=h200
deep:--pp=2:--dp=4:--zero=1:--micro-batches=2 deep:--pp=2:--tp=4:--micro-batches=4:--sequence-parallel
deep:--pp=2:--tp=2:--dp=2:--micro-batches=4:--sequence-parallel
deep:--cp=2:--gpus=8:--zero=1 deep:--cp=2:--gpus=8:--zero=1:--cp-naive deep:--cp=4:--gpus=8:--zero=1
deep:--cp=4:--gpus=8:--zero=1:--cp-naive deep:--cp=8:--gpus=8:--zero=1 deep:--cp=2:--dp=4:--cluster=h200
deep:--cp=2:--tp=2:--dp=2:--zero=1 deep:--cp=2:--tp=2:--dp=2:--zero=1:--sequence-parallel
deep:--cp=2:--tp=4:--gpus=8 deep:--cp=4:--tp=2:--gpus=8:--zero=1:--cp-naive"
$quick && cases="deep:--gpus=8:--zero=3 deep:--tp=4:--gpus=4:--sequence-parallel deep:--pp=4:--micro-batches=4
deep:--cp=4:--gpus=8:--zero=1"
# Under TSan, one layout: the threads of the others are those train_dp, train_tp and train_cp
# run under TSan; the numbers are the other builds' to check.
$tsan && cases="deep:--pp=4:--micro-batches=4"
# timed MODEL ARGS...: the run of the deep shape MODEL with ARGS, timed as synthetic-7b: one
# step, as every step's simulated time is the same (measured in each layout below: steps 1 and
# 2 agree to 3e-8 of the step, the mean of two steps' sums rounding differently)
timed() {
    model=$1
    shift
    run train --model "$T_TMP/$model.ini" --batch 8 --precision bf16 --steps 1 "$@" \
        --time-as synthetic-7b --json --summary
}
apart="abs(d['summary']['sim_step_time_s'] / d['summary']['timed_as']['predicted']['step_time_s'] - 1)"
# The step's terms, the run's beside the calculator's (the summary's timed_as.run and
# .predicted): compute, the bubble with the slowest stage's wait, each kind's exposed
# communication. Tolerance: each within 5% of the calculator's step, the 5% for a
# part of it (a term that far off moves the step as far); not 5% of the term, as a term of a
# few hundred microseconds differs by the α of every bucket and unit the calculator counts
# once. The run counts as 'other' what no kind accounts for (the agreement's scalars,
# microseconds): held under 0.1% of the step. MFU within 5% of the calculator's.
terms="all(abs(r[k] - p[k] - (p['imbalance_s'] if k == 'bubble_s' else 0)) <= 0.05 * p['step_time_s'] for k in ('compute_s', 'bubble_s', 'dp_exposed_s', 'tp_exposed_s', 'pp_exposed_s', 'cp_exposed_s', 'ep_exposed_s')) and r['other_s'] <= 1e-3 * p['step_time_s'] and abs(r['mfu'] / p['mfu'] - 1) <= 0.05"
terms="(lambda r, p: $terms)(d['summary']['timed_as']['run'], d['summary']['timed_as']['predicted'])"
# table WHAT: a line of the table of the layouts held (a TAP comment, for the log): the
# calculator's step, the run's, how far apart
table() {
    printf '%s' "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)['summary']
p, r = d['timed_as']['predicted']['step_time_s'], d['sim_step_time_s']
print('# table: %-62s predicted %8.2f ms  timed %8.2f ms  %+.1f%%' % (sys.argv[1], 1e3 * p, 1e3 * r, 100 * (r / p - 1)))" "$1"
}
# the busiest GPU's compute over the mean GPU's (the summary's sim_compute_s, the line's)
busy="(lambda t: t['busiest_compute_s'] - t['sim_compute_s'])(d['summary']['timed_as'])"
for c in $cases; do
    model=${c%%:*}
    args=$(printf '%s' "${c#*:}" | tr ':' ' ')
    # shellcheck disable=SC2086
    timed "$model" $args
    table "$model $args"
    check_json "$apart <= 0.05" "$model $args as synthetic-7b: the run's step within 5% of the calculator's"
    check_json "$terms" "$model $args as synthetic-7b: each term of its step within 5% of the calculator's step, MFU within 5%"
    # The busiest GPU's compute (the summary's, beside the mean GPU's): a pipeline's slowest
    # stage (its last, with the head) ahead of the mean by what the calculator's slowest
    # stage's wait is (m - 1) / m of (calc/plan.h's imbalance); without a pipeline or the naive
    # split, every GPU's the mean's. Tolerance 2e-9 of the compute: the JSON's 10 digits, twice.
    case $args in
    *--pp*)
        check_json "(lambda m, t: abs((m - 1) / m * $busy - t['predicted']['imbalance_s']) <= 2e-9 * t['sim_compute_s'])(d['summary']['layout']['micro_batches'], d['summary']['timed_as'])" \
            "$model $args as synthetic-7b: the busiest stage's extra compute x (m - 1) / m is the calculator's slowest stage's wait"
        continue ;; # a stage's compute is not the mean the calculator has
    *--cp-naive*) ;;
    *) check_json "abs($busy) <= 2e-9 * d['summary']['timed_as']['sim_compute_s']" \
        "$model $args as synthetic-7b: every GPU computes the mean's" ;;
    esac
    # the mean GPU's (the naive split's GPUs compute unlike amounts of attention)
    check_json "abs(d['summary']['timed_as']['run']['compute_s'] / d['summary']['timed_as']['predicted']['compute_s'] - 1) <= 2e-9" \
        "$model $args as synthetic-7b: its compute the calculator's"
done

# --- The naive split's imbalance, measured: at cp 2 the ring's exposed time is the same for
# both splits (the calculator's: what a block's attention hides of each send is its send less
# the block, and both splits' blocks are shorter than a send here), so the naive step is longer
# than the balanced one by its busiest GPU's extra attention, which the others wait for on the
# ring. That is measured from the run's own scores: the busiest GPU's scores per step less the
# mean's (every GPU's, as the run counts them, forward and backward: 2 + 4 hd FLOPs each, so
# 6 hd a score on average), each charged as synthetic-7b's causal blocks are (their FLOPs over
# the run's, S (S + 1) h over T (T + 1) h: sim/spec.h's attention factor) at peak x 0.5.
# Tolerance 1e-6 of that difference: the two steps' 10 digits hold it to 1e-7; measured 8e-10
# (the busiest GPU's wait is all the naive step adds: the ring's sends and the dp traffic meet
# alike in both).
if $tsan; then # numbers only, of cp's threads (train_cp.sh's under TSan)
    echo "ok $((T_N + 1)) # SKIP under TSan: the naive split's imbalance, measured (numbers)"
    echo "ok $((T_N + 2)) # SKIP under TSan: the naive split's busiest GPU (numbers)"
    T_N=$((T_N + 2))
else
    key7() { sed -n "s/^$1 *= *//p" "$srcdir/assets/models/synthetic-7b.ini"; }
    S=$(key7 seq) H=$(key7 d_model) hd=$(($(key d_model) / $(key heads)))
    timed deep --cp=2 --gpus=8 --zero=1
    balanced=$(printf '%s' "$out" | python3 -c "import json,sys; print(repr(json.load(sys.stdin)['summary']['sim_step_time_s']))")
    timed deep --cp=2 --gpus=8 --zero=1 --cp-naive
    check_json "(lambda g, per: abs((d['summary']['sim_step_time_s'] - $balanced) / ((max(g) - sum(g) / len(g)) * per) - 1) <= 1e-6)([x['ring_scores_per_step'] for x in d['summary']['per_gpu']], 6 * $hd * ($S * ($S + 1) * $H) / ($s * ($s + 1) * $h) / ($peak * 0.5))" \
        "cp 2 as synthetic-7b: the naive split's step is the balanced one's and its busiest GPU's extra attention"
    # and the busiest GPU's compute, which the summary gives beside the mean GPU's, is the mean's
    # and that extra attention (the same tolerance; measured 8e-10)
    check_json "(lambda g, per: abs(($busy) / ((max(g) - sum(g) / len(g)) * per) - 1) <= 1e-6)([x['ring_scores_per_step'] for x in d['summary']['per_gpu']], 6 * $hd * ($S * ($S + 1) * $H) / ($s * ($s + 1) * $h) / ($peak * 0.5))" \
        "cp 2 as synthetic-7b: the naive split's busiest GPU computes the mean's and its extra attention"
fi

# --- The three layouts plan ranks first for synthetic-7b on one node of 8 GPUs (plan's
# defaults: 8 h100-80gb, a global batch of 256 sequences, bf16), read from plan --json: each run
# in that layout (dp, tp, pp, ZeRO stage, checkpoint policy, micro-batches of plan's
# micro-batch) on the deep shape (the 8-head one where tp does not divide tiny's heads), timed
# as synthetic-7b, gives plan's step time within 5% (the issue's). Measured: ZeRO-3 with 8 and
# 16 micro-batches and ZeRO-1 with 32, each +0.0 to +0.1%. The run's own prediction is plan's
# step to the JSON's digits (2e-9): the layout run is the one plan ranked.
if $quick; then
    echo "ok $((T_N + 1)) # SKIP plan's first three layouts, timed (quick: half a minute of CPU each)"
    T_N=$((T_N + 1))
else
    run plan --json --top 3
    check_json "d['model'] == 'synthetic-7b' and d['gpus'] == 8 and len(d['layouts']) == 3" \
        "plan ranks three layouts for synthetic-7b on 8 GPUs"
    heads=$(key heads)
    ranked=$(printf '%s' "$out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
for l in d['layouts']:
    print('%s:--dp=%d:--tp=%d:--pp=%d:--zero=%d:--checkpoint=%s:--micro-batches=%d:--batch=%d:%r' % (
        'deep' if $heads % l['tp'] == 0 else 'deep8', l['dp'], l['tp'], l['pp'], l['zero'],
        l['checkpoint'], l['micro_batches'], l['dp'] * l['micro_batch'] * l['micro_batches'],
        l['step_time_s']))")
    rank=0
    for c in $ranked; do
        rank=$((rank + 1))
        model=${c%%:*} want=${c##*:} args=${c#*:}
        args=$(printf '%s' "${args%:*}" | tr ':' ' ')
        # shellcheck disable=SC2086
        run train --model "$T_TMP/$model.ini" --precision bf16 --steps 1 $args \
            --time-as synthetic-7b --json --summary
        table "plan's $rank: $model $args"
        check_json "abs(d['summary']['timed_as']['predicted']['step_time_s'] / $want - 1) <= 2e-9 and abs(d['summary']['sim_step_time_s'] / $want - 1) <= 0.05" \
            "plan's layout $rank ($args, plan's step $want s) timed as synthetic-7b: within 5% of plan's step"
    done
fi

# --- Lesson 4's pipeline in seconds: tiny (the lesson's run) on 4 stages, 8 micro-batches,
# 1F1B, timed as synthetic-7b. The summary's pipeline.seconds, recomputed here from the stages'
# operations it lists: the ideal is a stage's mean compute, the bubble the span beyond it, the
# slowest stage's wait (m - 1)/m x the busiest stage's compute beyond the mean (the calculator's
# imbalance_s, to the JSON's digits: 2e-9 of the step), the fill and drain the rest. The sends
# between stages are small beside compute here (an activation of b s h against 8 of
# synthetic-7b's layers a stage: the run's exposed pp under 1% of its compute), so the fill and
# drain is (p - 1)/m x ideal within the 5% (measured +0.16%).
run train --model tiny --pp 4 --micro-batches 8 --batch 8 --precision bf16 --steps 1 \
    --time-as synthetic-7b --json --summary
ideal="(lambda ops: sum(o['end_s'] - o['start_s'] for st in ops for o in st) / len(ops))(d['summary']['pipeline']['ops'])"
span="(lambda ops: max(o['end_s'] for st in ops for o in st) - min(o['start_s'] for st in ops for o in st))(d['summary']['pipeline']['ops'])"
slowest="max(sum(o['end_s'] - o['start_s'] for o in st) for st in d['summary']['pipeline']['ops'])"
sec="d['summary']['pipeline']['seconds']"
check_json "abs($sec['ideal_s'] - $ideal) <= 2e-9 * $span and abs($sec['bubble_s'] - ($span - $ideal)) <= 2e-9 * $span and abs($sec['slowest_wait_s'] - 7 / 8 * ($slowest - $ideal)) <= 2e-9 * $span and abs($sec['fill_drain_s'] - ($sec['bubble_s'] - $sec['slowest_wait_s'])) <= 2e-9 * $span" \
    "pp 4, m 8 as synthetic-7b: the bubble in seconds, its parts, as the stages' operations give them"
check_json "abs($sec['slowest_wait_s'] - d['summary']['timed_as']['predicted']['imbalance_s']) <= 2e-9 * $span" \
    "pp 4, m 8 as synthetic-7b: the slowest stage's wait is the calculator's"
check_json "d['summary']['timed_as']['run']['pp_exposed_s'] < 0.01 * d['summary']['timed_as']['run']['compute_s'] and abs($sec['fill_drain_s'] / (3 / 8 * $sec['ideal_s']) - 1) <= 0.05 and abs($sec['fill_drain_over_ideal'] - $sec['fill_drain_s'] / $sec['ideal_s']) <= 1e-9" \
    "pp 4, m 8 as synthetic-7b: the sends small beside compute, the fill and drain is (p - 1)/m x ideal within 5%"

# --- The summary's line of the run timed as MODEL: the step, the mean GPU's compute (named;
# the table's and the calculator's figure) and the rest, then the busiest GPU's compute: at pp
# 4 its last stage, with the head.
run train --model "$T_TMP/deep.ini" --batch 8 --precision bf16 --steps 1 --pp 4 \
    --micro-batches 8 --time-as synthetic-7b
row=$(printf '%s\n' "$out" | sed -n 's/^  compute  *\([0-9.]* [a-z]*s\) .*/\1/p')
check_contains "$out" "= the mean GPU's compute $row + the rest (not hidden, bubble included)" \
    "pp 4 as synthetic-7b: the summary's line gives the mean GPU's compute, the table's ($row)"
check_contains "$out" "; the busiest GPU computes " "... and the busiest GPU's beside it"

done_testing
