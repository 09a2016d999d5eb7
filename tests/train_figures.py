"""The figures of a training run that tests/cli/train_bits.sh holds still, and how far each may
move from one CPU to another.

A run's figures are of two kinds. Those no rounding can move are compared exactly: ledger
peaks, bytes sent, parameter counts, the pipeline's executed order, steps skipped, loss scales,
where a non-finite value was found. Those rounding moves are compared within a tolerance:
losses, gradient norms, clip coefficients (relative), underflow fractions and counts
(absolute). They move because the matrix products are OpenBLAS's, whose kernels (chosen by the
CPU, or OPENBLAS_CORETYPE) add a dot product's terms in different orders: step 1's fp32 loss
moves by ~1e-10, and bf16 or fp16 training turns such a difference into a different rounding
of a few activations (2^-8 or 2^-11 of them), which the next steps carry on. scalelab's own
kernels give the same bits on every vector path (tests/cli/paths.sh).

Each tolerance is measured, not chosen: `record` runs every layout under each CPU
configuration the recording machine can run (scalelab's vector paths times OpenBLAS's core
types), takes the largest spread of each figure at each step over the layouts of one class
(a model and a precision: tiny fp32, tiny mixed, small mixed) and allows TOL_FACTOR times it,
never less than the floors below. The file keeps the spreads beside the tolerances.

    python3 train_figures.py figures              < run.jsonl   (the run's figures, JSON)
    python3 train_figures.py record REF SPREADS                  (SPREADS: JSON from the script)
    python3 train_figures.py check REF ARGS FIGS                 (exit 1 with what moved)
    python3 train_figures.py dumpfig DIR                         (a --dump folder's figures)
    python3 train_figures.py plant FIGS KIND                     (FIGS changed as a bug would)
"""
import json
import math
import os
import struct
import sys

# Of a measured spread, how many times a figure may move: the spreads come from eight CPU
# configurations of one machine; another CPU (AVX-512's kernels, another OpenBLAS) adds its
# own order of additions, of the same size (the largest spread of one configuration against
# the others is within a factor 3 of the overall one in the recording below).
TOL_FACTOR = 10
# Floors: a relative tolerance never under 1e-7 (two fp32 ulps: a figure no configuration
# moved here may still move by its last bit elsewhere); an underflow fraction may move by two
# of tiny's 202,304 parameters' elements, a count by 2.
REL_FLOOR = 1e-7
FRAC_FLOOR = 1e-5
COUNT_FLOOR = 2

REL = {"loss", "grad_norm", "clip_coef", "first_loss", "max_grad_norm", "min_clip_coef",
       "chunk_norms", "dump_loss"}
FRAC = {"underflow_frac", "max_underflow_frac"}
COUNT = {"underflow_by_layer"}

STEP_KEYS = ("step", "loss", "grad_norm", "clip_coef", "loss_scale", "skipped", "overflow",
             "nonfinite", "nonfinite_gpu", "underflow_frac", "act_peak_bytes",
             "comm_bytes_per_gpu")
SUMMARY_KEYS = ("first_loss", "skipped_steps", "overflow_steps", "spikes", "final_loss_scale",
                "max_grad_norm", "min_clip_coef", "max_underflow_frac", "underflow_by_layer",
                "first_nonfinite", "act_peak_bytes", "memory_peak_bytes",
                "scalar_bytes_per_step", "parameters")
GPU_KEYS = ("gpu", "coord", "peak", "sent_bytes_per_step", "comm_bytes_per_step")
CHUNKS = 64  # a dump's gradients are compared as the norms of 64 equal runs of them


def figures(lines):
    """What is held of a run's JSON lines (train --json --summary)."""
    steps = [{k: s[k] for k in STEP_KEYS if k in s} for s in lines[:-1]]
    m = lines[-1]["summary"]
    f = {"steps": steps,
         "summary": {k: m[k] for k in SUMMARY_KEYS if k in m},
         "per_gpu": [{k: g[k] for k in GPU_KEYS} for g in m["per_gpu"]]}
    if "pipeline" in m:
        f["pipeline"] = {"ops": [[[o["kind"], o["micro"], o["chunk"]] for o in st]
                                 for st in m["pipeline"]["ops"]],
                         "peak_in_flight": m["pipeline"]["peak_in_flight"]}
    return f


