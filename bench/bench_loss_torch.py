#!/usr/bin/python3
"""PyTorch competitor for `ppa bench loss`: batched float32 forward + backward.

Every objective is one batched computation on [N, K] tensors (no Python loop
over lists), in the style of allRank / the OPO trainer:
  * neural_ndcg: NeuralSort [N, K, K] + Sinkhorn (columns then rows, sums
    clamped at 1e-10, at most 50 iterations, stop test = one max over the
    whole batch as allRank does; --sinkhorn-tol 0 forces all 50) + DCG;
  * approx_ndcg, lambda, ranknet, listnet: [N, K, K] pair tensors;
  * dpo_*, hinge, ipo, simpo: gathered pair index sets of the label-sorted list;
  * listmle: reverse logcumsumexp.
Data: scores ~ N(0, 1), labels ~ U(0, 1), fixed seed; each list is sorted by
label, descending, before timing (ppa does that at load time).  The timed
region is loss = mean over lists of the per-list loss, then loss.backward().
The median of --repeat runs after one warm-up is reported, in ms.

    /usr/bin/python3 bench/bench_loss_torch.py --lists 10000 --size 8 --objective all
    /usr/bin/python3 bench/bench_loss_torch.py --objective neural_ndcg --json --sinkhorn-tol 0
    /usr/bin/python3 bench/bench_loss_torch.py --validate   # float64 batched vs tests/ref oracle
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

EPS = 1e-10
OBJECTIVES = [
    "neural_ndcg", "approx_ndcg", "lambda", "ranknet",
    "dpo_single_pair", "dpo_bpr", "dpo_ovw", "dpo_all_pairs",
    "hinge", "listmle", "listnet", "ipo", "simpo",
]
ALIASES = {"ppa": "neural_ndcg", "lipo": "lambda", "lambdarank": "lambda", "dpo": "dpo_all_pairs",
           "slic": "hinge", "dpo_pl": "listmle"}


def _disc(k, ref):
    r = torch.arange(1, k + 1, dtype=ref.dtype, device=ref.device)
    return 1.0 / torch.log2(1.0 + r)


def _idcg(gains, disc):
    return (torch.sort(gains, dim=1, descending=True).values * disc).sum(dim=1)


class NeuralNDCG:
    def __init__(self, tau=1.0, max_iter=50, tol=1e-6):
        self.tau, self.max_iter, self.tol = tau, max_iter, tol
        self.iters = 0

    def __call__(self, s, y):
        n, k = s.shape
        gains = torch.pow(2.0, y) - 1.0
        disc = _disc(k, s)
        idcg = _idcg(gains, disc)
        c = (k + 1 - 2 * torch.arange(1, k + 1, dtype=s.dtype))  # [K] rank coefficients
        b = torch.abs(s[:, :, None] - s[:, None, :]).sum(dim=2)  # [N, K]
        z = (c[None, :, None] * s[:, None, :] - b[:, None, :]) / self.tau  # [N, rank, item]
        p = torch.softmax(z, dim=2)
        it = 0
        for it in range(1, self.max_iter + 1):
            p = p / torch.clamp(p.sum(dim=1, keepdim=True), min=EPS)
            p = p / torch.clamp(p.sum(dim=2, keepdim=True), min=EPS)
            with torch.no_grad():
                err = torch.maximum(torch.abs(p.sum(dim=2) - 1.0).max(), torch.abs(p.sum(dim=1) - 1.0).max())
            if err.item() < self.tol:  # batch-global stop test (allRank)
                break
        self.iters = it
        ghat = torch.bmm(p, gains[:, :, None]).squeeze(2)  # [N, rank]
        ndcg = (ghat * disc).sum(dim=1) / (idcg + EPS)
        return -torch.where(idcg > 0, ndcg, torch.zeros_like(ndcg))


def approx_ndcg(s, y, alpha=25.0):
    n, k = s.shape
    gains = torch.pow(2.0, y) - 1.0
    maxdcg = torch.clamp(_idcg(gains, _disc(k, s)), min=EPS)
    sig = torch.sigmoid(alpha * (s[:, None, :] - s[:, :, None]))  # [N, i, j] = sigma(alpha (s_j - s_i))
    off = 1.0 - torch.eye(k, dtype=s.dtype)
    tau_hat = 1.0 + (sig * off).sum(dim=2)
    return -(gains / torch.log2(1.0 + tau_hat)).sum(dim=1) / maxdcg


def lambda_loss(s, y, sigma=1.0):
    n, k = s.shape
    disc = _disc(k, s)
    gains = torch.pow(2.0, y) - 1.0
    maxdcg = torch.clamp(_idcg(gains, disc), min=EPS)
    _, idx = torch.sort(s.detach(), dim=1, descending=True, stable=True)
    s_p = torch.gather(s, 1, idx)
    y_p = torch.gather(y, 1, idx)
    g_p = torch.gather(gains, 1, idx) / maxdcg[:, None]
    mask = (y_p[:, :, None] > y_p[:, None, :]).to(s.dtype)
    w = torch.abs(disc[:, None] - disc[None, :])[None] * torch.abs(g_p[:, :, None] - g_p[:, None, :])
    d = s_p[:, :, None] - s_p[:, None, :]
    t = w * mask * -F.logsigmoid(sigma * d)
    return t.sum(dim=(1, 2)) / torch.clamp(mask.sum(dim=(1, 2)), min=1.0)


def ranknet(s, y):
    mask = (y[:, :, None] > y[:, None, :]).to(s.dtype)
    t = -F.logsigmoid(s[:, :, None] - s[:, None, :]) * mask
    return t.sum(dim=(1, 2)) / torch.clamp(mask.sum(dim=(1, 2)), min=1.0)


def _pairs(k, ptype):
    if ptype == "best_with_worst":
        return [0], [k - 1], 1
    if ptype == "best_with_others":
        return [0] * (k - 1), list(range(1, k)), k - 1
    if ptype == "others_vs_worst":
        return list(range(k - 1)), [k - 1] * (k - 1), k - 1
    i, j = torch.triu_indices(k, k, offset=1)
    return i.tolist(), j.tolist(), k * (k - 1) // 2


def pairwise(term, ptype="all_pairs", ties="exclude"):
    def loss(s, y):
        k = s.shape[1]
        i, j, norm = _pairs(k, ptype)
        i = torch.tensor(i)
        j = torch.tensor(j)
        d = s[:, i] - s[:, j]
        t = term(d)
        if ties == "exclude":
            t = t * (y[:, i] != y[:, j]).to(s.dtype)
        return t.sum(dim=1) / norm
    return loss


def dpo_term(gamma=0.0, eps=0.0):
    return lambda d: -(1.0 - eps) * F.logsigmoid(d - gamma) - eps * F.logsigmoid(gamma - d)


def ipo_term(beta=0.1):
    return lambda d: (d / beta - 1.0 / (2.0 * beta)) ** 2


def listmle(s, y):
    lse = torch.logcumsumexp(s.flip(1), dim=1).flip(1)
    return -(s - lse).sum(dim=1)


def listnet(s, y):
    q = torch.softmax(y, dim=1)
    return -(q * torch.log(torch.softmax(s, dim=1) + EPS)).sum(dim=1)


def make_loss(name, sinkhorn_tol=1e-6):
    """Per-list loss function [N, K] -> [N] on label-sorted lists."""
    if name == "neural_ndcg":
        return NeuralNDCG(tol=sinkhorn_tol)
    if name == "approx_ndcg":
        return approx_ndcg
    if name == "lambda":
        return lambda_loss
    if name == "ranknet":
        return ranknet
    if name == "dpo_single_pair":
        return pairwise(dpo_term(), "best_with_worst")
    if name == "dpo_bpr":
        return pairwise(dpo_term(), "best_with_others")
    if name == "dpo_ovw":
        return pairwise(dpo_term(), "others_vs_worst")
    if name == "dpo_all_pairs":
        return pairwise(dpo_term())
    if name == "hinge":
        return pairwise(lambda d: torch.relu(1.0 - d))
    if name == "listmle":
        return listmle
    if name == "listnet":
        return listnet
    if name == "ipo":
        return pairwise(ipo_term(0.1))
    if name == "simpo":
        return pairwise(dpo_term(gamma=0.1))
    raise ValueError("unknown objective %r" % name)


def make_data(n, k, dtype=torch.float32, seed=1234):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(n, k, generator=g, dtype=torch.float64)
    y = torch.rand(n, k, generator=g, dtype=torch.float64)
    y, idx = torch.sort(y, dim=1, descending=True, stable=True)  # label order, as ppa at load time
    s = torch.gather(s, 1, idx)
    return s.to(dtype).contiguous(), y.to(dtype).contiguous()


def time_objective(name, scores, labels, repeat, sinkhorn_tol):
    fn = make_loss(name, sinkhorn_tol)
    times = []
    for r in range(repeat + 1):  # run 0 is the warm-up
        s = scores.clone().requires_grad_(True)
        t0 = time.perf_counter()
        loss = fn(s, labels).mean()
        loss.backward()
        t1 = time.perf_counter()
        if r > 0:
            times.append((t1 - t0) * 1e3)
        if not torch.isfinite(loss) or not torch.isfinite(s.grad).all():
            raise RuntimeError("%s: non-finite loss or gradient" % name)
    extra = {"sinkhorn_iters": fn.iters} if isinstance(fn, NeuralNDCG) else {}
    return statistics.median(times), extra


def validate():
    """float64 batched implementations against the per-list oracle."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests", "ref"))
    import objectives_ref as ref
    worst = 0.0
    ok = True
    for k in (2, 3, 8, 13):
        s, y = make_data(24, k, torch.float64, seed=77 + k)
        for name in OBJECTIVES:
            # tol 0: every list runs exactly 50 iterations, so batch-global = per-list stopping
            fn = make_loss(name, sinkhorn_tol=0.0)
            sl = s.clone().requires_grad_(True)
            per_list = fn(sl, y)
            per_list.sum().backward()
            opts = {"sinkhorn_tol": 0.0} if name == "neural_ndcg" else {}
            for b in range(s.shape[0]):
                loss, grad, _ = ref.compute(name, opts, s[b].tolist(), y[b].tolist())
                err = max([abs(loss - per_list[b].item())] +
                          [abs(a - c) for a, c in zip(grad, sl.grad[b].tolist())])
                worst = max(worst, err)
                if err > 1e-10:
                    ok = False
                    print("validate FAIL %s K=%d list %d: error %.3g" % (name, k, b, err))
    print("validate: batched float64 vs objectives_ref oracle, worst abs error %.3g: %s"
          % (worst, "PASS" if ok else "FAIL"))
    return ok


