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
trainable parameter: all of them, or the LoRA adapter's with --lora-r); with
--adamw, an AdamW step (else no optimizer step).  Tokens: one random prompt of
P tokens shared by the K sequences (a preference list: one prompt, K
responses) and K random responses of R tokens; fixed seed.  Reports the median
of --steps steps after one warm-up step, tokens = K * (P + R), peak resident
memory (ru_maxrss) and the BLAS in use (torch.__config__.show() plus
OpenBLAS's own corename; with --precision bf16 also the oneDNN kernel that a
bf16 product runs, from oneDNN's verbose line).

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

--lora-r R trains a LoRA adapter instead of every parameter, with PEFT's
semantics (what ppa's --lora-r runs): every base parameter is frozen
(requires_grad_(False): embeddings, norms, LM head, the seven projections and
their biases), and each of the seven linear layers of every decoder layer
(q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; W [out, in])
is wrapped by a LoRALinear written here (PEFT is not installed) holding
lora_A [r, in] ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's kaiming_uniform_(a=sqrt(5)),
seeded) and lora_B [out, r] = 0, s = alpha / r with alpha = 2r (ppa's bench)
so s = 2, no dropout:  y = x W^T (+ b) + s (x A^T) B^T.  Written as:
    y = F.linear(x, W, b); h = F.linear(x, A)               # [N, out], [N, r]
    y = torch.addmm(y, h, B.t(), alpha=s)                   # on 2-D views
i.e. one product per factor (h is N x r, the rank-r correction is one GEMM
that accumulates into the base output: BLAS/oneDNN beta = 1 with the scale
as its alpha, instead of PEFT's lora_B(lora_A(x)) * s and a separate add,
which take two more passes over the [N, out] output; no in-place op, so
autograd needs no CopySlices).  Autograd then computes, per target, dX of the
frozen base product and dA, dB, dX of the adapter; torch skips the base
weights' gradient products because nothing that needs them requires grad
(layer 0's input does not require grad either, so even its dX is skipped).
Under --precision bf16 autocast casts x, A, B and the base output for these
products, so the adapter's products are bf16 (oneDNN brgemm, the sum as a
post-op) like PEFT's under autocast; A and B stay float32 master parameters.
Measured on a loaded 2-vCPU Zen 5 (one [1024, 896] x [896, 4864] target,
forward + backward, r 16): this, PEFT's form, the scale on h instead of the
output, and an in-place addmm_ on the base output are within 5% of each
other in fp32 and bf16 (the r-products cost ~r (in + out) / (in out) of the
base product, 2-4% here); the addmm form was the fastest or tied.
The JSON's "params" is then the trainable count (A and B), "lora_r" r.

--adamw adds torch.optim.AdamW (lr 1e-7, betas 0.9/0.999, eps 1e-8,
weight_decay 0) over the trainable parameters after the backward, inside the
timed step (ppa's --adamw: a full training step).  Its single-tensor
implementation (foreach=False, torch 1.13's CPU default): foreach was slower
on CPU (40 vs 46 ms per step over the 336 LoRA tensors of the Qwen2-0.5B
shapes, r 16: the CPU _foreach_ ops are per-tensor loops that materialise
every intermediate list) and would hold a full-size temporary per state for
the full model.  The first step (optimizer state allocation) is the warm-up.

--gradient-checkpointing wraps each decoder layer in
torch.utils.checkpoint.checkpoint(layer, ..., use_reentrant=False,
preserve_rng_state=False) (torch 1.13 has the non-reentrant form; it needs no
input that requires grad, which a frozen LoRA base's embeddings do not give,
and it restores the CPU autocast state for the recomputation; no randomness
in a layer, so no RNG state to stash): the backward recomputes one layer's
forward at a time, like ppa's --gradient-checkpointing.

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
import torch.utils.checkpoint


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


def lora_dims(c):
    """[(out, in)] of the seven LoRA targets of a layer: q, k, v, o, gate, up, down."""
    q, kv = c.nh * c.hd, c.nkv * c.hd
    return [(q, c.H), (kv, c.H), (kv, c.H), (c.H, q), (c.I, c.H), (c.I, c.H), (c.H, c.I)]


def step_gflop(c, K, P, R, lm_rows, lora_r=0, gc=False):
    """Matmul FLOPs of forward + backward, for a GFLOP/s figure.  Full training: 3x the forward.  LoRA: the frozen
    products' backward is dX only (2x their forward; layer 0's dX, skipped by torch, is counted), attention 3x,
    the adapter's products 3x.  Gradient checkpointing adds one more forward of the layers (not the LM head)."""
    T = P + R
    lin = sum(o * i for o, i in lora_dims(c))
    proj = 2.0 * K * T * lin * c.L                      # projections + MLP
    att = 2.0 * 2 * K * c.nh * T * T * c.hd * c.L        # scores + probs.V (full square, as computed)
    head = 2.0 * K * lm_rows * c.H * c.V                # LM head
    ad = 2.0 * K * T * lora_r * sum(o + i for o, i in lora_dims(c)) * c.L  # x A^T and h B^T
    total = 3.0 * (proj + att + head) if lora_r == 0 else 2.0 * (proj + head) + 3.0 * (att + ad)
    if gc:
        total += proj + att + ad
    return total / 1e9


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


class LoRALinear(nn.Module):
    """A frozen nn.Linear plus a LoRA pair (PEFT semantics, no dropout): y = base(x) + s (x A^T) B^T."""

    def __init__(self, base, r, alpha, gen):
        super().__init__()
        self.base = base
        self.r, self.scaling = r, alpha / r
        self.out_features = base.out_features
        dt = base.weight.dtype
        bound = 1.0 / math.sqrt(base.in_features)  # kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3) * sqrt(3 / in)
        a = (torch.rand((r, base.in_features), generator=gen, dtype=torch.float64) * 2.0 - 1.0) * bound
        self.lora_A = nn.Parameter(a.to(dt))
        self.lora_B = nn.Parameter(torch.zeros((base.out_features, r), dtype=dt))

    def forward(self, x):
        y = self.base(x)                                  # frozen: F.linear(x, W, b), dX only in the backward
        h = F.linear(x, self.lora_A)                      # [..., r]
        # s h B^T accumulated into the base output by one GEMM (beta 1, alpha s); autocast makes it bf16
        out = torch.addmm(y.reshape(-1, self.out_features), h.reshape(-1, self.r), self.lora_B.t(), alpha=self.scaling)
        return out.view(y.shape)


LORA_TARGETS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def add_lora(model, r, alpha, seed):
    """Freeze every parameter of model and wrap the seven linear layers of every decoder layer in a LoRALinear
    (A seeded by seed, layer by layer in LORA_TARGETS order; B = 0).  Returns the trainable parameters."""
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    for layer in model.model.layers:
        for t in LORA_TARGETS:
            parent_name, name = t.split(".")
            parent = getattr(layer, parent_name)
            setattr(parent, name, LoRALinear(getattr(parent, name), r, alpha, gen))
    return [p for p in model.parameters() if p.requires_grad]


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
        self.gradient_checkpointing = False

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
        gc = self.gradient_checkpointing and torch.is_grad_enabled()
        for layer in self.model.layers:
            if gc:  # keep the layer's input only; its forward runs again in the backward
                x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, mask, use_reentrant=False,
                                                      preserve_rng_state=False)
            else:
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


def onednn_bf16():
    """'oneDNN <version>, <implementation> (<isa>), <n> threads' of a bf16 matrix product (64^3, above torch's
    16^3 native cutoff) from oneDNN's verbose lines (printed by the C library on fd 1, captured here), or a
    sentence saying why not."""
    import tempfile
    a = torch.ones(64, 64, dtype=torch.bfloat16)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as f:
        try:
            os.dup2(f.fileno(), 1)
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                torch.mm(a, a)
        except (RuntimeError, AttributeError) as e:
            return "oneDNN verbose unavailable (%s)" % e
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    ver = re.search(r"info,(oneDNN v[0-9.]+)", text)
    nthr = re.search(r"nthr:(\d+)", text)
    isa = re.search(r"info,cpu,isa:([^\n]+)", text)
    impl = re.search(r"exec,cpu,matmul,([^,]+)", text)
    if not impl:
        return "bf16 products not on oneDNN (no verbose exec line: torch's own kernel)"
    return "%s, %s (%s), %s threads" % (ver.group(1) if ver else "oneDNN", impl.group(1),
                                        isa.group(1).strip() if isa else "isa ?", nthr.group(1) if nthr else "?")


# ---------------------------------------------------------------------------
# correctness check against the float64 oracle

def lora_check(c, model, ids, P, n):
    """float64 checks of the LoRA path and of gradient checkpointing on the check model (non-trivial weights):
    * B = 0: the adapted model's log-probs equal the base's (bit for bit expected), base weights get no gradient;
    * B random: log-probs and gradients against the base with merged weights W' = W + s B A, whose weight
      gradient G gives dB = s G A^T and dA = s B^T G;
    * gradient checkpointing (LoRA and full model) against no checkpointing.
    Returns the worst relative error."""
    import copy
    r, alpha = 3, 6.0
    base_lp = model.response_logps(ids, P).detach()
    lm = copy.deepcopy(model)
    add_lora(lm, r, alpha, 99 + n)
    lm.zero_grad(set_to_none=True)
    lp = lm.response_logps(ids, P)
    lp.sum().backward()
    err_b0 = ((lp.detach() - base_lp).abs() / base_lp.abs()).max().item()
    frozen_grads = [k for k, p in lm.named_parameters()
                    if not k.split(".")[-1].startswith("lora_") and p.grad is not None]
    if frozen_grads:
        print("check %s LoRA: frozen parameters got gradients: %s" % (n, frozen_grads[:3]))
        err_b0 = 1.0
    g = torch.Generator().manual_seed(5 + n)
    with torch.no_grad():
        for mod in lm.modules():
            if isinstance(mod, LoRALinear):
                mod.lora_B.copy_(torch.randn(mod.lora_B.shape, generator=g, dtype=torch.float64) * 0.2)
    merged = copy.deepcopy(model)
    with torch.no_grad():
        for lay_m, lay_l in zip(merged.model.layers, lm.model.layers):
            for t in LORA_TARGETS:
                pn, name = t.split(".")
                mod = getattr(getattr(lay_l, pn), name)
                getattr(getattr(lay_m, pn), name).weight.add_(mod.scaling * mod.lora_B @ mod.lora_A)
    merged.zero_grad(set_to_none=True)
    merged_lp = merged.response_logps(ids, P)
    merged_lp.sum().backward()
    merged_lp = merged_lp.detach()
    lm.zero_grad(set_to_none=True)
    lp = lm.response_logps(ids, P)
    lp.sum().backward()
    err = ((lp.detach() - merged_lp).abs() / merged_lp.abs()).max().item()
    rel = lambda a, b: ((a - b).abs().max() / (b.abs().max() + 1e-30)).item()
    grads = {}
    for lay_m, lay_l in zip(merged.model.layers, lm.model.layers):
        for t in LORA_TARGETS:
            pn, name = t.split(".")
            mod = getattr(getattr(lay_l, pn), name)
            G = getattr(getattr(lay_m, pn), name).weight.grad
            err = max(err, rel(mod.lora_B.grad, mod.scaling * G @ mod.lora_A.detach().t()),
                      rel(mod.lora_A.grad, mod.scaling * mod.lora_B.detach().t() @ G))
            grads[mod] = (mod.lora_A.grad.clone(), mod.lora_B.grad.clone())
    err_gc = 0.0
    for m, ref in ((lm, grads), (model, None)):  # checkpointed: the same log-probs and gradients
        if ref is None:
            m.zero_grad(set_to_none=True)
            lp_plain = m.response_logps(ids, P)
            lp_plain.sum().backward()
            ref = {p: (p.grad.clone(),) for p in m.parameters()}
        else:
            lp_plain = lp
        m.gradient_checkpointing = True
        m.zero_grad(set_to_none=True)
        lp_gc = m.response_logps(ids, P)
        lp_gc.sum().backward()
        m.gradient_checkpointing = False
        err_gc = max(err_gc, ((lp_gc - lp_plain).abs() / lp_plain.abs()).max().item())
        for key, gs in ref.items():
            now = (key.lora_A.grad, key.lora_B.grad) if isinstance(key, LoRALinear) else (key.grad,)
            err_gc = max(err_gc, max(rel(a, b) for a, b in zip(now, gs)))
    model.zero_grad(set_to_none=True)
    print("check %s LoRA r %d: B = 0 vs base %.2e; B random vs merged weights (log-probs, dA, dB) %.2e; "
          "gradient checkpointing vs none (LoRA and full) %.2e" % (n, r, err_b0, err, err_gc))
    return max(err_b0, err, err_gc)


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
    worst = worst32 = worst_lora = 0.0
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
        worst_lora = max(worst_lora, lora_check(c, model, ids, P, n))
    ok = worst < 1e-10 and worst32 < 1e-4 and worst_lora < 1e-10
    print("check: %s (worst %.2e in float64, tolerance 1e-10; %.2e in float32, tolerance 1e-4; LoRA and "
          "checkpointing %.2e in float64, tolerance 1e-10)" % ("ok" if ok else "FAILED", worst, worst32, worst_lora))
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
    ap.add_argument("--lora-r", type=int, default=0,
                    help="train a LoRA adapter of rank R (alpha 2R) on the seven linear layers of a frozen base "
                         "(default 0: train every parameter)")
    ap.add_argument("--adamw", action="store_true",
                    help="an AdamW step over the trainable parameters inside the timed step")
    ap.add_argument("--gradient-checkpointing", action="store_true",
                    help="torch.utils.checkpoint around each decoder layer (non-reentrant)")
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
    if a.lora_r < 0:
        die("--lora-r must be >= 0")
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
    total_params = sum(p.numel() for p in model.parameters())
    if a.lora_r > 0:
        add_lora(model, a.lora_r, 2.0 * a.lora_r, a.seed + 1)
    model.gradient_checkpointing = a.gradient_checkpointing
    trainable = [p for p in model.parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in trainable)
    opt = None
    if a.adamw:  # single-tensor implementation: foreach is slower on CPU (docstring)
        opt = torch.optim.AdamW(trainable, lr=1e-7, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, foreach=False)
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
        if opt is not None:
            opt.step()
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
    gemm = "torch BLAS_INFO=%s; %s; %s" % (info, lib, conf or core or "not OpenBLAS")
    if core and conf and core not in conf:
        gemm += ", %s kernels" % core
    gemm_bf16 = onednn_bf16() if a.precision == "bf16" else ""
    gf = step_gflop(c, K, P, R, R if a.lm_head == "response" else T, a.lora_r, a.gradient_checkpointing)
    if a.json:
        out = {"impl": "torch", "precision": a.precision, "k": K, "prompt_len": P, "response_len": R, "tokens": tokens,
               "ms": round(ms, 3), "tokens_per_s": round(tokens / (ms / 1000.0), 3),
               "gflops": round(gf / (ms / 1000.0), 1), "peak_rss_mb": round(peak_mb, 1), "params": n_trainable,
               "total_params": total_params, "adamw": a.adamw, "gradient_checkpointing": a.gradient_checkpointing,
               "threads": threads, "coretype": coretype, "gemm": gemm, "gemm_bf16": gemm_bf16, "lora_r": a.lora_r}
        if mb < K:
            out["micro_batch"] = mb
        print(json.dumps(out))
        return
    print("model     %s, %.1fM parameters (L %d, H %d, I %d, heads %d/%d, hd %d, V %d, tied %s, qkv bias %s)"
          % (c.type, total_params / 1e6, c.L, c.H, c.I, c.nh, c.nkv, c.hd, c.V, c.tie, c.qkv_bias))
    if a.lora_r > 0:
        print("train     LoRA r %d, alpha %d (s %g) on q,k,v,o,gate,up,down of %d layers, base frozen: "
              "%d parameters train (%.2f%%)" % (a.lora_r, 2 * a.lora_r, 2.0, c.L, n_trainable,
                                                 100.0 * n_trainable / total_params))
    else:
        print("train     every parameter: %d" % n_trainable)
    print("step      K %d x (P %d + R %d) = %d tokens, %s, lm-head %s, %s%s%s, loss %.6g"
          % (K, P, R, tokens, "one pass" if mb == K else "%d micro-batches of %d" % ((K + mb - 1) // mb, mb),
             a.lm_head, "float32" if a.precision == "fp32" else "autocast bf16",
             ", gradient checkpointing" if a.gradient_checkpointing else "", ", AdamW" if a.adamw else "", loss_val))
    print("time      median %.1f ms/step of %d (%s), %.1f tokens/s, ~%.0f GFLOP/step = %.1f GFLOP/s"
          % (ms, len(times), ", ".join("%.0f" % (t * 1000) for t in times), tokens / (ms / 1000.0), gf,
             gf / (ms / 1000.0)))
    print("memory    peak RSS %.1f MB" % peak_mb)
    print("threads   torch %d, OPENBLAS_CORETYPE=%s" % (threads, coretype))
    print("blas      %s" % gemm)
    if gemm_bf16:
        print("bf16      %s" % gemm_bf16)


if __name__ == "__main__":
    main()
