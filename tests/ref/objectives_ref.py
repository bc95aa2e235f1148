#!/usr/bin/python3
"""Independent float64 reference ("oracle") for the ppa loss library.

Every objective of shared/spec/objectives.md is written here straight from the
spec text, per list, in torch float64, and its gradient comes from torch
autograd, so the numbers are an independent check of the C library's
hand-derived gradients.  Nothing here is vectorised over lists.

Usage (Debian's interpreter, which has torch 1.13):
    /usr/bin/python3 tests/ref/objectives_ref.py --out tests/fixtures/objectives_golden.jsonl
    /usr/bin/python3 tests/ref/objectives_ref.py --check tests/fixtures/objectives_golden.jsonl

Generation is deterministic (numpy RandomState with fixed seeds, one thread):
the same bytes on every run.  Both modes first run the self-test, which pins
the worked examples of objectives.md section 6 and the step-0 closed forms of
section 4.  --check then re-reads the golden file, recomputes every line,
validates its shape, and compares autograd against central finite differences
on every line where that comparison is meaningful (no score ties, no kinks,
Sinkhorn iteration count constant around the point).

Golden line format (one JSON object per line):
  {"objective", "options", "scores", "labels", "loss", "grad", "ndcg",
   "accuracy", "kendall_tau", "sinkhorn_iters" (neural_ndcg only)}
"labels" entries may be null (masked item; its score is finite garbage).
"grad" is d loss / d score in input order, 0 for masked items.
"""

import argparse
import itertools
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
DT = torch.float64

EPS = 1e-10  # DEFAULT_EPS of the spec (section 2.7)

OBJECTIVES = [
    "neural_ndcg", "approx_ndcg", "lambda", "ranknet",
    "dpo_single_pair", "dpo_bpr", "dpo_ovw", "dpo_all_pairs",
    "hinge", "listmle", "listnet", "ipo", "simpo",
]
GAIN_BASED = {"neural_ndcg", "approx_ndcg", "lambda"}
DPO_PAIRS = {
    "dpo_single_pair": "best_with_worst",
    "dpo_bpr": "best_with_others",
    "dpo_ovw": "others_vs_worst",
    "dpo_all_pairs": "all_pairs",
}

# Option keys honoured by each objective and their defaults (None for k = n).
OPTION_KEYS = {
    "neural_ndcg": {"tau": 1.0, "k": None, "gain": "pow2", "discount": "log2", "sinkhorn": True,
                    "sinkhorn_iters": 50, "sinkhorn_tol": 1e-6},
    "approx_ndcg": {"alpha": 25.0},
    "lambda": {"sigma": 1.0, "k": None},
    "ranknet": {},
    "dpo_single_pair": {"ties": "exclude", "label_smoothing": 0.0},
    "dpo_bpr": {"ties": "exclude", "label_smoothing": 0.0},
    "dpo_ovw": {"ties": "exclude", "label_smoothing": 0.0},
    "dpo_all_pairs": {"ties": "exclude", "label_smoothing": 0.0},
    "hinge": {"ties": "exclude"},
    "listmle": {"normalize": False},
    "listnet": {},
    "ipo": {"beta": 0.1, "ties": "exclude", "pairs": "all_pairs"},
    "simpo": {"gamma": 0.1, "ties": "exclude", "label_smoothing": 0.0, "pairs": "all_pairs"},
}


def resolve_options(objective, options):
    """Merge line options over the defaults; unknown keys are an error."""
    defaults = OPTION_KEYS[objective]
    for key in options:
        if key not in defaults:
            raise ValueError("objective %s does not take option %r" % (objective, key))
    o = dict(defaults)
    o.update(options)
    return o


# ---------------------------------------------------------------------------
# Common pieces (spec section 2.4)
# ---------------------------------------------------------------------------

def gain_values(psi, kind):
    """G(psi) as Python floats: pow2 = 2^psi - 1, linear = psi."""
    if kind == "pow2":
        return [2.0 ** p - 1.0 for p in psi]
    if kind == "linear":
        return [float(p) for p in psi]
    raise ValueError("unknown gain %r" % kind)


def discount_values(n, kind):
    """D(r) for r = 1..n as Python floats."""
    out = []
    for r in range(1, n + 1):
        if kind == "log2":
            out.append(1.0 / math.log2(1.0 + r))
        elif kind == "inv":
            out.append(1.0 / r)
        elif kind == "inv_sqrt":
            out.append(1.0 / math.sqrt(r))
        elif kind == "inv_sq":
            out.append(1.0 / (r * r))
        else:
            raise ValueError("unknown discount %r" % kind)
    return out


def cap_k(k, n):
    return n if k is None else min(int(k), n)


def ideal_dcg(gains, disc, k):
    """IDCG@k = sum_{r<=k} G_(r) D(r) with the gains sorted descending."""
    g = sorted(gains, reverse=True)
    return math.fsum(g[r] * disc[r] for r in range(k))


def softplus(x):
    """softplus(x) = -log sigmoid(-x); torch's logsigmoid is the stable form
    (no threshold cut-off like F.softplus, exact derivative sigmoid(x))."""
    return -F.logsigmoid(-x)


def logsigmoid(x):
    return F.logsigmoid(x)


def zero_loss(s):
    """A loss of exactly 0 that is still attached to s (gradient 0)."""
    return (s * 0.0).sum()


# ---------------------------------------------------------------------------
# Objectives.  Each takes s (1-D float64 tensor of the valid items in label
# order, attached to the leaf), psi (Python floats, label order, descending,
# stable) and the resolved options; returns (loss tensor, sinkhorn iterations).
# ---------------------------------------------------------------------------

def neuralsort(s, tau):
    """P_hat[r, i] = softmax_i((c_r s_i - B_i) / tau), c_r = n + 1 - 2r,
    B_i = sum_j |s_i - s_j| (torch.abs: d|x|/dx = 0 at 0)."""
    n = s.shape[0]
    c = torch.tensor([n + 1 - 2 * r for r in range(1, n + 1)], dtype=DT)
    a = torch.abs(s[:, None] - s[None, :])
    b = a.sum(dim=1)
    z = (c[:, None] * s[None, :] - b[None, :]) / tau
    return torch.softmax(z, dim=1)


def sinkhorn(p, max_iter, tol):
    """Columns then rows; sums clamped at 1e-10 (no gradient while clamped);
    per-list stop test, not differentiated.  Returns (P, iterations run)."""
    it = 0
    for it in range(1, max_iter + 1):
        u = p / torch.clamp(p.sum(dim=0, keepdim=True), min=EPS)
        p = u / torch.clamp(u.sum(dim=1, keepdim=True), min=EPS)
        with torch.no_grad():
            row_err = torch.max(torch.abs(p.sum(dim=1) - 1.0)).item()
            col_err = torch.max(torch.abs(p.sum(dim=0) - 1.0)).item()
        if row_err < tol and col_err < tol:
            break
    return p, it


