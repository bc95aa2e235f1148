#!/usr/bin/python3
"""PyTorch competitor for `ppa bench step`: one forward + backward of K sequences.

The model is a float32 torch nn.Module written from shared/spec/formats.md e.2-e.3
(Llama / Mistral / Qwen2: RMSNorm in fp32 times the weight, rotate_half RoPE,
GQA, SwiGLU, q/k/v biases for qwen2, tied embeddings), parameter names as in
Hugging Face (model.layers.{i}.self_attn.q_proj.weight, ...).  Random init:
weights ~ N(0, 0.02), biases 0, norm weights 1; fixed seed.  Written the way a
Python trainer runs it, but batched and without wasted work:
  * the K sequences are one [K, T] batch, T = P + R, plain causal attention;
  * attention is matmul + additive causal mask + softmax + matmul (torch 1.13
    has no scaled_dot_product_attention); GQA without repeating K/V: the g =
    nh/nkv query heads of one kv head are stacked as [K, nkv, g*T, hd], so one
    batched matmul per kv head reads K/V once;
  * --lm-head response (default) applies the LM head only to the R positions
    that score response tokens (positions P-1 .. T-2), then log_softmax over the
    full vocabulary and a gather; --lm-head all does what an HF/TRL trainer
    does: logits for all T positions, log_softmax of logits[:, :-1], gather,
    prompt positions masked out.
One step = model.zero_grad(set_to_none=True); loss = sum over the K sequences
of the summed log-probs of their R response tokens (token t scored by the
logits at t-1; prompt tokens never scored); loss.backward() (gradients of every
parameter, no optimizer step).  Tokens: one random prompt of P tokens shared by
the K sequences (a preference list: one prompt, K responses) and K random
responses of R tokens; fixed seed.  Reports the median of --steps steps after
one warm-up step, tokens = K * (P + R), peak resident memory (ru_maxrss) and
the BLAS in use (torch.__config__.show() plus OpenBLAS's own corename).

--precision bf16 runs the forward and the loss under torch.autocast("cpu",
dtype=torch.bfloat16), as a PyTorch user writes mixed precision: float32 master
parameters, the same model code, loss.backward() outside the autocast context.
What autocast does on CPU in torch 1.13 (checked on Debian's 1.13.1 build): it
casts the inputs of the matrix products (linear, matmul, mm, bmm, addmm,
baddbmm; einsum through them) to bf16, and they return bf16; a short list
(nll_loss, cross_entropy, mse_loss, ...) is forced to float32; every other op
runs in the dtype of its inputs.  Here that makes bf16 the q/k/v/o and MLP
projections, both attention products, the LM head, SiLU(gate) * up, and the
log_softmax, gather and sum of the log-probs (log_softmax is not on the CPU
float32 list); float32 where a bf16 result meets a float32 tensor: RoPE
(float32 cos/sin), scores + causal mask and the softmax, the residual adds,
RMSNorm.  Autograd replays the casts, so the backward's products are bf16 too.
The bf16 products go to oneDNN (MKL-DNN 2.6.3 in Debian's build: brgemm
avx512_core_bf16 on the benchmark machine, float32 accumulation, bf16 output),
not OpenBLAS; products of at most 16^3 multiply-adds take a native kernel
instead.  The settings below were measured in float32 and are kept for bf16.

Best settings on the benchmark machine (2 vCPU AMD EPYC family 26 model 2
"Zen 5" under KVM; avx512f/bf16/vnni; Debian 12, torch 1.13.1, OpenBLAS
0.3.21 pthread, DYNAMIC_ARCH; torch's float32 matmuls go to OpenBLAS sgemm,
BLAS_INFO=generic).  OpenBLAS 0.3.21 does not know this CPU family; on its
avx512 flags it auto-detects "Cooperlake" (on the Intel development machine of
style.md it fell back to Prescott instead).  torch.get_num_threads() defaults
to 1 here, so the script calls torch.set_num_threads(--threads, default 2);
OpenBLAS (pthread build) uses 2 threads on its own.
Settings measured on that machine (bench/run_step.sh applies them): the
avx512 kernels (OPENBLAS_CORETYPE=Cooperlake or SkylakeX; Haswell is
1.3-1.6x slower), OMP_WAIT_POLICY=passive (torch's OpenMP pool next to
OpenBLAS's threads: spinning costs 1.3-3.5x), and glibc malloc keeping freed
memory (MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_ large: up to 1.9x).
"""

