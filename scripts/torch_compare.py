#!/usr/bin/env python3
"""Times PyTorch's training step of a scalelab model shape on this CPU, one thread, to set
beside `scalelab bench --only train` (its "torch-compare fp32 step" line runs the same shape).

The model is tests/torch_check.py's: the tiny GPT written in PyTorch (RMSNorm, RoPE
rotate-half, SwiGLU, tied embedding), the one the gradient tests compare scalelab with. A step
is what `scalelab train` does in fp32: forward, backward, clip the global norm to 1.0,
torch.optim.AdamW (lr 1e-3, weight decay 0.01), on a random batch. The figure is the best of
the timed steps (the fastest is the least disturbed by other processes), as scalelab's bench
reports its own.

usage: torch_compare.py [--json] [MODEL.ini] [BATCH] [SECONDS]
       (defaults: assets/models/torch-compare.ini, 16, 3)
--json prints {"torch": VERSION, "batch": B, "seq": T, "step_s": [every timed step's seconds]}
instead, for `scalelab bench --only train` to set beside its own steps.
"""
import configparser
import json
import os
import sys
import time

# One thread, as scalelab's step: torch.set_num_threads(1) below caps PyTorch's own pool, but
# not the threads of the BLAS library it calls (Debian's torch calls the system OpenBLAS, which
# starts one per core): they ran the matmuls on two cores, and the CPU time measured counted
# both, their spinning too (steps of 120 to 340 ms where one thread takes 115 to 135).
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import torch  # noqa: E402  (after the environment it reads at load)

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests"))
from torch_check import forward_params, layout  # noqa: E402  (the model the tests check)


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    as_json = len(args) < len(sys.argv) - 1
    ini_path = args[0] if len(args) > 0 else os.path.join(
        here, "..", "assets", "models", "torch-compare.ini")
    try:
        batch = int(args[1]) if len(args) > 1 else 16
        seconds = float(args[2]) if len(args) > 2 else 3.0
        if batch < 1 or not seconds > 0:
            raise ValueError("BATCH must be a whole number from 1, SECONDS above 0")
    except ValueError as err:
        print(f"torch_compare.py: {err}", file=sys.stderr)
        return 2
    ini = configparser.ConfigParser(inline_comment_prefixes=("#",))
    try:
        if not ini.read(ini_path):
            raise OSError("cannot be read")
        m = ini["model"]
        cfg = {k: int(m[k]) for k in ("layers", "d_model", "heads", "ffn", "vocab", "seq")}
    except (OSError, configparser.Error, KeyError, ValueError) as err:
        print(f"torch_compare.py: {ini_path}: not a model file ({err})", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    torch.manual_seed(1)
    lay, _ = layout(cfg)
    # one tensor per weight, as a PyTorch model holds them (views of one flat tensor would make
    # autograd add every view's gradient into a zeroed copy of the whole)
    params = {name: (torch.randn(*shape) * 0.02).requires_grad_(True) for name, _, shape in lay}
    opt = torch.optim.AdamW(list(params.values()), lr=1e-3, weight_decay=0.01)
    tokens = torch.randint(cfg["vocab"], (batch, cfg["seq"]))
    targets = torch.randint(cfg["vocab"], (batch, cfg["seq"]))

    def step():
        opt.zero_grad(set_to_none=False)
        loss = forward_params(cfg, params, tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()

    step()  # warm: first allocations
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 2:
        t0 = time.process_time()
        step()
        times.append(time.process_time() - t0)
    if as_json:
        print(json.dumps({"torch": torch.__version__, "batch": batch, "seq": cfg["seq"],
                          "step_s": times}))
        return 0
    best = min(times)
    print(f"torch {torch.__version__} fp32 step, batch {batch} x {cfg['seq']}, one thread: "
          f"{batch * cfg['seq'] / best:.0f} tokens/s ({best * 1e3:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