def dump_figures(folder):
    """A --dump folder's step-1 gradients as the norms of CHUNKS runs, their count, the loss."""
    with open(folder + "/grads.f32", "rb") as fh:
        raw = fh.read()
    n = len(raw) // 4
    g = struct.unpack("<%df" % n, raw)
    norms = []
    for c in range(CHUNKS):
        a, b = c * n // CHUNKS, (c + 1) * n // CHUNKS
        norms.append(math.sqrt(math.fsum(x * x for x in g[a:b])))
    with open(folder + "/loss.txt") as fh:
        loss = float(fh.read().split()[0])
    return {"count": n, "chunk_norms": norms, "dump_loss": loss}


def run_class(args):
    """The class whose spreads a layout's tolerances come from: its model and precision."""
    a = args.replace("=", " ").split()
    model = a[a.index("--model") + 1] if "--model" in a else "tiny"
    mixed = "--precision" in a and a[a.index("--precision") + 1] in ("bf16", "fp16")
    return model + (" mixed" if mixed else " fp32")


def leaves(x, path=()):
    """Every figure of a figures tree with its path (key names and list indices)."""
    if isinstance(x, dict):
        for k in sorted(x):
            yield from leaves(x[k], path + (k,))
    elif isinstance(x, list) and not (len(path) > 1 and path[-2] == "ops"):
        for i, v in enumerate(x):
            yield from leaves(v, path + (i,))
    else:
        yield path, x


def kind(path):
    """'rel', 'frac', 'count' or 'exact', from the figure's key (the last name in its path)."""
    name = next(p for p in reversed(path) if isinstance(p, str))
    if name in REL:
        return "rel"
    if name in FRAC:
        return "frac"
    if name in COUNT:
        return "count"
    return "exact"


def tol_key(path):
    """A tolerance is per figure and per step: ("steps", 2, "loss") -> "loss@3"."""
    name = next(p for p in reversed(path) if isinstance(p, str))
    if path[0] == "steps":
        return "%s@%d" % (name, path[1] + 1)
    return name


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def spread(kind_, a, b):
    if not (number(a) and number(b)):
        return 0.0 if a == b else math.inf
    if kind_ == "rel":
        if a == b:
            return 0.0
        return abs(a - b) / max(abs(a), abs(b))
    return abs(a - b)


def floor(kind_):
    return {"rel": REL_FLOOR, "frac": FRAC_FLOOR, "count": COUNT_FLOOR}[kind_]


def record(ref_path, spreads_path):
    """The reference file from every layout's figures under every configuration."""
    with open(spreads_path) as fh:
        data = json.load(fh)
    configs = data["configs"]
    spreads = {}  # class -> tol_key -> largest spread
    for r in data["runs"] + data["dumps"]:
        cls = run_class(r["args"])
        base = dict(leaves(r["figures"][configs[0]]))
        for c in configs[1:]:
            for path, v in leaves(r["figures"][c]):
                k = kind(path)
                s = spread(k, base.get(path), v)
                if k == "exact":
                    if s != 0:
                        sys.exit("%s: %s is %r under %s but %r natively: it is not exact"
                                 % (r["args"], "/".join(map(str, path)), v, c, base.get(path)))
                    continue
                d = spreads.setdefault(cls, {})
                d[tol_key(path)] = max(d.get(tol_key(path), 0.0), s)
    tols = {}
    for r in data["runs"] + data["dumps"]:  # every figure that may move has its tolerance
        cls = run_class(r["args"])
        for path, v in leaves(r["figures"][configs[0]]):
            k = kind(path)
            if k != "exact":
                s = spreads.get(cls, {}).get(tol_key(path), 0.0)
                tols.setdefault(cls, {})[tol_key(path)] = max(TOL_FACTOR * s, floor(k))
    out = {"configs": configs,
           "rule": "tolerance = max(%d x the largest spread over the class's layouts and the "
                   "configurations, floor: relative %g, fraction %g, count %d)"
                   % (TOL_FACTOR, REL_FLOOR, FRAC_FLOOR, COUNT_FLOOR),
           "spreads": {c: dict(sorted(v.items())) for c, v in sorted(spreads.items())},
           "tolerances": {c: dict(sorted(v.items())) for c, v in sorted(tols.items())},
           "runs": [{"args": r["args"], "figures": r["figures"][configs[0]]}
                    for r in data["runs"]],
           "dumps": [{"args": r["args"], "figures": r["figures"][configs[0]]}
                     for r in data["dumps"]]}
    with open(ref_path + ".tmp", "w") as fh:
        fh.write("{\n")
        keys = list(out)
        for i, k in enumerate(keys):
            sep = "," if i < len(keys) - 1 else ""
            if k in ("runs", "dumps"):
                fh.write('"%s": [\n' % k)
                for j, r in enumerate(out[k]):
                    fh.write(json.dumps(r, sort_keys=True) + ("," if j < len(out[k]) - 1 else "")
                             + "\n")
                fh.write("]%s\n" % sep)
            else:
                fh.write('"%s": %s%s\n' % (k, json.dumps(out[k], sort_keys=True, indent=1), sep))
        fh.write("}\n")
    os.replace(ref_path + ".tmp", ref_path)


