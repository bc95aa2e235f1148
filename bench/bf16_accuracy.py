#!/usr/bin/python3
"""bf16 accuracy of log-probs: ppa --precision bf16 against PyTorch autocast bf16, both against float64.

The claim checked: ppa's bf16 log-probs are at least as close to the float64
reference as PyTorch's autocast bf16 ones.  For every response of every row,
logp = sum of the log-probs of the response tokens given the prompt (the first
response token scored by the last prompt position), computed by the model of
tests/ref/engine_ref.py (imported, not rewritten), each response on its own
causal sequence:
  ref           float64 parameters and arithmetic (engine_ref as the goldens use it);
  torch         the same code on float32 parameters under
                torch.autocast("cpu", dtype=torch.bfloat16), as written: in torch
                1.13 the matrix products run in bf16 and return bf16, so the
                logits are bf16 and the log_softmax and the sum of the
                log-probs stay in bf16 (log_softmax is not on the CPU float32
                list); elementwise ops meeting a float32 tensor run in float32
                (RoPE, residual adds, RMSNorm), bf16 ones in bf16 (SiLU * up,
                the attention softmax);
  torch f32lsm  the same, with the log_softmax taken in float32 of the bf16
                logits (a careful user's `logits.float()`): bf16 products only
                then, the variant to compare ppa with;
  ppa bf16      `ppa logprobs --precision bf16` output (--ppa), and ppa fp32
                (--ppa-fp32) when given.
Per method: median and max over responses of |logp - ref| and of
|logp - ref| / n_tokens; a table, then one JSON line.  The verdict holds when
ppa bf16's median and max (both measures) are at most the closer torch
variant's.  Exit status 0 whatever the numbers, 2 on bad input.

--make-rows writes random pre-tokenized rows (uniform token ids, a fixed seed)
for bench/run_bf16_accuracy.sh: engine_ref's own --make-rows has the goldens'
short fixed shapes.
"""

import argparse
import json
import math
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "ref"))
import engine_ref  # noqa: E402  (sets torch to 1 thread)
import torch  # noqa: E402


def die(msg):
    sys.stderr.write("bf16_accuracy: %s\n" % msg)
    sys.exit(2)


def open_or_die(path):
    try:
        return open(path)
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def read_rows(path, V):
    """[(prompt_ids, [response_ids, ...])] of a JSONL file, token ids checked against the vocabulary."""
    rows = []
    with open_or_die(path) as f:
        for ln, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = "%s:%d" % (path, ln)
            try:
                r = json.loads(line)
            except ValueError as e:
                die("%s: not JSON (%s)" % (where, e))
            P = r.get("prompt_ids") if isinstance(r, dict) else None
            R = r.get("response_ids") if isinstance(r, dict) else None
            if not isinstance(P, list) or not P:
                die("%s: prompt_ids must be a list of at least 1 token id" % where)
            if not isinstance(R, list) or not R or any(not isinstance(x, list) or not x for x in R):
                die("%s: response_ids must be a non-empty list of non-empty lists of token ids" % where)
            for t in P + [t for x in R for t in x]:
                if type(t) is not int or not 0 <= t < V:
                    die("%s: token id %r is not an integer in [0, %d)" % (where, t, V))
            rows.append((P, R))
    if not rows:
        die("%s: no rows" % path)
    return rows


def read_ppa(path, rows):
    """[[logp, ...] per row] of a `ppa logprobs` output, checked against the rows."""
    out = []
    with open_or_die(path) as f:
        lines = [(ln, line) for ln, line in enumerate(f, 1) if line.strip()]
    if len(lines) != len(rows):
        die("%s: %d lines for %d rows" % (path, len(lines), len(rows)))
    for (ln, line), (_, R) in zip(lines, rows):
        where = "%s:%d" % (path, ln)
        try:
            j = json.loads(line)
        except ValueError as e:
            die("%s: not JSON (%s)" % (where, e))
        lp = j.get("logps") if isinstance(j, dict) else None
        nt = j.get("n_tokens") if isinstance(j, dict) else None
        if not isinstance(lp, list) or len(lp) != len(R) \
                or any(type(x) not in (int, float) or not math.isfinite(x) for x in lp):
            die("%s: logps must hold %d finite numbers (one per response of the row)" % (where, len(R)))
        if nt != [len(x) for x in R]:
            die("%s: n_tokens %r, the row's responses have %r tokens" % (where, nt, [len(x) for x in R]))
        out.append([float(x) for x in lp])
    return out


def torch_logps(c, params, rows, autocast, lsm_dtype=None):
    """[[logp, ...] per row] from engine_ref, optionally under CPU autocast bf16."""
    out = []
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        for P, R in rows:
            row = {"prompt_ids": P, "response_ids": R}
            out.append([float(x) for x in engine_ref.row_logps_separate(c, params, row, lsm_dtype)])
    return out


