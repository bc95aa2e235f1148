#!/usr/bin/python3
"""Float64 PyTorch reference for ppa's optimizer path (src/optim/optim.c).

One run per schedule (cosine, linear, constant): 120 parameters (the first 80
"matrices" with weight decay 0.1, the rest "norms and biases" without, as two
torch.optim.AdamW parameter groups), 7 optimizer steps; before each step the
gradient is clipped with torch.nn.utils.clip_grad_norm_(max_norm 1.0) and the
learning rate is set from the schedule of transformers' get_*_schedule_with_warmup,
written here from its formula (linear warm-up from 0 over `warmup` steps, then
cosine to 0, linear to 0, or constant).  Two of every three steps clip, the
third does not.

Usage: /usr/bin/python3 tests/ref/optim_ref.py --out tests/fixtures/optim_golden.json
Deterministic (numpy RandomState): the same bytes on every run.

Output: {"n", "n_decay", "weight_decay", "max_norm", "peak_lr", "warmup", "total",
         "runs": [{"schedule", "params0", "grads": [[...] per step],
                   "lr": [...], "norm": [...], "params": [[...] after each step]}]}
Parameters and gradients are float32 values (stored exactly as float64 text).
"""

import argparse
import json
import math

import numpy as np
import torch

N, N_DECAY, WD, MAX_NORM, PEAK, WARMUP, TOTAL = 120, 80, 0.1, 1.0, 1e-2, 2, 7


def lr_at(schedule, step):
    """transformers' lr_lambda times the peak, at 0-based optimizer step `step`"""
    if step < WARMUP:
        return PEAK * step / max(1, WARMUP)
    if schedule == "constant":
        return PEAK
    progress = (step - WARMUP) / max(1, TOTAL - WARMUP)
    if schedule == "linear":
        return PEAK * max(0.0, 1.0 - progress)
    return PEAK * max(0.0, 0.5 * (1.0 + math.cos(math.pi * 2.0 * 0.5 * progress)))


def run(schedule, rng):
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [(rng.standard_normal(N) * (0.05 if s % 3 == 2 else 0.5)).astype(np.float32) for s in range(TOTAL)]
    w = torch.tensor(p0.astype(np.float64), requires_grad=True)
    a = torch.nn.Parameter(w.detach()[:N_DECAY].clone())
    b = torch.nn.Parameter(w.detach()[N_DECAY:].clone())
    opt = torch.optim.AdamW([{"params": [a], "weight_decay": WD}, {"params": [b], "weight_decay": 0.0}],
                            lr=PEAK, betas=(0.9, 0.999), eps=1e-8)
    out = {"schedule": schedule, "params0": p0.astype(float).tolist(), "grads": [], "lr": [], "norm": [], "params": []}
    for s in range(TOTAL):
        g = torch.tensor(grads[s].astype(np.float64))
        a.grad, b.grad = g[:N_DECAY].clone(), g[N_DECAY:].clone()
        norm = torch.nn.utils.clip_grad_norm_([a, b], MAX_NORM)
        lr = lr_at(schedule, s)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        out["grads"].append(grads[s].astype(float).tolist())
        out["lr"].append(lr)
        out["norm"].append(float(norm))
        out["params"].append(torch.cat([a.detach(), b.detach()]).tolist())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.RandomState(20261124)
    runs = [run(s, rng) for s in ("cosine", "linear", "constant")]
    doc = {"n": N, "n_decay": N_DECAY, "weight_decay": WD, "max_norm": MAX_NORM, "peak_lr": PEAK, "warmup": WARMUP,
           "total": TOTAL, "runs": runs}
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
