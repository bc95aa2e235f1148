#!/usr/bin/python3
"""Reference for ppa's sampling filter (src/model/sample.c sample_weights):
the distribution a draw takes after temperature, top-k and top-p, computed as
transformers' logits warpers do, in this order (generation/logits_process.py):

  TemperatureLogitsWarper: scores / temperature
  TopKLogitsWarper:        scores below the k-th largest score -> -inf
                           (k = min(top_k, V); ties with the k-th stay)
  TopPLogitsWarper:        sort ascending, cumulative softmax; remove the
                           tokens whose cumulative probability is
                           <= 1 - top_p, always keeping the likeliest
  softmax of what is left.

Written here in float64 with the standard library from those definitions, not
with ppa's quickselect. Cases: seeded random logits (float32 values), several
vocabulary sizes, temperatures, k (1, small, >= V, 0 = off) and p (1 = off);
top-p values closer than 1e-9 to a cumulative boundary are redrawn, so that
rounding cannot decide membership. Some cases put logits on a coarse grid
with top-p 1, so that the k-th value is tied (every tie stays).

Usage: /usr/bin/python3 tests/ref/sample_ref.py --out tests/fixtures/sample_golden.json
Deterministic (random.Random(20240601)): the same bytes on every run.
Output: {"cases": [{"V", "temperature", "top_k", "top_p", "logits": [...],
         "probs": [...]}]} with probs 0 for the removed ids.
"""

import argparse
import json
import math
import random
import struct


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def softmax(xs):
    m = max(xs)
    e = [math.exp(x - m) if x != -math.inf else 0.0 for x in xs]
    s = sum(e)
    return [v / s for v in e]


def filtered(logits, temperature, top_k, top_p):
    scores = [x / temperature for x in logits]
    V = len(scores)
    if top_k > 0:
        k = min(top_k, V)
        kth = sorted(scores, reverse=True)[k - 1]
        scores = [-math.inf if s < kth else s for s in scores]
    if top_p < 1.0:
        order = sorted(range(V), key=lambda i: scores[i])  # ascending
        probs = softmax([scores[i] for i in order])
        cum, remove = 0.0, []
        for p in probs:
            cum += p
            remove.append(cum <= 1 - top_p)
        remove[-1] = False  # min_tokens_to_keep = 1
        for i, r in zip(order, remove):
            if r:
                scores[i] = -math.inf
    return softmax(scores)


def near_boundary(logits, temperature, top_k, top_p):
    """True when top_p lies within 1e-9 of a cumulative mass of the top-k set"""
    scores = [x / temperature for x in logits]
    if top_k > 0:
        kth = sorted(scores, reverse=True)[min(top_k, len(scores)) - 1]
        scores = [-math.inf if s < kth else s for s in scores]
    probs = sorted(softmax(scores), reverse=True)
    cum = 0.0
    for p in probs:
        cum += p
        if abs(cum - top_p) < 1e-9:
            return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    rng = random.Random(20240601)
    cases = []
    for t in range(60):
        V = rng.choice([2, 3, 7, 50, 260])
        temperature = rng.choice([0.1, 0.7, 1.0, 1.5])
        top_k = rng.choice([0, 1, 2, 5, 40, V, V + 3])
        grid = t % 6 == 5
        if grid:  # ties at the k-th value: every tied id stays
            logits = [f32(0.5 * rng.randrange(6)) for _ in range(V)]
            top_p = 1.0
        else:
            logits = [f32(rng.gauss(0.0, 3.0)) for _ in range(V)]
            top_p = rng.choice([1.0, 0.95, 0.9, 0.5, 0.2, 1e-6])
            while top_p < 1.0 and near_boundary(logits, temperature, top_k, top_p):
                top_p = f32(rng.uniform(0.05, 0.99))
        cases.append({"V": V, "temperature": temperature, "top_k": top_k, "top_p": top_p, "logits": logits,
                      "probs": filtered(logits, temperature, top_k, top_p)})
    with open(out, "w") as f:
        json.dump({"cases": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