def compare(ref, args, got, section="runs"):
    """What moved in a run's figures against the reference's, beyond its tolerance."""
    want = next((r["figures"] for r in ref[section] if r["args"] == args), None)
    if want is None:
        return ["no figures recorded for '%s'" % args]
    tols = ref["tolerances"].get(run_class(args), {})
    got_leaves = dict(leaves(got))
    want_leaves = dict(leaves(want))
    bad = []
    for path in sorted(set(got_leaves) | set(want_leaves), key=lambda p: tuple(map(str, p))):
        name = "/".join(map(str, path))
        if path not in want_leaves or path not in got_leaves:
            bad.append("%s: %s" % (name, "not recorded" if path not in want_leaves
                                   else "missing from the run"))
            continue
        w, g = want_leaves[path], got_leaves[path]
        k = kind(path)
        if k == "exact":
            if isinstance(w, list) and isinstance(g, list) and w != g:  # a stage's operations
                i = next((i for i, (a, b) in enumerate(zip(w, g)) if a != b), min(len(w), len(g)))
                bad.append("%s: from operation %d: %s, recorded %s" % (
                    name, i, json.dumps(g[i:i + 4]), json.dumps(w[i:i + 4])))
            elif w != g:
                bad.append("%s: %s, recorded %s" % (name, json.dumps(g)[:300],
                                                    json.dumps(w)[:300]))
            continue
        t = tols.get(tol_key(path))
        s = spread(k, w, g)
        if t is None or not s <= t:
            bad.append("%s: %r, recorded %r: %s %.3g, tolerance %s" % (
                name, g, w, "relative difference" if k == "rel" else "difference", s,
                "none recorded" if t is None else "%.3g" % t))
    return bad


def plant(figs, what):
    """The figures as a bug would change them: step 1's loss by 1e-5 relative, one ledger byte,
    or the order of two operations of the last pipeline stage."""
    f = json.loads(json.dumps(figs))
    if what == "loss":
        f["steps"][0]["loss"] *= 1 + 1e-5
    elif what == "byte":
        f["per_gpu"][-1]["peak"]["activations"] += 1
    elif what == "order":
        ops = f["pipeline"]["ops"][-1]
        i = next(i for i in range(len(ops) - 1) if ops[i] != ops[i + 1])
        ops[i], ops[i + 1] = ops[i + 1], ops[i]
    else:
        sys.exit("plant: loss, byte or order")
    return f


def main(argv):
    cmd = argv[1]
    if cmd == "figures":
        lines = [json.loads(l) for l in sys.stdin if l.strip()]
        print(json.dumps(figures(lines), sort_keys=True))
    elif cmd == "dumpfig":
        print(json.dumps(dump_figures(argv[2]), sort_keys=True))
    elif cmd == "record":
        record(argv[2], argv[3])
    elif cmd == "check":
        with open(argv[2]) as fh:
            ref = json.load(fh)
        with open(argv[4]) as fh:
            got = json.load(fh)
        section = "dumps" if "chunk_norms" in got else "runs"
        bad = compare(ref, argv[3], got, section)
        for b in bad[:12]:
            print(b)
        if len(bad) > 12:
            print("... and %d more" % (len(bad) - 12))
        return 1 if bad else 0
    elif cmd == "plant":
        with open(argv[2]) as fh:
            print(json.dumps(plant(json.load(fh), argv[3]), sort_keys=True))
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
