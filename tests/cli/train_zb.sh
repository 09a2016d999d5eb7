#!/bin/sh
# The zero-bubble schedules' bubbles as run (issue 34): 1F1B, zb-h1 and zb-h2 executed on 4
# thread-GPUs timed as synthetic-7b (--time-as: each operation charged what it costs the big
# model), their idle time against the paper's formulas (Qi et al. 2024, §3.1) with F, B and W
# read off the run's own operations.
. "$srcdir/tests/lib.sh"

# Every stage but the last runs the same layers: its F, B and W take the same time, read from
# stage 1. The last stage adds the head to its F and B (the ends' weight gradients stay in B,
# model/gpt.h), so the other stages wait for it by what it computes more: taken out, stage 0's
# idle time between its first operation and its last is the paper's bubble, (p - 1)(F + B + W)
# for 1F1B (its backward B + W), (p - 1)(F + B - W) for zb-h1, (p - 1)(F + B - 2W) for zb-h2,
# plus the activations' sends on the fill and drain path, one message each way per hop:
# 2 (p - 1) x a message, the message read from the run too (stage 1's first forward starts
# that long after stage 0's ends). Exact to 1e-6 relative (an operation's time to 1e-8 s):
# the times are printed with 10 digits. So zb-h1's bubble is (F + B - W)/(F + B + W) of 1F1B's but for the sends. zb-h2's
# step still ends (p - 1)(F + message) after the busiest stage's compute: its parallelogram's
# ends (calc/sched.h). h200: zb-h2 holds up to 2p micro-batches, over an H100's 80 GiB as
# synthetic-7b.
ms="8 16"
$quick && ms="8"
for m in $ms; do
    for s in 1f1b zb-h1 zb-h2; do
        run train --steps 1 --pp 4 --micro-batches "$m" --batch $((2 * m)) --schedule "$s" \
            --cluster h200 --time-as synthetic-7b --json --summary
        check_status 0 "$s, p 4, m $m, timed as synthetic-7b"
        save "$s"
    done
    PYCODE="
p, m = 4, $m
idle, F = {}, {}
for s in ('1f1b', 'zb-h1', 'zb-h2'):
    ops = load(s)[-1]['summary']['pipeline']['ops']
    assert len(ops) == p
    t = lambda o: o['end_s'] - o['start_s']
    each = {k: [t(o) for st in ops[:-1] for o in st if o['kind'] == k] for k in 'FBW'}
    for k, v in each.items():  # the same layers, the same time
        assert not v or max(v) - min(v) <= 1e-8, (s, k, min(v), max(v))
    f, b, w = (sum(v) / len(v) if v else 0 for v in (each[k] for k in 'FBW'))
    busy = [sum(t(o) for o in st) for st in ops]
    assert busy[-1] == max(busy), (s, busy)
    msg = ops[1][0]['start_s'] - ops[0][0]['end_s']
    assert msg > 0, msg
    span0 = max(o['end_s'] for o in ops[0]) - min(o['start_s'] for o in ops[0])
    got = span0 - busy[0] - (busy[-1] - busy[0])
    paper = (p - 1) * max(0, f + b + {'1f1b': 0, 'zb-h1': -w, 'zb-h2': -2 * w}[s])
    want = paper + 2 * (p - 1) * msg
    assert abs(got - want) <= 1e-6 * want, (s, got, want, paper, msg)
    idle[s], F[s] = got, (f, b, w, msg)
    if s == 'zb-h2':
        t1 = max(o['end_s'] for st in ops for o in st)
        t0 = min(o['start_s'] for st in ops for o in st)
        ends = (p - 1) * (f + msg)
        assert abs(t1 - t0 - busy[-1] - ends) <= 1e-6 * ends, (t1 - t0 - busy[-1], ends)
f, b, w, msg = F['zb-h1']
assert abs(F['1f1b'][0] - f) <= 1e-8 and abs(F['1f1b'][1] - (b + w)) <= 1e-6 * (b + w), (F['1f1b'], b + w)
ratio = (idle['zb-h1'] - 2 * (p - 1) * msg) / (idle['1f1b'] - 2 * (p - 1) * msg)
assert abs(ratio - (f + b - w) / (f + b + w)) <= 1e-6, ratio
" py "p 4, m $m: each schedule's bubble is the paper's in the run's F, B and W, plus the sends on its path; zb-h1's (F+B-W)/(F+B+W) of 1F1B's"
done

done_testing