def obj_neural_ndcg(s, psi, o):
    n = s.shape[0]
    k = cap_k(o["k"], n)
    gains = gain_values(psi, o["gain"])
    disc = discount_values(n, o["discount"])
    idcg = ideal_dcg(gains, disc, k)
    if idcg == 0.0:
        return zero_loss(s), 0
    p = neuralsort(s, float(o["tau"]))
    iters = 0
    if o["sinkhorn"]:
        p, iters = sinkhorn(p, int(o["sinkhorn_iters"]), float(o["sinkhorn_tol"]))
    g = torch.tensor(gains, dtype=DT)
    d_at_k = torch.tensor([disc[r] if r < k else 0.0 for r in range(n)], dtype=DT)
    ghat = p @ g
    dcg = (ghat * d_at_k).sum()
    return -(dcg / (idcg + EPS)), iters


def obj_approx_ndcg(s, psi, o):
    n = s.shape[0]
    alpha = float(o["alpha"])
    gains = gain_values(psi, "pow2")
    disc = discount_values(n, "log2")
    maxdcg = max(ideal_dcg(gains, disc, n), EPS)
    # sigma_ij = sigmoid(alpha (s_j - s_i)); tau_hat_i = 1 + sum_{j != i} sigma_ij
    sig = torch.sigmoid(alpha * (s[None, :] - s[:, None]))
    off = 1.0 - torch.eye(n, dtype=DT)
    tau_hat = 1.0 + (sig * off).sum(dim=1)
    g = torch.tensor(gains, dtype=DT)
    ndcg = (g / torch.log2(1.0 + tau_hat)).sum() / maxdcg
    return -ndcg, 0


def stable_score_order(s_values):
    """Positions of the label-sorted list, stably sorted by score descending
    (tied scores keep label order)."""
    return sorted(range(len(s_values)), key=lambda i: -s_values[i])


def obj_lambda(s, psi, o):
    n = s.shape[0]
    k = cap_k(o["k"], n)
    sigma = float(o["sigma"])
    gains = gain_values(psi, "pow2")
    disc = discount_values(n, "log2")
    maxdcg = max(ideal_dcg(gains, disc, k), EPS)
    pi = stable_score_order(s.detach().tolist())  # pi[p] = item at position p+1
    ghat = [gains[pi[p]] / maxdcg for p in range(n)]
    terms = []
    for p in range(k):
        for q in range(k):
            if psi[pi[p]] > psi[pi[q]]:
                w = abs(disc[p] - disc[q]) * abs(ghat[p] - ghat[q])
                d = s[pi[p]] - s[pi[q]]
                terms.append(-w * softplus(-sigma * d))  # t = w log sigmoid(sigma d)
    if not terms:
        return zero_loss(s), 0
    return -torch.stack(terms).sum() / len(terms), 0


def obj_ranknet(s, psi, o):
    n = s.shape[0]
    terms = [softplus(-(s[i] - s[j])) for i in range(n) for j in range(n) if psi[i] > psi[j]]
    if not terms:
        return zero_loss(s), 0
    return torch.stack(terms).sum() / len(terms), 0


def pair_set(n, ptype):
    """Pairs (i preferred to j) on the label-sorted list (0-based) and the
    normaliser of spec 3.5."""
    if ptype == "best_with_worst":
        return [(0, n - 1)], 1
    if ptype == "best_with_others":
        return [(0, j) for j in range(1, n)], n - 1
    if ptype == "others_vs_worst":
        return [(j, n - 1) for j in range(n - 1)], n - 1
    if ptype == "all_pairs":
        return [(i, j) for i in range(n) for j in range(i + 1, n)], n * (n - 1) // 2
    raise ValueError("unknown pairs %r" % ptype)


def pairwise_loss(s, psi, ptype, ties, term):
    n = s.shape[0]
    pairs, norm = pair_set(n, ptype)
    if ties not in ("exclude", "include"):
        raise ValueError("unknown ties %r" % ties)
    terms = []
    for i, j in pairs:
        if ties == "exclude" and psi[i] == psi[j]:
            continue  # contributes 0, still counted in the normaliser
        terms.append(term(s[i] - s[j]))
    if not terms:
        return zero_loss(s)
    return torch.stack(terms).sum() / norm


def dpo_term(gamma, eps):
    def term(d):
        return -(1.0 - eps) * logsigmoid(d - gamma) - eps * logsigmoid(gamma - d)
    return term


def make_dpo(ptype):
    def obj(s, psi, o):
        t = dpo_term(0.0, float(o["label_smoothing"]))
        return pairwise_loss(s, psi, ptype, o["ties"], t), 0
    return obj


def obj_hinge(s, psi, o):
    return pairwise_loss(s, psi, "all_pairs", o["ties"], lambda d: torch.relu(1.0 - d)), 0


def obj_listmle(s, psi, o):
    n = s.shape[0]
    # reverse log-cumsum-exp, one max-shifted logsumexp per suffix
    terms = [s[k] - torch.logsumexp(s[k:], dim=0) for k in range(n)]
    loss = -torch.stack(terms).sum()
    if o["normalize"]:
        loss = loss / n
    return loss, 0


def obj_listnet(s, psi, o):
    q = torch.softmax(torch.tensor(psi, dtype=DT), dim=0)
    p = torch.softmax(s, dim=0)
    return -(q * torch.log(p + EPS)).sum(), 0


def obj_ipo(s, psi, o):
    beta = float(o["beta"])

    def term(d):
        h = d / beta
        return (h - 1.0 / (2.0 * beta)) ** 2
    return pairwise_loss(s, psi, o["pairs"], o["ties"], term), 0


def obj_simpo(s, psi, o):
    t = dpo_term(float(o["gamma"]), float(o["label_smoothing"]))
    return pairwise_loss(s, psi, o["pairs"], o["ties"], t), 0


OBJ_FUNCS = {
    "neural_ndcg": obj_neural_ndcg,
    "approx_ndcg": obj_approx_ndcg,
    "lambda": obj_lambda,
    "ranknet": obj_ranknet,
    "hinge": obj_hinge,
    "listmle": obj_listmle,
    "listnet": obj_listnet,
    "ipo": obj_ipo,
    "simpo": obj_simpo,
}
for _name, _ptype in DPO_PAIRS.items():
    OBJ_FUNCS[_name] = make_dpo(_ptype)


# ---------------------------------------------------------------------------
# Per-list driver: masking, label sort, autograd
# ---------------------------------------------------------------------------

def label_order(labels):
    """Valid input positions, stably sorted by label descending."""
    valid = [i for i, l in enumerate(labels) if l is not None]
    return sorted(valid, key=lambda i: -labels[i])


def compute(objective, options, scores, labels, want_grad=True):
    """Loss, gradient (input order) and Sinkhorn iterations of one list."""
    o = resolve_options(objective, options)
    n_in = len(scores)
    order = label_order(labels)
    if objective in GAIN_BASED and any(labels[i] < 0 for i in order):
        raise ValueError("%s: negative label" % objective)
    if len(order) < 2:  # spec 2.9: loss 0, gradient 0
        return 0.0, [0.0] * n_in, 0
    s_full = torch.tensor([float(x) for x in scores], dtype=DT, requires_grad=want_grad)
    s = s_full[torch.tensor(order, dtype=torch.long)]
    psi = [float(labels[i]) for i in order]
    if want_grad:
        loss, iters = OBJ_FUNCS[objective](s, psi, o)
        loss.backward()
        grad = s_full.grad.tolist()
    else:
        with torch.no_grad():
            loss, iters = OBJ_FUNCS[objective](s, psi, o)
        grad = None
    return loss.item(), grad, iters