import argparse
import ctypes
import json
import math
import os
import re
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def die(msg):
    sys.stderr.write("bench_step_torch: %s\n" % msg)
    sys.exit(2)


# ---------------------------------------------------------------------------
# config.json (formats.md e.3)

class Config:
    pass


def load_config(path):
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (path, e))
    c = Config()
    c.type = j.get("model_type")
    if c.type not in ("llama", "mistral", "qwen2"):
        die("%s: model_type %r (llama, mistral, qwen2 are supported)" % (path, c.type))
    for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
        if not isinstance(j.get(key), int) or j[key] <= 0:
            die("%s: %s missing or not a positive integer" % (path, key))
    c.V, c.H, c.I = j["vocab_size"], j["hidden_size"], j["intermediate_size"]
    c.L, c.nh = j["num_hidden_layers"], j["num_attention_heads"]
    c.nkv = j.get("num_key_value_heads") or {"llama": c.nh, "mistral": 8, "qwen2": 32}[c.type]
    c.hd = j.get("head_dim") or c.H // c.nh
    if c.nh % c.nkv or c.hd % 2:
        die("%s: heads %d / kv heads %d / head_dim %d" % (path, c.nh, c.nkv, c.hd))
    if j.get("hidden_act", "silu") not in ("silu", "swish"):
        die("%s: hidden_act %r (silu only)" % (path, j.get("hidden_act")))
    c.eps = float(j.get("rms_norm_eps", 1e-6))
    c.tie = bool(j.get("tie_word_embeddings", False))
    if c.type == "qwen2":
        c.qkv_bias, c.o_bias, c.mlp_bias = True, False, False
    elif c.type == "mistral":
        c.qkv_bias = c.o_bias = c.mlp_bias = False
    else:
        c.qkv_bias = c.o_bias = bool(j.get("attention_bias", False))
        c.mlp_bias = bool(j.get("mlp_bias", False))
    rp = j.get("rope_parameters")  # transformers v5
    rs = rp if rp is not None else j.get("rope_scaling")
    c.rope_theta = float((rp or {}).get("rope_theta", j.get("rope_theta", 10000.0)))
    c.rope_type = (rs.get("rope_type", rs.get("type", "default")) if rs else "default")
    if c.rope_type == "linear":
        c.rope_factor = float(rs["factor"])
    elif c.rope_type == "llama3":
        c.rope_factor = float(rs["factor"])
        c.rope_low = float(rs["low_freq_factor"])
        c.rope_high = float(rs["high_freq_factor"])
        c.rope_orig = float(rs["original_max_position_embeddings"])
    elif c.rope_type != "default":
        die("%s: rope_type %r (default, linear, llama3 are supported)" % (path, c.rope_type))
    c.window = 0
    if c.type == "mistral":
        c.window = j.get("sliding_window", 4096) or 0
    elif c.type == "qwen2" and j.get("use_sliding_window", False):
        c.window = j.get("sliding_window") or 0
    return c