def main():
    ap = argparse.ArgumentParser(description="batched float32 PyTorch loss benchmark (competitor for ppa bench loss)")
    ap.add_argument("--lists", type=int, default=10000)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--objective", default="all", help="objective name or 'all'")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sinkhorn-tol", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", action="store_true", help="one JSON object per objective")
    ap.add_argument("--validate", action="store_true", help="check the batched maths against the oracle and exit")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.validate:
        return 0 if validate() else 1
    if args.objective == "all":
        names = OBJECTIVES
    else:
        names = [ALIASES.get(args.objective, args.objective)]
        if names[0] not in OBJECTIVES:
            ap.error("unknown objective %r" % args.objective)
    if args.lists < 1 or args.size < 2 or args.repeat < 1:
        ap.error("need --lists >= 1, --size >= 2, --repeat >= 1")
    scores, labels = make_data(args.lists, args.size, torch.float32, args.seed)
    if not args.json:
        print("torch %s, float32, %d threads, %d lists x %d items, median of %d after 1 warm-up"
              % (torch.__version__, args.threads, args.lists, args.size, args.repeat))
        print("%-16s %10s %12s  %s" % ("objective", "ms", "us/list", "note"))
    for name in names:
        ms, extra = time_objective(name, scores, labels, args.repeat, args.sinkhorn_tol)
        if args.json:
            rec = {"objective": name, "lists": args.lists, "size": args.size, "ms": ms,
                   "impl": "torch-float32", "threads": args.threads}
            rec.update(extra)
            print(json.dumps(rec))
        else:
            note = ("sinkhorn iterations %d (tol %g)" % (extra["sinkhorn_iters"], args.sinkhorn_tol)
                    if extra else "")
            print("%-16s %10.3f %12.3f  %s" % (name, ms, 1e3 * ms / args.lists, note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