# ---------------------------------------------------------------------------
# Metrics (spec 2.4, 3.11), plain float64 Python
# ---------------------------------------------------------------------------

def _sign(x):
    return (x > 0) - (x < 0)


def metrics(scores, labels, k=None, gain="pow2", discount="log2"):
    idx = [i for i, l in enumerate(labels) if l is not None]
    s = [float(scores[i]) for i in idx]
    y = [float(labels[i]) for i in idx]
    n = len(idx)
    # NDCG@k with tie-averaged gains
    if any(v < 0 for v in y):
        ndcg = None
    else:
        kk = cap_k(k, n)
        g = gain_values(y, gain)
        d = discount_values(n, discount)
        idcg = ideal_dcg(g, d, kk)
        if idcg == 0.0:
            ndcg = 1.0
        else:
            order = sorted(range(n), key=lambda i: -s[i])
            pos_gain = [0.0] * n
            a = 0
            while a < n:
                b = a
                while b + 1 < n and s[order[b + 1]] == s[order[a]]:
                    b += 1
                mean = math.fsum(g[order[t]] for t in range(a, b + 1)) / (b - a + 1)
                for t in range(a, b + 1):
                    pos_gain[t] = mean
                a = b + 1
            dcg = math.fsum(pos_gain[r] * d[r] for r in range(kk))
            ndcg = dcg / idcg
    # pair accuracy
    good = total = 0
    for i in range(n):
        for j in range(n):
            if y[i] > y[j]:
                total += 1
                good += s[i] > s[j]
    accuracy = good / total if total else None
    # Kendall tau-b
    n0 = n * (n - 1) // 2
    conc = disc = n1 = n2 = 0
    for i in range(n):
        for j in range(i + 1, n):
            a = _sign(s[i] - s[j])
            b = _sign(y[i] - y[j])
            n1 += a == 0
            n2 += b == 0
            conc += a * b > 0
            disc += a * b < 0
    den = (n0 - n1) * (n0 - n2)
    tau = (conc - disc) / math.sqrt(den) if den > 0 else 0.0
    return ndcg, accuracy, tau


def line_metrics(objective, options, scores, labels):
    o = resolve_options(objective, options)
    return metrics(scores, labels, k=o.get("k"), gain=o.get("gain", "pow2"),
                   discount=o.get("discount", "log2"))


# ---------------------------------------------------------------------------
# Golden line assembly
# ---------------------------------------------------------------------------

def _num(x):
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        raise ValueError("non-finite number in golden output")
    return 0.0 if x == 0.0 else x  # no -0.0 in the file


def make_line(objective, options, scores, labels):
    loss, grad, iters = compute(objective, options, scores, labels)
    ndcg, acc, tau = line_metrics(objective, options, scores, labels)
    rec = {
        "objective": objective,
        "options": options,
        "scores": [_num(x) for x in scores],
        "labels": [None if l is None else _num(l) for l in labels],
        "loss": _num(loss),
        "grad": [_num(g) for g in grad],
        "ndcg": _num(ndcg),
        "accuracy": _num(acc),
        "kendall_tau": _num(tau),
    }
    if objective == "neural_ndcg":
        rec["sinkhorn_iters"] = int(iters)
    return rec


def dump_line(rec):
    return json.dumps(rec, allow_nan=False, separators=(", ", ": "))


# ---------------------------------------------------------------------------
# Case families
# ---------------------------------------------------------------------------

GARBAGE = [1e30, -7.5e20, 3.25e25, -1e30, 6.02e23, -4.4e18]
BIG = [1000.0, -1000.0, 999.5, -999.5, 998.25, -997.75, 1001.0, -1002.5, 1000.125,
       -1000.375, 997.0, -996.5, 1003.5, -1001.25, 995.75, -995.0]


def lab_u(rng, n):
    return [round(float(x), 4) for x in rng.uniform(0.0, 1.0, n)]


def lab_int(rng, n, lo=0, hi=5):
    return [float(x) for x in rng.randint(lo, hi + 1, n)]


def sc_norm(rng, n, std):
    return [float(x) for x in rng.normal(0.0, std, n)]


def _insert_padding(rng, scores, labels, where):
    s, l = list(scores), list(labels)
    n_pad = int(rng.randint(1, 4))
    for t in range(n_pad):
        g = GARBAGE[int(rng.randint(len(GARBAGE)))]
        if where == "front":
            pos = 0
        elif where == "end":
            pos = len(s)
        elif where == "middle":
            pos = int(rng.randint(1, len(s)))
        else:
            pos = int(rng.randint(0, len(s) + 1))
        s.insert(pos, g)
        l.insert(pos, None)
    return s, l