def rope_inv_freq(c):
    out = []
    for j in range(c.hd // 2):
        f = c.rope_theta ** (-2.0 * j / c.hd)
        if c.rope_type == "linear":
            f /= c.rope_factor
        elif c.rope_type == "llama3":
            wavelen = 2.0 * math.pi / f
            if wavelen > c.rope_orig / c.rope_low:
                f /= c.rope_factor
            elif wavelen >= c.rope_orig / c.rope_high:
                s = (c.rope_orig / wavelen - c.rope_low) / (c.rope_high - c.rope_low)
                f = (1.0 - s) * f / c.rope_factor + s * f
        out.append(f)
    return out


def n_params(c):
    per = 2 * c.H + (c.nh * c.hd) * c.H * 2 + (c.nkv * c.hd) * c.H * 2 + 3 * c.H * c.I
    if c.qkv_bias:
        per += (c.nh + 2 * c.nkv) * c.hd
    if c.o_bias:
        per += c.H
    if c.mlp_bias:
        per += 2 * c.I + c.H
    return c.L * per + c.V * c.H * (1 if c.tie else 2) + c.H


def step_gflop(c, K, P, R, lm_rows):
    """Matmul FLOPs of forward + backward (3x forward), for a GFLOP/s figure."""
    T = P + R
    lin = (c.nh * c.hd) * c.H * 2 + (c.nkv * c.hd) * c.H * 2 + 3 * c.H * c.I
    fwd = 2.0 * K * T * lin * c.L                      # projections + MLP
    fwd += 2.0 * 2 * K * c.nh * T * T * c.hd * c.L      # scores + probs.V (full square, as computed)
    fwd += 2.0 * K * lm_rows * c.H * c.V               # LM head
    return 3.0 * fwd / 1e9


# ---------------------------------------------------------------------------
# the model

class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.nh, self.nkv, self.hd = c.nh, c.nkv, c.hd
        self.q_proj = nn.Linear(c.H, c.nh * c.hd, bias=c.qkv_bias)
        self.k_proj = nn.Linear(c.H, c.nkv * c.hd, bias=c.qkv_bias)
        self.v_proj = nn.Linear(c.H, c.nkv * c.hd, bias=c.qkv_bias)
        self.o_proj = nn.Linear(c.nh * c.hd, c.H, bias=c.o_bias)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        nh, nkv, hd = self.nh, self.nkv, self.hd
        g = nh // nkv
        q = self.q_proj(x).view(B, T, nh, hd).transpose(1, 2)    # [B, nh, T, hd]
        k = self.k_proj(x).view(B, T, nkv, hd).transpose(1, 2)   # [B, nkv, T, hd]
        v = self.v_proj(x).view(B, T, nkv, hd).transpose(1, 2)
        q = (q * cos + rotate_half(q) * sin) * (1.0 / math.sqrt(hd))
        k = k * cos + rotate_half(k) * sin
        # query head h reads kv head h // g: heads kv*g .. kv*g+g-1 stacked on the row axis
        q = q.reshape(B, nkv, g * T, hd)
        s = torch.matmul(q, k.transpose(-1, -2)).view(B, nkv, g, T, T) + mask
        p = torch.softmax(s, dim=-1).view(B, nkv, g * T, T)
        o = torch.matmul(p, v)                                   # [B, nkv, g*T, hd]
        o = o.view(B, nh, T, hd).transpose(1, 2).reshape(B, T, nh * hd)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.H, c.I, bias=c.mlp_bias)
        self.up_proj = nn.Linear(c.H, c.I, bias=c.mlp_bias)
        self.down_proj = nn.Linear(c.I, c.H, bias=c.mlp_bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.H, c.eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.H, c.eps)
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.V, c.H)
        self.layers = nn.ModuleList([Layer(c) for _ in range(c.L)])
        self.norm = RMSNorm(c.H, c.eps)


class CausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = Body(c)
        self.lm_head = None if c.tie else nn.Linear(c.H, c.V, bias=False)
        self.register_buffer("inv_freq", torch.tensor(rope_inv_freq(c), dtype=torch.float64), persistent=False)

    def init_weights(self, seed, std=0.02):
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)

    def lm_weight(self):
        return self.model.embed_tokens.weight if self.c.tie else self.lm_head.weight

    def hidden(self, ids):
        """Final-norm hidden states [B, T, H] of plain causal sequences."""
        B, T = ids.shape
        c = self.c
        if c.window and T > c.window:
            die("sequence of %d tokens is longer than the sliding window %d" % (T, c.window))
        dt = self.model.norm.weight.dtype
        ang = torch.arange(T, dtype=torch.float64)[:, None] * self.inv_freq[None, :]
        ang = torch.cat((ang, ang), dim=-1)
        cos, sin = ang.cos().to(dt), ang.sin().to(dt)              # [T, hd], broadcast over [B, h, T, hd]
        mask = torch.full((T, T), float("-inf"), dtype=dt).triu(1)  # additive causal mask
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.model.norm(x)

    def response_logps(self, ids, P, lm_head="response"):
        """[B] summed log-probs of tokens P..T-1 of each row (token t scored at t-1)."""
        h = self.hidden(ids)
        W = self.lm_weight()
        if lm_head == "response":
            logits = F.linear(h[:, P - 1:-1], W)                   # [B, R, V]
            lsm = torch.log_softmax(logits, dim=-1)
            return lsm.gather(-1, ids[:, P:, None]).squeeze(-1).sum(-1)
        logits = F.linear(h, W)                                     # [B, T, V], as HF computes it
        lsm = torch.log_softmax(logits[:, :-1], dim=-1)
        per_tok = lsm.gather(-1, ids[:, 1:, None]).squeeze(-1)     # [B, T-1]
        keep = torch.arange(1, ids.shape[1]) >= P                   # labels of prompt tokens masked
        return (per_tok * keep.to(per_tok.dtype)).sum(-1)


# ---------------------------------------------------------------------------
# BLAS identification