def stats(lps, ref, rows):
    """median / max over responses of |logp - ref| and of it per token."""
    d = [abs(a - b) for lr, rr in zip(lps, ref) for a, b in zip(lr, rr)]
    n = [len(x) for _, R in rows for x in R]
    dt = [x / m for x, m in zip(d, n)]
    return {"median_abs": statistics.median(d), "max_abs": max(d),
            "median_abs_per_token": statistics.median(dt), "max_abs_per_token": max(dt)}


def make_rows(a):
    if not a.config:
        die("--make-rows needs --config")
    if min(a.n_rows, a.k, a.prompt_len, a.response_len) < 1:
        die("--n-rows, --k, --prompt-len and --response-len must be positive")
    V = engine_ref.load_config(a.config).V
    rng = random.Random(a.seed)
    with open(a.make_rows, "w") as f:
        for _ in range(a.n_rows):
            lens = [rng.randint(max(1, a.response_len // 2), a.response_len) for _ in range(a.k)]
            lens[0] = a.response_len  # the longest length present in every row
            row = {"prompt_ids": [rng.randrange(V) for _ in range(a.prompt_len)],
                   "response_ids": [[rng.randrange(V) for _ in range(n)] for n in lens]}
            f.write(json.dumps(row) + "\n")
    print("wrote %s: %d rows, K %d, prompt %d tokens, responses %d..%d tokens"
          % (a.make_rows, a.n_rows, a.k, a.prompt_len, max(1, a.response_len // 2), a.response_len))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="Hugging Face folder: config.json + model.safetensors")
    ap.add_argument("--rows", help="pre-tokenized rows {prompt_ids, response_ids} (JSONL)")
    ap.add_argument("--ppa", help="`ppa logprobs --precision bf16` output for --model and --rows")
    ap.add_argument("--ppa-fp32", help="the same in fp32 (optional)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--make-rows", metavar="OUT", help="write random rows for --config to OUT and exit")
    ap.add_argument("--config", help="config.json (--make-rows: the vocabulary size)")
    ap.add_argument("--n-rows", type=int, default=4)
    ap.add_argument("--k", type=int, default=4, help="responses per row")
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--response-len", type=int, default=64, help="longest response; others from half of it up")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.make_rows:
        make_rows(a)
        return 0
    if not a.model or not a.rows:
        die("--model and --rows are required (or --make-rows)")
    torch.set_num_threads(max(1, a.threads))

    try:
        c, _, p64 = engine_ref.load_model(a.model)  # checks names and shapes (a message and exit 2)
    except (OSError, ValueError, KeyError, TypeError) as e:
        die("%s: not a readable model folder (%s: %s)" % (a.model, type(e).__name__, e))
    rows = read_rows(a.rows, c.V)
    ppa = {}
    if a.ppa:
        ppa["ppa bf16"] = read_ppa(a.ppa, rows)
    if a.ppa_fp32:
        ppa["ppa fp32"] = read_ppa(a.ppa_fp32, rows)

    p32 = {n: t.float() for n, t in p64.items()}
    ref = torch_logps(c, p64, rows, autocast=False)
    methods = {"torch autocast": torch_logps(c, p32, rows, autocast=True),
               "torch autocast f32lsm": torch_logps(c, p32, rows, autocast=True, lsm_dtype=torch.float32)}
    methods.update(ppa)
    res = {m: stats(lps, ref, rows) for m, lps in methods.items()}

    ntok = [len(x) for _, R in rows for x in R]
    allref = [x for r in ref for x in r]
    print("%s: %s, %d rows, %d responses of %d..%d tokens, ref logp %.4g..%.4g (mean per token %.4g)"
          % (a.model, c.type, len(rows), len(ntok), min(ntok), max(ntok), min(allref), max(allref),
             sum(allref) / sum(ntok)))
    print("%-24s%14s%14s%18s%18s" % ("|logp - ref|", "median", "max", "median/token", "max/token"))
    for m, s in res.items():
        print("%-24s%14.3e%14.3e%18.3e%18.3e"
              % (m, s["median_abs"], s["max_abs"], s["median_abs_per_token"], s["max_abs_per_token"]))
    verdict = None
    if "ppa bf16" in res:
        keys = ("median_abs", "max_abs", "median_abs_per_token", "max_abs_per_token")
        best = {k: min(res["torch autocast"][k], res["torch autocast f32lsm"][k]) for k in keys}
        verdict = all(res["ppa bf16"][k] <= best[k] for k in keys)
        print("ppa bf16 at least as close to float64 as PyTorch autocast bf16 (its closer variant, every measure): %s"
              % ("yes" if verdict else "no"))
    else:
        print("no --ppa: PyTorch only")
    print(json.dumps({"model": a.model, "model_type": c.type, "rows": len(rows), "responses": len(ntok),
                      "tokens": sum(ntok), "errors": res, "ppa_bf16_at_least_as_close": verdict}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