def fam(name, rng, n, gain_based):
    """One list of family `name` with n valid items (before padding)."""
    if name == "u_s1":
        return sc_norm(rng, n, 1.0), lab_u(rng, n)
    if name == "u_s3":
        return sc_norm(rng, n, 3.0), lab_u(rng, n)
    if name == "int_s1":
        return sc_norm(rng, n, 1.0), lab_int(rng, n)
    if name == "int_s3":
        return sc_norm(rng, n, 3.0), lab_int(rng, n)
    if name == "small_s":  # s ~ N(0, 0.1^2): Sinkhorn converges early
        return sc_norm(rng, n, 0.1), lab_u(rng, n)
    if name == "zeros":
        return [0.0] * n, (lab_u(rng, n) if rng.rand() < 0.5 else lab_int(rng, n))
    if name == "c037":
        return [0.37] * n, (lab_u(rng, n) if rng.rand() < 0.5 else lab_int(rng, n))
    if name == "ties":
        return sc_norm(rng, n, 1.0), lab_int(rng, n, 0, 2)
    if name == "all_equal":
        v = [0.7, 3.0, 0.25][int(rng.randint(3))]
        return sc_norm(rng, n, 1.0), [v] * n
    if name == "all_zero":
        return sc_norm(rng, n, 1.0), [0.0] * n
    if name in ("pad_front", "pad_middle", "pad_end", "pad_any"):
        base = sc_norm(rng, n, 1.0), (lab_u(rng, n) if rng.rand() < 0.5 else lab_int(rng, n))
        return _insert_padding(rng, base[0], base[1], name[4:])
    if name == "sorted_input":  # labels already in descending order
        s = sc_norm(rng, n, 1.0)
        return s, sorted(lab_u(rng, n), reverse=True)
    if name == "ascending_input":  # labels ascending: label sort reverses
        s = sc_norm(rng, n, 1.0)
        return s, sorted(lab_int(rng, n), reverse=False)
    if name == "big":
        perm = rng.permutation(len(BIG))[:n]
        return [BIG[int(i)] for i in perm], lab_u(rng, n)
    if name == "big_norm":
        return [float(x) for x in rng.normal(0.0, 1000.0, n)], lab_int(rng, n)
    if name == "score_ties":  # exact score ties between items with different labels
        pool = [round(float(x), 1) for x in rng.normal(0.0, 1.0, max(1, n // 2))]
        s = [pool[int(rng.randint(len(pool)))] for _ in range(n)]
        if n >= 2:
            s[1] = s[0]
        y = lab_u(rng, n)
        return s, y
    if name == "dyadic":  # scores on a 0.5 grid: hinge margins hit 1 - d = 0 exactly
        s = [0.5 * int(x) for x in rng.randint(-4, 5, n)]
        if n >= 2:
            s[0], s[1] = 1.5, 0.5
        return s, lab_u(rng, n)
    if name == "neg_u":
        return sc_norm(rng, n, 1.0), [round(float(x), 4) for x in rng.normal(0.0, 2.0, n)]
    if name == "neg_int":
        return sc_norm(rng, n, 3.0), lab_int(rng, n, -3, 3)
    if name == "single_valid":  # one valid item among padding: loss 0, grad 0
        s = [float(rng.normal())]
        y = [round(float(rng.uniform()), 4)]
        return _insert_padding(rng, s, y, "any")
    raise ValueError(name)


CORE_FAMILIES = ["u_s1", "int_s3", "u_s3", "int_s1", "small_s", "zeros", "c037", "ties",
                 "all_equal", "all_zero", "pad_front", "pad_middle", "pad_end", "pad_any",
                 "sorted_input", "ascending_input", "big", "big_norm", "score_ties", "dyadic",
                 "neg_u", "neg_int"]
# families used for every option variant
VARIANT_FAMILIES = ["u_s1", "int_s3", "u_s3", "zeros", "c037", "ties", "all_equal", "all_zero",
                    "pad_middle", "big", "score_ties", "neg_int"]


VARIANTS = {
    "neural_ndcg": [
        {"tau": 0.01}, {"tau": 0.1}, {"tau": 10.0},
        {"sinkhorn": False}, {"sinkhorn": False, "tau": 0.1},
        {"k": 1}, {"k": 3}, {"k": 4}, {"k": 20},
        {"gain": "linear"}, {"gain": "pow2", "discount": "log2", "tau": 1.0},
        {"discount": "inv"}, {"discount": "inv_sqrt"}, {"discount": "inv_sq"},
        {"sinkhorn_iters": 5}, {"sinkhorn_tol": 0.0}, {"sinkhorn_iters": 5, "sinkhorn_tol": 0.0},
        {"tau": 0.1, "k": 4, "gain": "linear", "discount": "inv_sq"},
        {"tau": 10.0, "k": 2, "sinkhorn": False, "discount": "inv_sqrt"},
    ],
    "approx_ndcg": [{"alpha": 1.0}, {"alpha": 25.0}, {"alpha": 100.0}],
    "lambda": [{"sigma": 0.5}, {"sigma": 2.0}, {"k": 1}, {"k": 2}, {"k": 4}, {"k": 20},
               {"sigma": 2.0, "k": 3}],
    "ranknet": [],
    "hinge": [{"ties": "include"}, {"ties": "exclude"}],
    "listmle": [{"normalize": True}, {"normalize": False}],
    "listnet": [],
    "ipo": [{"beta": 0.5}, {"pairs": "best_with_worst"}, {"pairs": "best_with_others"},
            {"pairs": "others_vs_worst"}, {"ties": "include"},
            {"beta": 0.5, "pairs": "others_vs_worst", "ties": "include"}],
    "simpo": [{"gamma": 0.0}, {"gamma": 0.5}, {"pairs": "best_with_worst"},
              {"pairs": "best_with_others"}, {"pairs": "others_vs_worst"}, {"ties": "include"},
              {"label_smoothing": 0.1}, {"gamma": 0.5, "label_smoothing": 0.1, "ties": "include",
                                         "pairs": "best_with_others"}],
}
for _name in DPO_PAIRS:
    VARIANTS[_name] = [{"ties": "include"}, {"label_smoothing": 0.1},
                       {"ties": "include", "label_smoothing": 0.1}]


def paper_cases():
    """Worked examples of objectives.md section 6 as golden lines."""
    out = []
    for tau in (0.01, 0.1, 1.0, 10.0):
        out.append(("neural_ndcg", {"tau": tau}, [9.0, 1.0, 5.0, 2.0], [5.0, 4.0, 3.0, 2.0]))
    psi = [1.0, 0.8, 0.6, 0.4, 0.2]
    for x in (0.0, 0.5, 0.7, 0.9, 2.0):
        s = [x, 0.8, 0.6, 0.4, 0.2]
        for tau in (0.01, 0.1, 1.0):
            out.append(("neural_ndcg", {"tau": tau}, s, psi))
        for alpha in (1.0, 25.0):
            out.append(("approx_ndcg", {"alpha": alpha}, s, psi))
    out.append(("dpo_all_pairs", {}, [0.7, 0.5, 0.6], [3.0, 2.0, 1.0]))
    # pitfall 13: a pair with delta s = -30
    out.append(("lambda", {}, [-15.0, 15.0], [1.0, 0.0]))
    out.append(("ranknet", {}, [-15.0, 15.0], [1.0, 0.0]))
    out.append(("dpo_single_pair", {}, [-15.0, 15.0], [1.0, 0.0]))
    return out


def generate_cases():
    cases = []
    for oi, objective in enumerate(OBJECTIVES):
        gain_based = objective in GAIN_BASED
        rng = np.random.RandomState(1000 + oi)
        fams = [f for f in CORE_FAMILIES if not (gain_based and f.startswith("neg"))]
        # core: default options; every n = 2..16 for the two main random families
        for f in ("u_s1", "int_s3"):
            for n in range(2, 17):
                s, y = fam(f, rng, n, gain_based)
                cases.append((objective, {}, s, y))
        for f in fams:
            reps = 3 if f not in ("u_s1", "int_s3") else 1
            for _ in range(reps):
                n = int(rng.randint(2, 17))
                s, y = fam(f, rng, n, gain_based)
                cases.append((objective, {}, s, y))
        s, y = fam("single_valid", rng, 1, gain_based)
        cases.append((objective, {}, s, y))
        # option variants
        vfams = [f for f in VARIANT_FAMILIES if not (gain_based and f.startswith("neg"))]
        for vi, opts in enumerate(VARIANTS[objective]):
            vrng = np.random.RandomState(50000 + 100 * oi + vi)
            for f in vfams:
                n = int(vrng.randint(2, 17))
                s, y = fam(f, vrng, n, gain_based)
                cases.append((objective, dict(opts), s, y))
            # extra plain random lists with a small and a large n
            for n in (2, 5, 8, 16):
                s, y = fam("u_s1" if n % 2 == 0 else "int_s1", vrng, n, gain_based)
                cases.append((objective, dict(opts), s, y))
        if objective in ("ranknet", "listnet"):
            xrng = np.random.RandomState(70000 + oi)
            for f in ("u_s1", "int_s1", "ties", "neg_u", "big", "pad_any"):
                for _ in range(4):
                    n = int(xrng.randint(2, 17))
                    s, y = fam(f, xrng, n, gain_based)
                    cases.append((objective, {}, s, y))
    cases.extend(paper_cases())
    return cases


# ---------------------------------------------------------------------------
# Self-test: spec section 6 worked examples and section 4 closed forms
# ---------------------------------------------------------------------------

class Checker:
    def __init__(self):
        self.n = 0
        self.failures = []

    def close(self, what, got, want, atol=0.0, rtol=0.0):
        self.n += 1
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        want = list(want) if isinstance(want, (list, tuple)) else [want]
        if len(got) != len(want):
            self.failures.append("%s: length %d != %d" % (what, len(got), len(want)))
            return
        for a, b in zip(got, want):
            if not (abs(a - b) <= atol + rtol * abs(b)):
                self.failures.append("%s: got %r want %r" % (what, got, want))
                return

    def true(self, what, cond):
        self.n += 1
        if not cond:
            self.failures.append(what)


def selftest(verbose=True):
    c = Checker()
    s_ex = [9.0, 1.0, 5.0, 2.0]
    st = torch.tensor(s_ex, dtype=DT)

    # 6.1 NeuralSort P_hat, tau = 1
    p_hat_want = [
        [9.8201160e-01, 1.4956017e-08, 1.7986170e-02, 2.2196697e-06],
        [1.7108123e-02, 2.3153326e-03, 9.3407185e-01, 4.6504699e-02],
        [2.1577871e-07, 2.5949640e-01, 3.5119019e-02, 7.0538436e-01],
        [6.8407435e-14, 7.3103432e-01, 3.3188907e-05, 2.6893250e-01],
    ]
    with torch.no_grad():
        ph = neuralsort(st, 1.0)
    for r in range(4):
        c.close("6.1 P_hat row %d" % r, ph[r].tolist(), p_hat_want[r], rtol=6e-8)
        c.close("6.1 P_hat row sum %d" % r, ph[r].sum().item(), 1.0, atol=1e-15)
    c.close("6.1 A_s row sums", torch.abs(st[:, None] - st[None, :]).sum(1).tolist(), [19, 13, 11, 11])
    c.close("6.1 column sums", ph.sum(0).tolist(), [0.99911993, 0.99284607, 0.98721022, 1.0208238],
            atol=5.1e-8)  # printed to 8 significant digits

    # 6.1 / 6.2 P.s raw and after Sinkhorn, with iteration counts
    table = {
        0.01: ([9, 5, 2, 1], [9, 5, 2, 1], 1),
        0.1: ([9, 4.99999999999972, 1.9999546021315786, 1.0000453978687025],
              [9, 4.99999999999972, 1.9999546021315786, 1.0000453978687025], 1),
        1.0: ([8.928039663585475, 4.919657063460773, 1.845862164246586, 1.2690652511251421],
              [8.928159358514442, 4.942002442231612, 1.8603760800792042, 1.2643282405888805], 50),
        10.0: ([6.1959339696982285, 4.41336134755881, 3.0037446386503803, 2.1946811786714284],
               [6.686250002963648, 4.845151544248493, 3.2128905266705265, 2.2557025447661117], 10),
    }
    for tau, (raw_want, sk_want, it_want) in table.items():
        with torch.no_grad():
            ph = neuralsort(st, tau)
            p, it = sinkhorn(ph, 50, 1e-6)
        c.close("6.2 raw P.s tau=%g" % tau, (ph @ st).tolist(), raw_want, atol=1e-12, rtol=1e-13)
        c.close("6.2 sinkhorn P.s tau=%g" % tau, (p @ st).tolist(), sk_want, atol=1e-12, rtol=1e-13)
        c.true("6.2 sinkhorn iterations tau=%g: %d != %d" % (tau, it, it_want), it == it_want)

    # 6.3 NDCG example
    psi_ex = [5.0, 4.0, 3.0, 2.0]
    g = gain_values(psi_ex, "pow2")
    d = discount_values(4, "log2")
    c.close("6.3 gains", g, [31, 15, 7, 3])
    dcg = 31 / math.log2(2) + 15 / math.log2(5) + 7 / math.log2(3) + 3 / math.log2(4)
    c.close("6.3 DCG@4", dcg, 43.3766566461011, atol=1e-12)
    c.close("6.3 IDCG@4", ideal_dcg(g, d, 4), 45.25597597779204, atol=1e-12)
    ndcg, acc, ktau = metrics(s_ex, psi_ex)
    c.close("6.3 metric NDCG@4", ndcg, 0.9584735652897385, atol=1e-14)
    for tau, want in ((0.01, -0.9584735653), (0.1, -0.9584743998), (1.0, -0.9591870748),
                      (10.0, -0.8744096942)):
        loss, _, _ = compute("neural_ndcg", {"tau": tau}, s_ex, psi_ex)
        c.close("6.3 NeuralNDCG loss tau=%g" % tau, loss, want, atol=5.1e-11)

    # 6.4 DPO all-pairs example
    loss, grad, _ = compute("dpo_all_pairs", {}, [0.7, 0.5, 0.6], [3.0, 2.0, 1.0])
    c.close("6.4 DPO all pairs loss", loss, 0.6623107298429112, atol=1e-15)
    c.close("6.4 DPO all pairs grad", grad, [-0.3083956050695, -0.0249377282638, 0.3333333333333],
            atol=1e-13)
    c.true("6.4 below ln 2", loss < math.log(2.0))

    # 6.5 the 1-D slice
    slice_tab = {
        0.0: (0.873246, [(0.873246, -4.0e-9), (0.868452, -0.019769), (0.840736, -0.048537)],
              [(0.714214, -0.011388), (0.871507, -0.002437)]),
        0.5: (0.917233, [(0.917234, -0.000261), (0.914187, -0.146904), (0.881996, -0.109845)],
              [(0.722905, -0.024165), (0.912159, -0.061879)]),
        0.7: (0.950248, [(0.950249, -0.000376), (0.952543, -0.194581), (0.903321, -0.100931)],
              [(0.728357, -0.030429), (0.930810, 0.112242)]),
        0.9: (1.0, [(0.999998, -0.000226), (0.984326, -0.098410), (0.921340, -0.078185)],
              [(0.735102, -0.037062), (0.978589, -0.436496)]),
        2.0: (1.0, [(1.0, -4e-24), (0.997062, -4.9e-6), (0.960628, -0.014506)],
              [(0.794004, -0.065681), (0.999522, -7e-13)]),
    }
    psi5 = [1.0, 0.8, 0.6, 0.4, 0.2]
    for x, (ndcg_want, neural, approx) in slice_tab.items():
        s5 = [x, 0.8, 0.6, 0.4, 0.2]
        c.close("6.5 NDCG x=%g" % x, metrics(s5, psi5)[0], ndcg_want, atol=6e-7)
        for tau, (v, gx) in zip((0.01, 0.1, 1.0), neural):
            loss, grad, _ = compute("neural_ndcg", {"tau": tau}, s5, psi5)
            c.close("6.5 neural x=%g tau=%g value" % (x, tau), -loss, v, atol=6e-7)
            c.close("6.5 neural x=%g tau=%g grad" % (x, tau), grad[0], gx, atol=6e-7)
        for alpha, (v, gx) in zip((1.0, 25.0), approx):
            loss, grad, _ = compute("approx_ndcg", {"alpha": alpha}, s5, psi5)
            c.close("6.5 approx x=%g alpha=%g value" % (x, alpha), -loss, v, atol=6e-7)
            c.close("6.5 approx x=%g alpha=%g grad" % (x, alpha), grad[0], gx, atol=6e-7)

    # section 4: step-0 closed forms (s = 0 and s = 0.37: shift invariance)
    ln2 = math.log(2.0)
    rng = np.random.RandomState(7)
    for n in (2, 3, 5, 8, 16):
        for const in (0.0, 0.37):
            s0 = [const] * n
            y = lab_u(rng, n)
            while len(set(y)) < n:
                y = lab_u(rng, n)
            yi = lab_int(rng, n)  # with ties
            for name in DPO_PAIRS:
                for eps in (0.0, 0.1):
                    c.close("4 %s n=%d s=%g eps=%g" % (name, n, const, eps),
                            compute(name, {"label_smoothing": eps}, s0, y)[0], ln2, atol=1e-15)
                    c.close("4 %s include n=%d" % (name, n),
                            compute(name, {"label_smoothing": eps, "ties": "include"}, s0, yi)[0],
                            ln2, atol=1e-15)
            c.close("4 ranknet n=%d" % n, compute("ranknet", {}, s0, y)[0], ln2, atol=1e-15)
            c.close("4 hinge n=%d" % n, compute("hinge", {}, s0, y)[0], 1.0, atol=1e-15)
            c.close("4 hinge include n=%d" % n, compute("hinge", {"ties": "include"}, s0, yi)[0], 1.0,
                    atol=1e-15)
            lnfact = math.lgamma(n + 1)
            c.close("4 listmle n=%d" % n, compute("listmle", {}, s0, yi)[0], lnfact, atol=1e-12)
            c.close("4 listmle normalize n=%d" % n, compute("listmle", {"normalize": True}, s0, yi)[0],
                    lnfact / n, atol=1e-13)
            c.close("4 listnet n=%d" % n, compute("listnet", {}, s0, yi)[0],
                    -math.log(1.0 / n + 1e-10), atol=1e-14)
            for beta in (0.1, 0.5):
                for ptype in ("all_pairs", "best_with_worst", "best_with_others", "others_vs_worst"):
                    c.close("4 ipo beta=%g %s n=%d" % (beta, ptype, n),
                            compute("ipo", {"beta": beta, "pairs": ptype}, s0, y)[0],
                            1.0 / (4 * beta * beta), rtol=1e-14)
            # neural_ndcg: -mean(G) sum_{r<=k} D(r) / (IDCG@k + eps)
            for gain, disc, k in (("pow2", "log2", None), ("linear", "inv", 2), ("pow2", "inv_sq", 3)):
                for yy in (y, yi):
                    G = gain_values(yy, gain)
                    D = discount_values(n, disc)
                    kk = cap_k(k, n)
                    idcg = ideal_dcg(G, D, kk)
                    want = 0.0 if idcg == 0 else -(sum(G) / n) * sum(D[:kk]) / (idcg + EPS)
                    opts = {"gain": gain, "discount": disc}
                    if k is not None:
                        opts["k"] = k
                    loss, grad, it = compute("neural_ndcg", opts, s0, yy)
                    c.close("4 neural_ndcg %s n=%d" % (opts, n), loss, want, atol=1e-14)
                    c.true("4 neural_ndcg stops after 1 iteration at step 0 (%d)" % it,
                           it == (0 if idcg == 0 else 1))
                    # the metric at s = const equals -loss (tie-averaged), up to the eps
                    m = metrics(s0, yy, k=k, gain=gain, discount=disc)[0]
                    c.close("2.4 tie-averaged metric = neural value n=%d" % n, m,
                            1.0 if idcg == 0 else -loss, atol=1e-9)
            # approx_ndcg: -sum G / (log2((n + 3) / 2) maxDCG)
            for yy in (y, yi):
                G = gain_values(yy, "pow2")
                maxdcg = max(ideal_dcg(G, discount_values(n, "log2"), n), EPS)
                want = -sum(G) / (math.log2((n + 3) / 2.0) * maxdcg)
                c.close("4 approx_ndcg n=%d" % n, compute("approx_ndcg", {}, s0, yy)[0], want,
                        atol=1e-14)
            # lambda: ln 2 * mean of w over P, pi = label order
            for yy in (y, yi):
                order = label_order(yy)
                ps = [yy[i] for i in order]
                G = gain_values(ps, "pow2")
                D = discount_values(n, "log2")
                md = max(ideal_dcg(G, D, n), EPS)
                ws = [abs(D[p] - D[q]) * abs(G[p] - G[q]) / md
                      for p in range(n) for q in range(n) if ps[p] > ps[q]]
                want = ln2 * sum(ws) / len(ws) if ws else 0.0
                c.close("4 lambda n=%d" % n, compute("lambda", {}, s0, yy)[0], want, atol=1e-14)
    c.close("3.8 ln 8!", math.lgamma(9), 10.6046029027, atol=1e-10)

    # pitfall 13: lambda pair with delta s = -30: loss ~ 30 w, gradient ~ -w (finite, nonzero)
    loss, grad, _ = compute("lambda", {}, [-15.0, 15.0], [1.0, 0.0])
    w = (1.0 - 1.0 / math.log2(3.0)) * 1.0  # |D1 - D2| * |G1 - G2| / maxDCG, G = (1, 0), maxDCG = 1
    c.close("pitfall 13 lambda loss", loss, w * (30.0 + math.log1p(math.exp(-30.0))), rtol=1e-14)
    c.close("pitfall 13 lambda grad", grad, [-w / (1 + math.exp(-30.0)), w / (1 + math.exp(-30.0))],
            rtol=1e-14)
    # pitfall 14: ListMLE at |s| ~ 1e3 against an exact suffix log-sum-exp
    sb = [1000.0, -1000.0, 999.5, -999.5]
    want = 0.0
    for k in range(4):
        tail = sb[k:]
        m = max(tail)
        want -= sb[k] - (m + math.log(math.fsum(math.exp(v - m) for v in tail)))
    loss, grad, _ = compute("listmle", {}, sb, [4.0, 3.0, 2.0, 1.0])
    c.close("pitfall 14 listmle 1e3", loss, want, rtol=1e-14)
    c.true("pitfall 14 listmle grad finite", all(math.isfinite(v) for v in grad))
    # masking: padded list == compacted list, masked grad exactly 0
    for name in OBJECTIVES:
        sv = [0.3, -1.2, 0.8, 0.1]
        yv = [0.5, 0.9, 0.1, 0.7]
        l0, g0, _ = compute(name, {}, sv, yv)
        l1, g1, _ = compute(name, {}, [1e30] + sv[:2] + [-7.5e20] + sv[2:] + [3e25],
                            [None] + yv[:2] + [None] + yv[2:] + [None])
        c.close("2.3 padding loss %s" % name, l1, l0, atol=0.0)
        c.close("2.3 padding grad %s" % name, [g1[1], g1[2], g1[4], g1[5]], g0, atol=0.0)
        c.true("2.3 masked grad 0 %s" % name, g1[0] == 0.0 and g1[3] == 0.0 and g1[6] == 0.0)
    # Kendall tau-b on a hand case: s = (1, 2, 2, 3), y = (1, 1, 2, 3)
    # pairs: (0,1) a=-1,b=0; (0,2) -1,-1 C; (0,3) -1,-1 C; (1,2) 0,-1; (1,3) -1,-1 C; (2,3) -1,-1 C
    c.close("kendall tau-b", metrics([1, 2, 2, 3], [1, 1, 2, 3])[2], 4 / math.sqrt(5 * 5), atol=1e-15)
    c.close("accuracy score tie wrong", metrics([1, 1, 0], [2, 1, 0])[1], 2 / 3, atol=1e-15)
    c.true("ndcg null for negative labels", metrics([1, 2], [-1, 0])[0] is None)

    if verbose:
        print("selftest: %d checks, %d failures" % (c.n, len(c.failures)))
    for f in c.failures:
        print("  FAIL " + f)
    return not c.failures


# ---------------------------------------------------------------------------
# Second opinion for --check: the spec's hand-written gradient formulas
# (3.1.4, 3.2, 3.3, 3.4, 3.5, 3.7-3.10) in plain numpy.  They cover the points
# where finite differences cannot (tied scores, |0|, relu'(0), clamps).
# ---------------------------------------------------------------------------

def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def analytic(objective, options, scores, labels):
    """(loss, grad in input order) from the spec's formulas."""
    o = resolve_options(objective, options)
    order = label_order(labels)
    n = len(order)
    grad_full = [0.0] * len(scores)
    if n < 2:
        return 0.0, grad_full
    s = np.array([float(scores[i]) for i in order])
    psi = [float(labels[i]) for i in order]
    g = np.zeros(n)
    loss = 0.0
    if objective == "neural_ndcg":
        k = cap_k(o["k"], n)
        G = np.array(gain_values(psi, o["gain"]))
        D = np.array(discount_values(n, o["discount"]))
        idcg = ideal_dcg(list(G), list(D), k)
        if idcg != 0.0:
            tau = float(o["tau"])
            c = np.array([n + 1 - 2 * r for r in range(1, n + 1)], dtype=float)
            sg = np.sign(s[:, None] - s[None, :])  # sgn(0) = 0
            B = np.abs(s[:, None] - s[None, :]).sum(1)
            Z = (c[:, None] * s[None, :] - B[None, :]) / tau
            Z = Z - Z.max(1, keepdims=True)
            Ph = np.exp(Z)
            Ph /= Ph.sum(1, keepdims=True)
            P = Ph
            tape = []
            if o["sinkhorn"]:
                for _ in range(int(o["sinkhorn_iters"])):
                    kap = P.sum(0)
                    kc = kap < EPS
                    U = P / np.maximum(kap, EPS)[None, :]
                    rho = U.sum(1)
                    rc = rho < EPS
                    P = U / np.maximum(rho, EPS)[:, None]
                    tape.append((np.maximum(kap, EPS), kc, U, np.maximum(rho, EPS), rc, P))
                    tol = float(o["sinkhorn_tol"])
                    if np.abs(P.sum(1) - 1).max() < tol and np.abs(P.sum(0) - 1).max() < tol:
                        break
            Dk = np.where(np.arange(n) < k, D, 0.0)
            loss = -float(Dk @ (P @ G)) / (idcg + EPS)
            dP = -np.outer(Dk, G) / (idcg + EPS)
            for kap, kc, U, rho, rc, Pt in reversed(tape):
                dU = (dP - np.where(rc, 0.0, (dP * Pt).sum(1))[:, None]) / rho[:, None]
                dP = (dU - np.where(kc, 0.0, (dU * U).sum(0))[None, :]) / kap[None, :]
            dZ = Ph * (dP - (Ph * dP).sum(1, keepdims=True))
            gam = dZ.sum(0)
            g = ((c[:, None] * dZ).sum(0) - (sg * (gam[:, None] + gam[None, :])).sum(1)) / tau
    elif objective == "approx_ndcg":
        alpha = float(o["alpha"])
        G = np.array(gain_values(psi, "pow2"))
        maxdcg = max(ideal_dcg(list(G), discount_values(n, "log2"), n), EPS)
        sig = _sigmoid(alpha * (s[None, :] - s[:, None]))
        np.fill_diagonal(sig, 0.0)
        th = 1.0 + sig.sum(1)
        loss = -float((G / np.log2(1.0 + th)).sum() / maxdcg)
        lam = G / (maxdcg * (1.0 + th) * math.log(2.0) * np.log2(1.0 + th) ** 2)
        sp = alpha * sig * (1.0 - sig)
        g = (sp * (lam[:, None] - lam[None, :])).sum(0)
    elif objective == "lambda":
        k = cap_k(o["k"], n)
        sigma = float(o["sigma"])
        G = gain_values(psi, "pow2")
        D = discount_values(n, "log2")
        md = max(ideal_dcg(G, D, k), EPS)
        pi = stable_score_order(list(s))
        pairs = [(p, q) for p in range(k) for q in range(k) if psi[pi[p]] > psi[pi[q]]]
        for p, q in pairs:
            w = abs(D[p] - D[q]) * abs(G[pi[p]] - G[pi[q]]) / md
            d = s[pi[p]] - s[pi[q]]
            loss += w * (np.logaddexp(0.0, -sigma * d)) / len(pairs)
            dd = -w * sigma * (1.0 - _sigmoid(sigma * d)) / len(pairs)
            g[pi[p]] += dd
            g[pi[q]] -= dd
    elif objective == "ranknet":
        pairs = [(i, j) for i in range(n) for j in range(n) if psi[i] > psi[j]]
        for i, j in pairs:
            d = s[i] - s[j]
            loss += np.logaddexp(0.0, -d) / len(pairs)
            g[i] += (_sigmoid(d) - 1.0) / len(pairs)
            g[j] -= (_sigmoid(d) - 1.0) / len(pairs)
    elif objective in DPO_PAIRS or objective in ("hinge", "ipo", "simpo"):
        ptype = DPO_PAIRS.get(objective, o.get("pairs", "all_pairs"))
        pairs, norm = pair_set(n, ptype)
        gam = float(o.get("gamma", 0.0)) if objective == "simpo" else 0.0
        eps = float(o.get("label_smoothing", 0.0))
        for i, j in pairs:
            if o["ties"] == "exclude" and psi[i] == psi[j]:
                continue
            d = s[i] - s[j]
            if objective == "hinge":
                t, dt = max(0.0, 1.0 - d), (-1.0 if 1.0 - d > 0 else 0.0)
            elif objective == "ipo":
                beta = float(o["beta"])
                h = d / beta
                t, dt = (h - 1.0 / (2 * beta)) ** 2, (2.0 / beta) * (h - 1.0 / (2 * beta))
            else:
                t = (1 - eps) * np.logaddexp(0.0, -(d - gam)) + eps * np.logaddexp(0.0, -(gam - d))
                dt = _sigmoid(d - gam) - (1.0 - eps)
            loss += t / norm
            g[i] += dt / norm
            g[j] -= dt / norm
    elif objective == "listmle":
        for k in range(n):
            tail = s[k:]
            m = tail.max()
            lse = m + math.log(np.exp(tail - m).sum())
            loss -= s[k] - lse
            g[k:] += np.exp(tail - lse)
        g -= 1.0
        if o["normalize"]:
            loss /= n
            g /= n
    elif objective == "listnet":
        q = np.exp(np.array(psi) - max(psi))
        q /= q.sum()
        p = np.exp(s - s.max())
        p /= p.sum()
        loss = -float((q * np.log(p + EPS)).sum())
        g = p * (q * p / (p + EPS)).sum() - q * p / (p + EPS)
    else:
        raise ValueError(objective)
    for pos, i in enumerate(order):
        grad_full[i] = float(g[pos])
    return float(loss), grad_full


# ---------------------------------------------------------------------------
# --check: re-read the golden file, recompute, and finite differences
# ---------------------------------------------------------------------------

def fd_eligible(rec):
    """Lists where central differences are meaningful: no score ties or near
    ties (|x| and sort kinks), no hinge margin near 0, no |s| garbage."""
    idx = [i for i, l in enumerate(rec["labels"]) if l is not None]
    if len(idx) < 2:
        return False
    s = [rec["scores"][i] for i in idx]
    for a, b in itertools.combinations(s, 2):
        if abs(a - b) < 1e-4:
            return False
        if rec["objective"] == "hinge" and abs(abs(a - b) - 1.0) < 1e-4:
            return False
    return True


def fd_grad(rec, h):
    """Central differences of the loss; None at a Sinkhorn stopping boundary."""
    obj, opts, scores, labels = rec["objective"], rec["options"], rec["scores"], rec["labels"]
    out = []
    for m, lab in enumerate(labels):
        if lab is None:
            out.append(0.0)
            continue
        sp = list(scores)
        sm = list(scores)
        sp[m] += h
        sm[m] -= h
        lp, _, ip = compute(obj, opts, sp, labels, want_grad=False)
        lm, _, im = compute(obj, opts, sm, labels, want_grad=False)
        if obj == "neural_ndcg" and not (ip == im == rec["sinkhorn_iters"]):
            return None
        out.append((lp - lm) / (2.0 * h))
    return out


def check_file(path, fd_every=1):
    ok = True
    counts = {}
    n_lines = 0
    n_fd = n_fd_skip = 0
    worst = (0.0, None)
    worst_an = (0.0, None)
    problems = []
    with open(path) as fh:
        raw = fh.read()
    for ln, line in enumerate(raw.splitlines(), 1):
        rec = json.loads(line)
        n_lines += 1
        obj = rec["objective"]
        counts[obj] = counts.get(obj, 0) + 1
        # shape and conventions
        n = len(rec["scores"])
        if len(rec["labels"]) != n or len(rec["grad"]) != n:
            problems.append("line %d: length mismatch" % ln)
        for i, l in enumerate(rec["labels"]):
            if l is None and rec["grad"][i] != 0.0:
                problems.append("line %d: masked item %d has gradient" % (ln, i))
        if (obj == "neural_ndcg") != ("sinkhorn_iters" in rec):
            problems.append("line %d: sinkhorn_iters presence" % ln)
        # recompute: the file must be exactly what this oracle produces
        again = make_line(obj, rec["options"], rec["scores"], rec["labels"])
        if dump_line(again) != line:
            problems.append("line %d: recomputation differs" % ln)
        # the spec's hand-derived formulas (numpy) against autograd, every line
        aloss, agrad = analytic(obj, rec["options"], rec["scores"], rec["labels"])
        gscale = 1.0 + max(abs(v) for v in rec["grad"])
        err = max([abs(aloss - rec["loss"]) / (1.0 + abs(rec["loss"]))]
                  + [abs(a - b) / gscale for a, b in zip(agrad, rec["grad"])])
        if err > worst_an[0]:
            worst_an = (err, ln)
        if err > 1e-9:
            problems.append("line %d (%s %s): spec formula differs from autograd, scaled error %.3g"
                            % (ln, obj, rec["options"], err))
        # finite differences
        if fd_eligible(rec) and (ln % fd_every == 0):
            g = rec["grad"]
            best = None
            for h in (1e-6, 1e-5, 1e-7, 1e-4):
                fd = fd_grad(rec, h)
                if fd is None:
                    break
                err = max(abs(a - b) / (1e-6 + 1e-5 * abs(b)) for a, b in zip(fd, g))
                best = err if best is None else min(best, err)
                if best <= 1.0:
                    break
            if best is None:
                n_fd_skip += 1
                continue
            n_fd += 1
            if best > worst[0]:
                worst = (best, ln)
            if best > 1.0:
                problems.append("line %d (%s %s): FD mismatch, scaled error %.3g"
                                % (ln, obj, rec["options"], best))
    for p in problems[:40]:
        print("  FAIL " + p)
    if problems:
        ok = False
    print("check: %d lines; %s" % (n_lines, ", ".join("%s %d" % (k, counts[k]) for k in OBJECTIVES
                                                        if k in counts)))
    print("check: recomputed every line byte-identically: %s" %
          ("yes" if not any("recomputation" in p for p in problems) else "NO"))
    print("check: spec hand-derived gradients (numpy) vs autograd on all %d lines: worst scaled error %.3g "
          "(line %s; pass <= 1e-9; loss error / (1 + |loss|), grad error / (1 + max |grad|))" % (n_lines, worst_an[0], worst_an[1]))
    print("check: finite differences on %d lines (%d skipped at a Sinkhorn stopping boundary); "
          "worst scaled error %.3g (line %s; pass <= 1, error / (1e-6 + 1e-5 |grad|))"
          % (n_fd, n_fd_skip, worst[0], worst[1]))
    print("check: %s (%d problems)" % ("PASS" if ok else "FAIL", len(problems)))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the golden JSONL file here")
    ap.add_argument("--check", metavar="GOLDEN", help="verify a golden file (recompute + finite differences)")
    ap.add_argument("--fd-every", type=int, default=1, help="finite-difference every N-th eligible line")
    args = ap.parse_args()
    if not args.out and not args.check:
        ap.error("give --out or --check")
    if not selftest():
        print("selftest FAILED")
        return 1
    if args.out:
        counts = {}
        lines = []
        for objective, opts, s, y in generate_cases():
            lines.append(dump_line(make_line(objective, opts, s, y)))
            counts[objective] = counts.get(objective, 0) + 1
        data = "\n".join(lines) + "\n"
        with open(args.out, "w") as fh:
            fh.write(data)
        print("wrote %d lines (%d bytes) to %s: %s" % (
            len(lines), len(data), args.out,
            ", ".join("%s %d" % (k, counts.get(k, 0)) for k in OBJECTIVES)))
    if args.check:
        if not check_file(args.check, args.fd_every):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