def blas_info():
    """(torch BLAS_INFO, OpenBLAS corename or None, OpenBLAS config or None, BLAS library path)."""
    m = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    info = m.group(1) if m else "unknown"
    libs = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                name = line.split()[-1]
                base = os.path.basename(name)
                if name not in libs and (base.startswith(("libopenblas", "libblis", "libmkl", "libblas.so"))):
                    libs.append(name)
    except OSError:
        pass
    lib_path = next((n for n in libs if "libopenblas" in n), libs[0] if libs else None)
    core = conf = None
    if lib_path:
        try:
            lib = ctypes.CDLL(lib_path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            core = lib.openblas_get_corename().decode()
            conf = "%s, %d threads" % (lib.openblas_get_config().decode(), lib.openblas_get_num_threads())
        except (OSError, AttributeError):
            pass
    return info, core, conf, lib_path


# ---------------------------------------------------------------------------
# correctness check against the float64 oracle

def check():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests", "ref"))
    import engine_ref
    import tempfile
    configs = [
        {"model_type": "llama", "vocab_size": 97, "hidden_size": 32, "intermediate_size": 48,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "rms_norm_eps": 1e-5},
        {"model_type": "qwen2", "vocab_size": 101, "hidden_size": 48, "intermediate_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
         "tie_word_embeddings": True, "rope_theta": 1000000.0},
        {"model_type": "llama", "vocab_size": 89, "hidden_size": 32, "intermediate_size": 40,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rope_theta": 500000.0,
         "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8}},
    ]
    worst = worst32 = 0.0
    for n, cj in enumerate(configs):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(cj, f)
            path = f.name
        try:
            c = load_config(path)
            rc = engine_ref.load_config(path)
        finally:
            os.unlink(path)
        torch.manual_seed(100 + n)
        K, P, R = 3, 5, 4
        model = CausalLM(c).double()
        model.init_weights(7 + n, std=0.2)
        with torch.no_grad():  # non-trivial biases and norms
            for name, p in model.named_parameters():
                if name.endswith(".bias") or name.endswith("norm.weight"):
                    p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.1)
        prompt = torch.randint(0, c.V, (P,))
        ids = torch.cat([prompt.expand(K, P), torch.randint(0, c.V, (K, R))], dim=1)
        results = {}
        for mode in ("response", "all"):
            model.zero_grad(set_to_none=True)
            lp = model.response_logps(ids, P, mode)
            lp.sum().backward()
            results[mode] = (lp.detach().clone(), {k: v.grad.clone() for k, v in model.named_parameters()})
        params = {k: v.detach().clone().requires_grad_(True) for k, v in model.named_parameters()}
        lps = []
        for b in range(K):
            row = {"prompt_ids": ids[b, :P].tolist(), "response_ids": [ids[b, P:].tolist()]}
            lps += engine_ref.row_logps_separate(rc, params, row)
        ref_lp = torch.stack(lps)
        ref_lp.sum().backward()
        # the benchmark's own precision: float32 copy, current BLAS kernel and thread count
        m32 = CausalLM(c)
        m32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
        lp32 = m32.response_logps(ids, P, "response")
        lp32.sum().backward()
        err32 = ((lp32.detach().double() - ref_lp.detach()).abs() / ref_lp.detach().abs()).max().item()
        for k, p in m32.named_parameters():
            ref_g = params[k].grad
            err32 = max(err32, ((p.grad.double() - ref_g).abs().max() / (ref_g.abs().max() + 1e-30)).item())
        worst32 = max(worst32, err32)
        print("check %s float32 (BLAS core %s): max rel err %.2e" % (n, blas_info()[1], err32))
        for mode, (lp, grads) in results.items():
            err = (lp - ref_lp.detach()).abs().max().item()
            for k, p in params.items():
                err = max(err, ((grads[k] - p.grad).abs().max() / (p.grad.abs().max() + 1e-30)).item())
            worst = max(worst, err)
            print("check %s (%s, nh %d, nkv %d, tied %s, rope %s) lm-head %s: max rel err %.2e"
                  % (n, c.type, c.nh, c.nkv, c.tie, c.rope_type, mode, err))
    ok = worst < 1e-10 and worst32 < 1e-4
    print("check: %s (worst %.2e in float64, tolerance 1e-10; %.2e in float32, tolerance 1e-4)"
          % ("ok" if ok else "FAILED", worst, worst32))
    return 0 if ok else 1


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", help="Hugging Face config.json (llama, mistral, qwen2)")
    ap.add_argument("--k", type=int, default=8, help="sequences per step")
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--response-len", type=int, default=256)
    ap.add_argument("--steps", type=int, default=3, help="timed steps (median), after 1 warm-up")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lm-head", choices=("response", "all"), default="response",
                    help="LM head on the R scoring positions only (default) or on all T positions (HF/TRL)")
    ap.add_argument("--micro-batch", type=int, default=0,
                    help="sequences per forward/backward, gradients accumulated over K/mb passes (default K: one pass)")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="fp32, or bf16: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", action="store_true", help="one JSON line")
    ap.add_argument("--check", action="store_true", help="compare with tests/ref/engine_ref.py (float64) and exit")
    a = ap.parse_args()
    torch.set_num_threads(max(1, a.threads))
    if a.check:
        sys.exit(check())
    if not a.config:
        die("--config is required")
    if a.k < 1 or a.prompt_len < 1 or a.response_len < 1 or a.steps < 1:
        die("--k, --prompt-len (>= 1: the first response token is scored by the last prompt token), "
            "--response-len and --steps must be positive")
    if a.threads > 1 and "OMP_WAIT_POLICY" not in os.environ:
        sys.stderr.write("bench_step_torch: OMP_WAIT_POLICY is not set: spinning OpenMP threads slow torch down "
                         "next to OpenBLAS's threads (bench/run_step.sh sets it to passive)\n")
    c = load_config(a.config)
    K, P, R = a.k, a.prompt_len, a.response_len
    T = P + R
    mb = a.micro_batch if 0 < a.micro_batch < K else K

    torch.manual_seed(a.seed)
    model = CausalLM(c)
    model.init_weights(a.seed)
    model.train()
    prompt = torch.randint(0, c.V, (P,))
    ids = torch.cat([prompt.expand(K, P), torch.randint(0, c.V, (K, R))], dim=1).contiguous()

    times = []
    loss_val = None
    for i in range(a.steps + 1):
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        loss_val = 0.0
        for b in range(0, K, mb):  # gradient accumulation over micro-batches of mb sequences
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                loss = model.response_logps(ids[b:b + mb], P, a.lm_head).sum()
            loss.backward()
            loss_val += loss.item()
            del loss
        dt = time.perf_counter() - t0
        if not math.isfinite(loss_val):
            die("non-finite loss %r" % loss_val)
        if i > 0:
            times.append(dt)
    ms = statistics.median(times) * 1000.0
    tokens = K * T
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    threads = torch.get_num_threads()
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    info, core, conf, lib = blas_info()
    if a.json:
        out = {"impl": "torch", "precision": a.precision, "k": K, "prompt_len": P, "response_len": R, "tokens": tokens,
               "ms": round(ms, 3), "tokens_per_s": round(tokens / (ms / 1000.0), 3),
               "peak_rss_mb": round(peak_mb, 1), "threads": threads, "coretype": coretype}
        if mb < K:
            out["micro_batch"] = mb
        print(json.dumps(out))
        return
    gf = step_gflop(c, K, P, R, R if a.lm_head == "response" else T)
    print("model     %s, %.1fM parameters (L %d, H %d, I %d, heads %d/%d, hd %d, V %d, tied %s, qkv bias %s)"
          % (c.type, n_params(c) / 1e6, c.L, c.H, c.I, c.nh, c.nkv, c.hd, c.V, c.tie, c.qkv_bias))
    print("step      K %d x (P %d + R %d) = %d tokens, %s, lm-head %s, %s, loss %.6g"
          % (K, P, R, tokens, "one pass" if mb == K else "%d micro-batches of %d" % ((K + mb - 1) // mb, mb),
             a.lm_head, "float32" if a.precision == "fp32" else "autocast bf16", loss_val))
    print("time      median %.1f ms/step of %d (%s), %.1f tokens/s, ~%.0f GFLOP/step = %.1f GFLOP/s"
          % (ms, len(times), ", ".join("%.0f" % (t * 1000) for t in times), tokens / (ms / 1000.0), gf,
             gf / (ms / 1000.0)))
    print("memory    peak RSS %.1f MB" % peak_mb)
    print("threads   torch %d, OPENBLAS_CORETYPE=%s" % (threads, coretype))
    print("blas      torch BLAS_INFO=%s; %s; %s" % (info, lib, conf or core or "not OpenBLAS"))


if __name__ == "__main__":
    main()
