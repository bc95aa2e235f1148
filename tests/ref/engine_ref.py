#!/usr/bin/python3
"""Independent float64 reference ("oracle") for the ppa model engine.

A Hugging Face Llama / Mistral / Qwen2 causal-LM forward, written here from the
formulas of shared/spec/formats.md e.2-e.3 (not copied from transformers), run
in torch float64 on the config.json + model.safetensors of a model folder; and
the reward models built on the same body (see "Reward models" below).
Gradients come from torch autograd, so they are an independent check of the
C engine's hand-written backward.

Block maths (per layer i, x the residual stream [T, H]):
    h  = rmsnorm(x) * input_layernorm           rmsnorm(x) = x / sqrt(mean(x^2) + eps)
    q  = h Wq^T (+ bq)   k = h Wk^T (+ bk)   v = h Wv^T (+ bv)      split into heads of hd
    q, k <- RoPE(position), rotate_half pairing dims (j, j + hd/2):
        x'_j      = x_j cos(p w_j) - x_{j+hd/2} sin(p w_j)
        x'_{j+hd/2} = x_{j+hd/2} cos(p w_j) + x_j sin(p w_j)
        w_j = theta^(-2j/hd), then the linear or llama3 rule (formats.md e.3)
    query head h reads kv head h // (nh / nkv); scores q.k / sqrt(hd), masked, softmax
    x += concat_heads(attn) Wo^T (+ bo)
    h  = rmsnorm(x) * post_attention_layernorm
    x += down(silu(gate(h)) * up(h))
    logits = (rmsnorm(x) * model.norm) W_lm^T      W_lm = embed_tokens when tied
Qwen2 always has q/k/v biases; Llama has q/k/v/o biases with attention_bias and
gate/up/down biases with mlp_bias; Qwen3 (q_norm / k_norm: per-head RMSNorm of
q and k before RoPE) is implemented too, but no golden covers it.

Rows (JSONL, one per line): {"prompt_ids": [P], "response_ids": [[R_k], ...],
"weights": [K]}.  Response k is scored on the sequence prompt + response_k at
positions 0..P+R_k-1 with plain causal attention:
    logp_k = sum_t log_softmax(logits[P-1+t])[response_k[t]],  t = 0..R_k-1
(the first response token is scored by the last prompt position; prompt tokens
are never scored); n_tokens_k = R_k.  Test loss L = sum_rows sum_k w_k logp_k.

--shared-prefix evaluates every row a second time as ONE packed sequence
prompt + response_1 + ... + response_K: response tokens attend to the prompt
and to earlier tokens of their own response only, and their positions continue
from P.  logps and dL/dtheta must equal the separate-sequence ones to 1e-12
(the layout the C engine uses for a list; pitfalls.md 25).

--check compares autograd with central finite differences of L (Richardson
extrapolated, float64) for a few seeded random parameters of every tensor.

Reward models, chosen by config.json's architectures[0]:
    *ForSequenceClassification (Llama, Mistral, Qwen2, ...): head score.weight
        [n_out, H], n_out = len(id2label), else num_labels (one of them is
        required here: transformers' default of 2 is not assumed; both given
        and different is refused);
    LlamaForRewardModelWithGating (ArmoRM): head regression_layer.weight
        [n_out, H], n_out = num_objectives.  The gating network is not
        computed; its tensors (gating.*, reward_transform_matrix) may be in the
        checkpoint, are never used, and get a zero gradient.
The checkpoint holds model.* and the head (no bias) and no lm_head.weight,
whatever tie_word_embeddings says (there is no output embedding to tie).
The reward vector of response k is r_k = W_head h_last [n_out], h_last the
hidden state after model.norm at the LAST token of the sequence prompt +
response_k (positions 0..P+R_k-1, plain causal attention; no padding exists
here, so it is transformers' "last non-pad token" whenever the sequence holds
no pad_token_id; --make-rows leaves that id out of reward models' rows);
n_tokens_k = P + R_k.  Test loss
    L = sum_rows sum_k w_k sum_j c_j r_kj,   c_j = 1 / (j + 1), j = 0..n_out-1
(distinct weights per component, so a swapped or misread head row shows).
--shared-prefix reads r_k at the packed index of response k's last token;
--check and --autocast-bf16 work as for the causal LM (under autocast the head
matmul is bf16, as transformers' Linear head is).

LoRA adapters (PEFT's semantics and format; causal LMs only), --adapter DIR:
    DIR/adapter_config.json: peft_type "LORA"; r (int >= 1), lora_alpha, use_rslora (default false),
        target_modules: a list among q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (every layer
        adapted).  Refused: bias other than "none", fan_in_fan_out true, lora_dropout != 0 (no dropout here),
        use_dora, layers_to_transform, rank_pattern / alpha_pattern, modules_to_save, a regex target_modules,
        task_type other than CAUSAL_LM or null.
    DIR/adapter_model.safetensors (F32, F64, F16 or BF16): for every layer i and target m, exactly
        base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight
        base_model.model.model.layers.{i}.mlp.{gate,up,down}_proj.lora_{A,B}.weight
        A [r, in], B [out, r] for the base weight W [out, in]; nothing else.
    On a target linear:   y = x W^T (+ b) + s (x A^T) B^T,   s = lora_alpha / r  (lora_alpha / sqrt(r) with
        use_rslora), computed as PEFT's Linear: base output + lora_B(lora_A(x)) * s.  B = 0 gives the base model
        exactly.  Everything else, the rows and L are as above; the base is frozen: grads.safetensors holds dL/dA
        and dL/dB of every adapter tensor under its PEFT name, in the adapter file's order and shapes (F32, as
        above).  --autocast-bf16 runs the adapter products under autocast too (bf16 matmuls, as PEFT's lora_A /
        lora_B Linears do); --check perturbs 3 seeded entries of every adapter tensor; --shared-prefix as above.
    --merge-out FILE: FILE.safetensors (FILE itself when it ends in .safetensors) holds W + s B A for every target
        weight under the base's name (model.layers.{i}.self_attn.q_proj.weight, ...) in the checkpoint's order,
        computed in float64 and rounded once to F32, metadata {"format": "pt"}.
    --make-adapter --model BASE --out DIR --seed N --r R --alpha A --targets q_proj,... [--rslora] writes a seeded
        non-zero adapter in PEFT's format: adapter_config.json as PEFT 0.x writes it (json.dumps indent 2, sorted
        keys: alpha_pattern {}, auto_mapping null, base_model_name_or_path = basename of BASE, bias "none",
        fan_in_fan_out false, inference_mode true, init_lora_weights true, layers_pattern null,
        layers_to_transform null, lora_alpha, lora_dropout 0.0, modules_to_save null, peft_type "LORA", r,
        rank_pattern {}, revision null, target_modules, task_type "CAUSAL_LM", use_dora false, use_rslora) and
        adapter_model.safetensors (F32, tensors sorted by name as the safetensors package writes them, metadata
        {"format": "pt"}).  A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's kaiming_uniform_ with a = sqrt(5)); B ~ N(0,
        0.3^2), not PEFT's zeros, so that the adapter changes the model and every gradient is exercised.  Draws
        from random.Random(N).random() only (B by Box-Muller), layer by layer, targets in the order above, A then
        B, row-major: the same bytes on every run.

Commands (Debian's interpreter, torch 1.13; no transformers, no safetensors, no peft):
    /usr/bin/python3 tests/ref/engine_ref.py --model DIR --rows ROWS.jsonl --out OUTDIR \
        [--shared-prefix] [--check] [--autocast-bf16] [--adapter LORA_DIR [--merge-out FILE]]
    /usr/bin/python3 tests/ref/engine_ref.py --make-rows --config CONFIG.json --seed N --out ROWS.jsonl
    /usr/bin/python3 tests/ref/engine_ref.py --make-adapter --model DIR --out LORA_DIR --seed N --r R \
        --alpha A --targets q_proj,v_proj,... [--rslora]
Outputs: OUTDIR/logps.jsonl, one line per row {"logps": [K], "n_tokens": [K]}
(a reward model: OUTDIR/rewards.jsonl, one line per row
{"rewards": [[n_out] per response], "n_tokens": [P + R_k per response]}),
and OUTDIR/grads.safetensors: dL/dtheta as F32 under the HF names of the
checkpoint (same tensors, same order; a tied embedding's gradient includes the
LM head's share), metadata {"format": "pt", "loss": repr(L)}.  Floats are
Python's repr (json.dumps): the shortest decimal that reads back as the same
double, at most 17 significant digits.  --autocast-bf16 adds
logps_autocast_bf16.jsonl (or rewards_autocast_bf16.jsonl) and
grads_autocast_bf16.safetensors: the same on PyTorch's CPU autocast bf16.
Everything is deterministic (one thread, fixed seeds): same bytes every run.
"""

import argparse
import json
import math
import os
import random
import struct
import sys

import numpy as np
import torch

torch.set_num_threads(1)
DT = torch.float64


def die(msg):
    sys.stderr.write("engine_ref: %s\n" % msg)
    sys.exit(2)


# ---------------------------------------------------------------------------
# safetensors (formats.md e.1), by hand

_ST_DTYPES = {"F32": ("<f4", 4), "F64": ("<f8", 8), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


def read_safetensors(path):
    """Returns (list of names in offset order, {name: float64 numpy array})."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        die("%s: shorter than 8 bytes" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if n > 100_000_000 or 8 + n > len(blob):
        die("%s: header length %d out of range" % (path, n))
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    buf = blob[8 + n:]
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        entries.append((b, e, name, info))
    entries.sort()
    pos = 0
    out = {}
    for b, e, name, info in entries:
        if b != pos:
            die("%s: %s does not start where the previous tensor ends" % (path, name))
        dt = info["dtype"]
        if dt not in _ST_DTYPES:
            die("%s: %s has dtype %s (F32, F64, F16, BF16 are read)" % (path, name, dt))
        npdt, size = _ST_DTYPES[dt]
        shape = tuple(info["shape"])
        numel = int(np.prod(shape)) if shape else 1
        if e - b != numel * size:
            die("%s: %s: %d bytes for shape %s %s" % (path, name, e - b, list(shape), dt))
        raw = np.frombuffer(buf[b:e], dtype=npdt)
        if dt == "BF16":
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = raw
        out[name] = arr.astype(np.float64).reshape(shape)
        pos = e
    if pos != len(buf):
        die("%s: %d trailing bytes after the last tensor" % (path, len(buf) - pos))
    return [x[2] for x in entries], out


def write_safetensors(path, names, arrays, metadata):
    """F32, tensors in the order given, header padded with spaces to 8 bytes."""
    header = {"__metadata__": metadata}
    chunks = []
    off = 0
    for name in names:
        a = np.ascontiguousarray(arrays[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        chunks.append(a.tobytes())
        off += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# config.json (formats.md e.3; class defaults as in src/hf/config.h)

class Config:
    pass


def load_config(path):
    with open(path) as f:
        j = json.load(f)
    c = Config()
    c.type = j.get("model_type")
    if c.type not in ("llama", "mistral", "qwen2", "qwen3"):
        die("%s: model_type %r (llama, mistral, qwen2, qwen3 are supported)" % (path, c.type))
    for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
        if not isinstance(j.get(key), int):
            die("%s: %s missing" % (path, key))
    c.V, c.H, c.I = j["vocab_size"], j["hidden_size"], j["intermediate_size"]
    c.L, c.nh = j["num_hidden_layers"], j["num_attention_heads"]
    nkv_default = {"llama": c.nh, "mistral": 8, "qwen2": 32, "qwen3": 32}[c.type]
    c.nkv = j.get("num_key_value_heads") or nkv_default
    c.hd = j.get("head_dim") or (128 if c.type == "qwen3" else c.H // c.nh)
    if c.nh % c.nkv or c.hd % 2:
        die("%s: heads %d / kv heads %d / head_dim %d" % (path, c.nh, c.nkv, c.hd))
    act = j.get("hidden_act", "silu")
    if act not in ("silu", "swish"):
        die("%s: hidden_act %r (silu only)" % (path, act))
    c.eps = float(j.get("rms_norm_eps", 1e-6))
    c.lora = None  # a LoRA adapter applied to the target linears (load_adapter), or None
    c.tie = bool(j.get("tie_word_embeddings", False))
    reward_head(c, j, path)
    c.qk_norm = c.type == "qwen3"
    if c.type == "qwen2":
        c.qkv_bias, c.o_bias, c.mlp_bias = True, False, False
    elif c.type == "mistral":
        c.qkv_bias = c.o_bias = c.mlp_bias = False
    else:
        ab = bool(j.get("attention_bias", False))
        c.qkv_bias, c.o_bias = ab, ab
        c.mlp_bias = bool(j.get("mlp_bias", False)) if c.type == "llama" else False
    # RoPE: v4 rope_theta + rope_scaling, or v5 rope_parameters
    rp = j.get("rope_parameters")
    if rp is not None:
        theta = float(rp.get("rope_theta", j.get("rope_theta", 10000.0)))
        rs = rp
    else:
        theta = float(j.get("rope_theta", 10000.0))
        rs = j.get("rope_scaling")
    c.rope_theta = theta
    rtype = "default"
    if rs:
        rtype = rs.get("rope_type", rs.get("type", "default"))
    c.rope_type = rtype
    if rtype == "default":
        pass
    elif rtype == "linear":
        c.rope_factor = float(rs["factor"])
    elif rtype == "llama3":
        c.rope_factor = float(rs["factor"])
        c.rope_low = float(rs["low_freq_factor"])
        c.rope_high = float(rs["high_freq_factor"])
        c.rope_orig = float(rs["original_max_position_embeddings"])
    else:
        die("%s: rope_type %r (default, linear, llama3 are supported)" % (path, rtype))
    # sliding window in effect (0: none); sequences longer than it are refused
    c.window = 0
    if c.type == "mistral":
        sw = j.get("sliding_window", 4096)
        c.window = sw or 0
    elif c.type in ("qwen2", "qwen3") and j.get("use_sliding_window", False):
        c.window = j.get("sliding_window") or 0
    return c


def reward_head(c, j, path):
    """Sets c.head (None: causal LM; else the head tensor's name), c.n_out (its rows) and c.pad (pad_token_id or
    None) from architectures[0].  A reward model has no LM head, whatever tie_word_embeddings says."""
    arch = j.get("architectures")
    arch = arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) else ""
    c.arch = arch
    c.head, c.n_out = None, 0
    pad = j.get("pad_token_id")
    c.pad = pad if isinstance(pad, int) and not isinstance(pad, bool) else None
    if arch.endswith("ForSequenceClassification"):
        c.head = "score.weight"
        i2l, nl = j.get("id2label"), j.get("num_labels")
        if i2l is not None:
            if not isinstance(i2l, dict) or not i2l:
                die("%s: id2label must be a non-empty object {\"0\": \"LABEL_0\", ...}" % path)
            c.n_out = len(i2l)
            if nl is not None and nl != c.n_out:
                die("%s: num_labels %r disagrees with the %d entries of id2label" % (path, nl, c.n_out))
        elif isinstance(nl, int) and not isinstance(nl, bool) and nl >= 1:
            c.n_out = nl
        else:
            die("%s: %s needs id2label or num_labels (transformers' default of 2 is not assumed)" % (path, arch))
    elif arch == "LlamaForRewardModelWithGating":
        c.head = "regression_layer.weight"
        no = j.get("num_objectives")
        if not isinstance(no, int) or isinstance(no, bool) or no < 1:
            die("%s: %s needs num_objectives (a positive integer)" % (path, arch))
        c.n_out = no
    if c.head:
        c.tie = False


def rope_inv_freq(c):
    """[hd/2] float64, formats.md e.3."""
    out = []
    for j in range(c.hd // 2):
        f = c.rope_theta ** (-2.0 * j / c.hd)
        if c.rope_type == "linear":
            f = f / c.rope_factor
        elif c.rope_type == "llama3":
            wavelen = 2.0 * math.pi / f
            if wavelen > c.rope_orig / c.rope_low:
                f = f / c.rope_factor
            elif wavelen < c.rope_orig / c.rope_high:
                pass
            else:
                smooth = (c.rope_orig / wavelen - c.rope_low) / (c.rope_high - c.rope_low)
                f = (1.0 - smooth) * f / c.rope_factor + smooth * f
        out.append(f)
    return out


def llama3_regimes(c):
    """(#unchanged, #smoothed, #divided) of the llama3 rule, for the summary."""
    n = [0, 0, 0]
    for j in range(c.hd // 2):
        wavelen = 2.0 * math.pi / (c.rope_theta ** (-2.0 * j / c.hd))
        if wavelen > c.rope_orig / c.rope_low:
            n[2] += 1
        elif wavelen < c.rope_orig / c.rope_high:
            n[0] += 1
        else:
            n[1] += 1
    return n


def expected_tensors(c):
    """{name: shape} the checkpoint must hold."""
    t = {"model.embed_tokens.weight": (c.V, c.H), "model.norm.weight": (c.H,)}
    if c.head:
        t[c.head] = (c.n_out, c.H)
    elif not c.tie:
        t["lm_head.weight"] = (c.V, c.H)
    for i in range(c.L):
        p = "model.layers.%d." % i
        t[p + "input_layernorm.weight"] = (c.H,)
        t[p + "post_attention_layernorm.weight"] = (c.H,)
        a = p + "self_attn."
        t[a + "q_proj.weight"] = (c.nh * c.hd, c.H)
        t[a + "k_proj.weight"] = (c.nkv * c.hd, c.H)
        t[a + "v_proj.weight"] = (c.nkv * c.hd, c.H)
        t[a + "o_proj.weight"] = (c.H, c.nh * c.hd)
        if c.qkv_bias:
            t[a + "q_proj.bias"] = (c.nh * c.hd,)
            t[a + "k_proj.bias"] = (c.nkv * c.hd,)
            t[a + "v_proj.bias"] = (c.nkv * c.hd,)
        if c.o_bias:
            t[a + "o_proj.bias"] = (c.H,)
        if c.qk_norm:
            t[a + "q_norm.weight"] = (c.hd,)
            t[a + "k_norm.weight"] = (c.hd,)
        m = p + "mlp."
        t[m + "gate_proj.weight"] = (c.I, c.H)
        t[m + "up_proj.weight"] = (c.I, c.H)
        t[m + "down_proj.weight"] = (c.H, c.I)
        if c.mlp_bias:
            t[m + "gate_proj.bias"] = (c.I,)
            t[m + "up_proj.bias"] = (c.I,)
            t[m + "down_proj.bias"] = (c.H,)
    return t


def ignored_tensor(c, name):
    """ArmoRM's gating network (gating.*, reward_transform_matrix): read, never used, so its gradient is 0."""
    return c.head == "regression_layer.weight" and (name.startswith("gating.") or name == "reward_transform_matrix")


def load_model(folder):
    c = load_config(os.path.join(folder, "config.json"))
    path = os.path.join(folder, "model.safetensors")
    if not os.path.exists(path):
        die("%s: not found (sharded checkpoints are not read here)" % path)
    names, arrays = read_safetensors(path)
    want = expected_tensors(c)
    for n in want:
        if n not in arrays:
            die("%s: tensor %s missing" % (path, n))
        if tuple(arrays[n].shape) != want[n]:
            die("%s: %s has shape %s, expected %s" % (path, n, list(arrays[n].shape), list(want[n])))
    for n in arrays:
        if n not in want and not ignored_tensor(c, n):
            die("%s: unexpected tensor %s" % (path, n))
    params = {n: torch.tensor(arrays[n], dtype=DT) for n in names}
    return c, names, params


# ---------------------------------------------------------------------------
# LoRA adapters (PEFT's format and semantics; see "LoRA adapters" in the docstring)

LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
PEFT_PREFIX = "base_model.model."  # PeftModel(ForCausalLM).base_model (LoraModel).model (the ForCausalLM)


class Lora:
    pass


def lora_module(i, m):
    """The base model's name of target m of layer i (model.layers.i.self_attn.q_proj, model.layers.i.mlp.up_proj)."""
    return "model.layers.%d.%s.%s" % (i, "self_attn" if m in LORA_MODULES[:4] else "mlp", m)


def lora_tensors(c, r, targets):
    """{PEFT name: shape} of an adapter of rank r on targets: A [r, in], B [out, r] with [out, in] the base
    weight's shape; layers in order, targets in LORA_MODULES order within a layer, A before B."""
    base = expected_tensors(c)
    out = {}
    for i in range(c.L):
        for m in LORA_MODULES:
            if m in targets:
                mod = lora_module(i, m)
                o, n = base[mod + ".weight"]
                out[PEFT_PREFIX + mod + ".lora_A.weight"] = (r, n)
                out[PEFT_PREFIX + mod + ".lora_B.weight"] = (o, r)
    return out


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def lora_scale(r, alpha, rslora):
    """PEFT's scaling: lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora."""
    return alpha / math.sqrt(r) if rslora else alpha / r


def read_adapter_config(path):
    """Lora (r, alpha, rslora, targets, scale) of a PEFT adapter_config.json; anything this reference does not
    compute the way PEFT would is refused."""
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (path, e))
    if not isinstance(j, dict):
        die("%s: not a JSON object" % path)
    if j.get("peft_type") != "LORA":
        die("%s: peft_type %r (only \"LORA\" is read)" % (path, j.get("peft_type")))
    lo = Lora()
    lo.r, lo.alpha = j.get("r"), j.get("lora_alpha")
    if not _is_int(lo.r) or lo.r < 1:
        die("%s: r must be a positive integer, not %r" % (path, lo.r))
    if not _is_num(lo.alpha):
        die("%s: lora_alpha must be a finite number, not %r" % (path, lo.alpha))
    lo.rslora = j.get("use_rslora", False)
    if not isinstance(lo.rslora, bool):
        die("%s: use_rslora must be true or false, not %r" % (path, lo.rslora))
    tm = j.get("target_modules")
    if not isinstance(tm, list) or not tm or any(not isinstance(m, str) for m in tm):
        die("%s: target_modules must be a non-empty list of module names (a regex string is not read), not %r"
            % (path, tm))
    bad = [m for m in tm if m not in LORA_MODULES]
    if bad:
        die("%s: target_modules %s: only %s are read" % (path, bad, ", ".join(LORA_MODULES)))
    if len(set(tm)) != len(tm):
        die("%s: target_modules %s names a module twice" % (path, tm))
    lo.targets = list(tm)
    if j.get("bias", "none") != "none":
        die("%s: bias %r (only \"none\": no bias is trained)" % (path, j.get("bias")))
    if j.get("fan_in_fan_out", False) is not False:
        die("%s: fan_in_fan_out %r (only false: A [r, in], B [out, r])" % (path, j.get("fan_in_fan_out")))
    drop = j.get("lora_dropout", 0.0)
    if not _is_num(drop) or drop != 0:
        die("%s: lora_dropout %r: this reference is deterministic and has no dropout; write the adapter with "
            "lora_dropout 0 (it does not change the adapter's tensors, only training)" % (path, drop))
    refused = (("use_dora", "DoRA (use_dora) is not computed"),
               ("layers_to_transform", "every layer must be adapted (layers_to_transform null)"),
               ("rank_pattern", "one r for every module (rank_pattern {})"),
               ("alpha_pattern", "one lora_alpha for every module (alpha_pattern {})"),
               ("modules_to_save", "no trained copies of other modules (modules_to_save null)"),
               ("exclude_modules", "exclude_modules must be null"),
               ("lora_bias", "lora_bias must be false"),
               ("target_parameters", "target_parameters must be null"),
               ("trainable_token_indices", "trainable_token_indices must be null"))
    for key, why in refused:
        if j.get(key):
            die("%s: %s %r: %s" % (path, key, j[key], why))
    tt = j.get("task_type")
    if tt not in (None, "CAUSAL_LM"):
        die("%s: task_type %r (CAUSAL_LM or null: the tensors are named base_model.model.model.layers...)" % (path, tt))
    lo.scale = lora_scale(lo.r, lo.alpha, lo.rslora)
    return lo


def load_adapter(folder, c):
    """(Lora, names in the file's order, {PEFT name: float64 tensor}) of a PEFT LoRA folder on the model c: every
    target of every layer present with the shapes lora_tensors gives, nothing else."""
    if c.head:
        die("%s: adapters are read for causal LMs only (this model is %s)" % (folder, c.arch))
    lo = read_adapter_config(os.path.join(folder, "adapter_config.json"))
    path = os.path.join(folder, "adapter_model.safetensors")
    if not os.path.exists(path):
        die("%s: not found (adapter_model.bin is not read)" % path)
    names, arrays = read_safetensors(path)
    want = lora_tensors(c, lo.r, lo.targets)
    for n, shape in want.items():
        if n not in arrays:
            die("%s: tensor %s missing (every target of every layer is required)" % (path, n))
        if tuple(arrays[n].shape) != shape:
            die("%s: %s has shape %s, expected %s (r %d)" % (path, n, list(arrays[n].shape), list(shape), lo.r))
    for n in names:
        if n not in want:
            die("%s: unexpected tensor %s (targets %s, r %d)" % (path, n, lo.targets, lo.r))
    return lo, names, {n: torch.tensor(arrays[n], dtype=DT) for n in names}


def merged_weights(c, names, params):
    """{base weight name: W + s B A} (float64) for every LoRA target, in the checkpoint's order."""
    out = {}
    for n in names:
        if not n.endswith(".weight"):
            continue
        mod = n[:-len(".weight")]
        if mod.startswith("model.layers.") and mod.rsplit(".", 1)[1] in c.lora.targets:
            A = params[PEFT_PREFIX + mod + ".lora_A.weight"]
            B = params[PEFT_PREFIX + mod + ".lora_B.weight"]
            out[n] = params[n] + c.lora.scale * (B @ A)
    return out


def make_adapter(a):
    """--make-adapter: a seeded non-zero PEFT LoRA folder for the base model --model (see the docstring)."""
    if not a.model or not a.out or a.r is None or a.alpha is None or not a.targets:
        die("--make-adapter needs --model, --out, --r, --alpha and --targets")
    c, _, _ = load_model(a.model)
    if c.head:
        die("--make-adapter: %s is a reward model (%s); adapters are made for causal LMs only" % (a.model, c.arch))
    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    if not targets or len(set(targets)) != len(targets) or any(t not in LORA_MODULES for t in targets):
        die("--targets %r: a comma list of distinct names among %s" % (a.targets, ", ".join(LORA_MODULES)))
    if a.r < 1:
        die("--r must be at least 1")
    if not math.isfinite(a.alpha):
        die("--alpha must be finite")
    alpha = int(a.alpha) if a.alpha == int(a.alpha) else a.alpha
    want = lora_tensors(c, a.r, targets)
    rng = random.Random(a.seed)
    arrays = {}
    for n, shape in want.items():  # layers in order, LORA_MODULES order, A then B; row-major within a tensor
        numel = shape[0] * shape[1]
        if n.endswith(".lora_A.weight"):
            bound = 1.0 / math.sqrt(shape[1])  # kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3), bound sqrt(3/fan_in) gain
            v = [bound * (2.0 * rng.random() - 1.0) for _ in range(numel)]
        else:
            v = []
            for _ in range(numel):  # Box-Muller from random() alone (its stream is fixed across Python versions)
                u1 = 1.0 - rng.random()
                u2 = rng.random()
                v.append(0.3 * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2))
        arrays[n] = np.array(v, dtype=np.float64).reshape(shape)
    cfg = {"alpha_pattern": {}, "auto_mapping": None,
           "base_model_name_or_path": os.path.basename(os.path.normpath(a.model)),
           "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
           "layers_pattern": None, "layers_to_transform": None, "lora_alpha": alpha, "lora_dropout": 0.0,
           "modules_to_save": None, "peft_type": "LORA", "r": a.r, "rank_pattern": {}, "revision": None,
           "target_modules": targets, "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": bool(a.rslora)}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "adapter_config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True))  # as PEFT's save_pretrained writes it (no final newline)
    # the safetensors package writes tensors of one dtype sorted by name; so does this
    write_safetensors(os.path.join(a.out, "adapter_model.safetensors"), sorted(arrays), arrays, {"format": "pt"})
    lo, names, _ = load_adapter(a.out, c)  # reads back what was written
    print("wrote %s: LoRA r %d, alpha %r, scale %.6g (%s), targets %s, %d tensors, %d params (base %s)"
          % (a.out, lo.r, lo.alpha, lo.scale, "alpha/sqrt(r)" if lo.rslora else "alpha/r", ",".join(lo.targets),
             len(names), sum(want[n][0] * want[n][1] for n in names), cfg["base_model_name_or_path"]))
    return 0


# ---------------------------------------------------------------------------
# forward

def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def linear(x, p, name, has_bias, lora=None):
    """x W^T (+ b); on a LoRA target (lora: the adapter's Lora, see load_adapter) plus s (x A^T) B^T, computed as
    PEFT's Linear does: the base output, then lora_B(lora_A(x)) * scaling added to it."""
    y = x @ p[name + ".weight"].t()
    if has_bias:
        y = y + p[name + ".bias"]
    if lora is not None and name.rsplit(".", 1)[1] in lora.targets:
        A = p[PEFT_PREFIX + name + ".lora_A.weight"]
        B = p[PEFT_PREFIX + name + ".lora_B.weight"]
        y = y + ((x @ A.t()) @ B.t()) * lora.scale
    return y


def apply_rope(x, cos, sin):
    """x [T, heads, hd]; cos, sin [T, hd/2].  rotate_half pairing (j, j + hd/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c = cos[:, None, :]
    s = sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def forward(c, p, ids, positions, allowed):
    """Logits [T, V] of one packed sequence (causal LM).

    ids, positions: lists of T ints; allowed: [T, T] bool, allowed[i, j] true
    when token i attends to token j."""
    if c.head:
        die("%s has no LM head (a reward model: its head is %s)" % (c.arch, c.head))
    x = final_hidden(c, p, ids, positions, allowed)
    W = p["model.embed_tokens.weight"] if c.tie else p["lm_head.weight"]
    return x @ W.t()


def final_hidden(c, p, ids, positions, allowed):
    """Hidden states [T, H] after the final RMSNorm (model.norm) of one packed sequence; arguments as forward's."""
    T = len(ids)
    if c.window and T > c.window:
        die("sequence of %d tokens is longer than the sliding window %d" % (T, c.window))
    E = p["model.embed_tokens.weight"]
    inv = torch.tensor(rope_inv_freq(c), dtype=DT)
    ang = torch.tensor(positions, dtype=DT)[:, None] * inv[None, :]
    # cos, sin in the parameters' dtype: float64 here; float32 when bench/bf16_accuracy.py runs this forward on
    # float32 parameters under torch.autocast (float64 tables would promote q, k and the attention to float64)
    cos, sin = torch.cos(ang).to(E.dtype), torch.sin(ang).to(E.dtype)
    x = E[torch.tensor(ids, dtype=torch.long)]
    group = c.nh // c.nkv
    kv_of_head = torch.tensor([h // group for h in range(c.nh)], dtype=torch.long)
    scale = 1.0 / math.sqrt(c.hd)
    neg = torch.tensor(float("-inf"), dtype=DT)
    lora = getattr(c, "lora", None)  # a Config made elsewhere (bench/) may lack the attribute
    for i in range(c.L):
        pre = "model.layers.%d." % i
        a = pre + "self_attn."
        h = rmsnorm(x, p[pre + "input_layernorm.weight"], c.eps)
        q = linear(h, p, a + "q_proj", c.qkv_bias, lora).reshape(T, c.nh, c.hd)
        k = linear(h, p, a + "k_proj", c.qkv_bias, lora).reshape(T, c.nkv, c.hd)
        v = linear(h, p, a + "v_proj", c.qkv_bias, lora).reshape(T, c.nkv, c.hd)
        if c.qk_norm:
            q = rmsnorm(q, p[a + "q_norm.weight"], c.eps)
            k = rmsnorm(k, p[a + "k_norm.weight"], c.eps)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        kh = k[:, kv_of_head, :]  # [T, nh, hd]: query head h reads kv head h // group
        vh = v[:, kv_of_head, :]
        s = torch.einsum("ihd,jhd->hij", q, kh) * scale  # [nh, T, T]
        s = torch.where(allowed[None, :, :], s, neg)
        pa = torch.softmax(s, dim=-1)
        o = torch.einsum("hij,jhd->ihd", pa, vh).reshape(T, c.nh * c.hd)
        x = x + linear(o, p, a + "o_proj", c.o_bias, lora)
        m = pre + "mlp."
        h = rmsnorm(x, p[pre + "post_attention_layernorm.weight"], c.eps)
        g = linear(h, p, m + "gate_proj", c.mlp_bias, lora)
        u = linear(h, p, m + "up_proj", c.mlp_bias, lora)
        x = x + linear(torch.nn.functional.silu(g) * u, p, m + "down_proj", c.mlp_bias, lora)
    return rmsnorm(x, p["model.norm.weight"], c.eps)


def row_logps_separate(c, p, row, lsm_dtype=None):
    """logp_k of one row, each response on its own sequence.

    lsm_dtype: dtype of the log_softmax (None: the logits' own; bench/bf16_accuracy.py asks float32 of bf16 logits)."""
    P = row["prompt_ids"]
    out = []
    for r in row["response_ids"]:
        ids = P + r
        T = len(ids)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
        logits = forward(c, p, ids, list(range(T)), allowed)
        lsm = torch.log_softmax(logits, dim=-1, dtype=lsm_dtype)
        pred = torch.arange(len(P) - 1, T - 1)
        tgt = torch.tensor(r, dtype=torch.long)
        out.append(lsm[pred, tgt].sum())
    return out


def packed_layout(row):
    """(ids, positions, allowed [T, T], starts) of a row packed as prompt + response_1 + ... + response_K: response
    tokens attend to the prompt and to their own earlier tokens, positions continue from P; starts[k] is the packed
    index of response k's first token."""
    P = row["prompt_ids"]
    nP = len(P)
    ids = list(P)
    positions = list(range(nP))
    seg = [-1] * nP  # -1: prompt; k: response k
    starts = []
    for k, r in enumerate(row["response_ids"]):
        starts.append(len(ids))
        ids += r
        positions += list(range(nP, nP + len(r)))
        seg += [k] * len(r)
    T = len(ids)
    segt = torch.tensor(seg)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    same = segt[:, None] == segt[None, :]
    to_prompt = (segt == -1)[None, :].expand(T, T)
    allowed = causal & (same | to_prompt)
    return ids, positions, allowed, starts


def row_logps_shared(c, p, row):
    """logp_k of one row, all K responses packed after one copy of the prompt."""
    nP = len(row["prompt_ids"])
    ids, positions, allowed, starts = packed_layout(row)
    logits = forward(c, p, ids, positions, allowed)
    lsm = torch.log_softmax(logits, dim=-1)
    out = []
    for k, r in enumerate(row["response_ids"]):
        s0 = starts[k]
        pred = torch.tensor([nP - 1] + list(range(s0, s0 + len(r) - 1)), dtype=torch.long)
        tgt = torch.tensor(r, dtype=torch.long)
        out.append(lsm[pred, tgt].sum())
    return out


def reward_head_out(c, p, h_last):
    """Reward vector [n_out] = W_head h_last (h_last: [H], after model.norm)."""
    return h_last @ p[c.head].t()


def row_rewards_separate(c, p, row):
    """[reward vector r_k [n_out] per response], each on its own sequence prompt + response_k (positions 0..T-1,
    plain causal attention), read at its last token."""
    P = row["prompt_ids"]
    out = []
    for r in row["response_ids"]:
        ids = P + r
        T = len(ids)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
        h = final_hidden(c, p, ids, list(range(T)), allowed)
        out.append(reward_head_out(c, p, h[T - 1]))
    return out


def row_rewards_shared(c, p, row):
    """As row_rewards_separate on the packed layout: r_k read at the packed index of response k's last token."""
    ids, positions, allowed, starts = packed_layout(row)
    h = final_hidden(c, p, ids, positions, allowed)
    return [reward_head_out(c, p, h[s0 + len(r) - 1]) for s0, r in zip(starts, row["response_ids"])]


def reward_coefs(c):
    """c_j = 1 / (j + 1), j = 0..n_out-1: the test loss's weight of reward component j."""
    return torch.tensor([1.0 / (j + 1) for j in range(c.n_out)], dtype=DT)


def evaluate(c, p, rows, shared=False, lsm_dtype=None):
    """(L, [[logp_k] per row]) with L = sum w_k logp_k (torch scalar); for a reward model
    (L, [[r_k [n_out]] per row]) with L = sum_k w_k sum_j c_j r_kj."""
    if c.head:
        return evaluate_rewards(c, p, rows, shared)
    L = torch.zeros((), dtype=DT)
    all_lp = []
    for row in rows:
        lps = row_logps_shared(c, p, row) if shared else row_logps_separate(c, p, row, lsm_dtype)
        for w, lp in zip(row["weights"], lps):
            L = L + w * lp
        all_lp.append(lps)
    return L, all_lp


def evaluate_rewards(c, p, rows, shared=False):
    coef = reward_coefs(c)
    L = torch.zeros((), dtype=DT)
    all_r = []
    for row in rows:
        rs = row_rewards_shared(c, p, row) if shared else row_rewards_separate(c, p, row)
        for w, r in zip(row["weights"], rs):
            L = L + w * (coef * r).sum()
        all_r.append(rs)
    return L, all_r


def loss_and_grads(c, names, params, rows, shared=False, autocast=False):
    """autocast: float32 parameters, the forward under torch.autocast("cpu", bfloat16) with the log_softmax in
    float32 (logits.float(), as a careful user writes it), the backward outside it.  A reward model's head runs
    under autocast too (bf16 matmul, bf16 rewards, as transformers' score / regression_layer Linear does).  With an
    adapter (c.lora) its products run under autocast too (bf16 matmuls, as PEFT's lora_A / lora_B Linears do).
    Only the tensors of names get a gradient: all of the checkpoint's, or with an adapter its A and B (the base
    frozen)."""
    want = set(names)
    p = {n: t.detach().clone().requires_grad_(n in want) for n, t in params.items()}
    if autocast:
        p = {n: t.detach().float().requires_grad_(n in want) for n, t in params.items()}
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        L, lps = evaluate(c, p, rows, shared, torch.float32 if autocast else None)
    L.backward()
    grads = {}
    for n in names:
        g = p[n].grad
        grads[n] = torch.zeros_like(p[n]) if g is None else g.detach()
    if c.head:  # [[[r_k0, ..., r_k(n_out-1)] per response] per row]
        return float(L), [[[float(x) for x in rk] for rk in r] for r in lps], grads
    logps = [[float(x) for x in r] for r in lps]
    return float(L), logps, grads


# ---------------------------------------------------------------------------
# rows

def read_rows(path, c):
    rows = []
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            P, R, W = r.get("prompt_ids"), r.get("response_ids"), r.get("weights")
            where = "%s:%d" % (path, ln)
            if not isinstance(P, list) or len(P) < 1:
                die("%s: prompt_ids must hold at least 1 token (the first response token is scored by it)" % where)
            if not isinstance(R, list) or len(R) < 1 or any(not isinstance(x, list) or len(x) < 1 for x in R):
                die("%s: response_ids must be a non-empty list of non-empty lists" % where)
            if not isinstance(W, list) or len(W) != len(R):
                die("%s: weights must have one entry per response" % where)
            for t in P + [t for x in R for t in x]:
                if not isinstance(t, int) or not 0 <= t < c.V:
                    die("%s: token id %r outside [0, %d)" % (where, t, c.V))
            rows.append({"prompt_ids": P, "response_ids": R, "weights": [float(w) for w in W]})
    if not rows:
        die("%s: no rows" % path)
    return rows


def make_rows(vocab, seed, avoid=None):
    """4 rows, K = 1, 2, 4, 2; prompt lengths 1..9 (1 and 9 both present),
    response lengths 1..7 (a 1-token and a 7-token response present),
    ids uniform in [0, vocab), weights uniform in [-1, 1] rounded to 6 places.
    avoid (a reward model's pad_token_id, or None): ids uniform over [0, vocab) minus that id (the same draws, ids
    from avoid up shifted by one), so that transformers' pooling at the last token that is not the pad id reads
    the last token."""
    rng = random.Random(seed)
    skip = avoid is not None and 0 <= avoid < vocab

    def tok():
        if not skip:
            return rng.randrange(vocab)
        t = rng.randrange(vocab - 1)
        return t + (t >= avoid)

    Ks = [1, 2, 4, 2]
    Ps = [rng.randint(2, 8) for _ in Ks]
    Ps[0], Ps[2] = 1, 9
    rng.shuffle(Ps)
    rows = []
    for K, nP in zip(Ks, Ps):
        lens = [rng.randint(1, 7) for _ in range(K)]
        rows.append({"prompt_ids": [tok() for _ in range(nP)],
                     "response_ids": [[tok() for _ in range(n)] for n in lens],
                     "weights": [round(rng.uniform(-1.0, 1.0), 6) for _ in range(K)]})
    rows[2]["response_ids"][1] = rows[2]["response_ids"][1][:1]     # a 1-token response
    rows[2]["response_ids"][3] = [tok() for _ in range(7)]  # a 7-token one
    return rows


# ---------------------------------------------------------------------------
# checks

def flat(x):
    """The numbers of a nested list, in order."""
    return [z for y in x for z in flat(y)] if isinstance(x, list) else [x]


def shared_prefix_check(c, names, params, rows, L, logps, grads):
    """logps: the log-probs, or for a reward model the reward vectors."""
    L2, logps2, grads2 = loss_and_grads(c, names, params, rows, shared=True)
    dlp = max(abs(a - b) for a, b in zip(flat(logps), flat(logps2)))
    dg = 0.0
    for n in names:
        dg = max(dg, float((grads[n] - grads2[n]).abs().max()))
    dL = abs(L - L2)
    ok = dlp <= 1e-12 and dL <= 1e-12 and dg <= 1e-12
    print("shared-prefix vs separate: max |d%s| %.3g, |dL| %.3g, max |dgrad| %.3g -> %s"
          % ("reward" if c.head else "logp", dlp, dL, dg, "OK" if ok else "FAIL"))
    return ok


def fd_check(c, names, params, rows, grads, seed, per_tensor=2):
    """Central differences of L, Richardson-extrapolated (h, h/2), against autograd."""
    rng = random.Random(seed)
    used = sorted({t for r in rows for t in r["prompt_ids"] + [x for y in r["response_ids"] for x in y]})
    h = 1e-3

    def L_at(name, idx, delta):
        p = dict(params)
        t = params[name].clone()
        t.view(-1)[idx] += delta
        p[name] = t
        with torch.no_grad():
            return float(evaluate(c, p, rows)[0])

    worst_abs = worst_rel = 0.0
    n = 0
    for name in names:
        t = params[name]
        for _ in range(per_tensor):
            if name == "model.embed_tokens.weight":
                idx = rng.choice(used) * c.H + rng.randrange(c.H)
            else:
                idx = rng.randrange(t.numel())
            d1 = (L_at(name, idx, h) - L_at(name, idx, -h)) / (2 * h)
            d2 = (L_at(name, idx, h / 2) - L_at(name, idx, -h / 2)) / h
            fd = (4 * d2 - d1) / 3
            ad = float(grads[name].reshape(-1)[idx])
            err = abs(fd - ad)
            worst_abs = max(worst_abs, err)
            worst_rel = max(worst_rel, err / max(abs(ad), 1e-2))
            n += 1
    ok = worst_rel <= 1e-7
    print("finite differences: %d parameters, max |fd - autograd| %.3g, max rel %.3g -> %s"
          % (n, worst_abs, worst_rel, "OK" if ok else "FAIL"))
    return ok


def write_values(path, c, rows, values):
    """logps.jsonl: {"logps": [K], "n_tokens": [R_k]} per row; for a reward model rewards.jsonl:
    {"rewards": [[n_out] per response], "n_tokens": [P + R_k]} per row.  Floats as json.dumps prints them."""
    with open(path, "w") as f:
        for r, v in zip(rows, values):
            if c.head:
                line = {"rewards": v, "n_tokens": [len(r["prompt_ids"]) + len(x) for x in r["response_ids"]]}
            else:
                line = {"logps": v, "n_tokens": [len(x) for x in r["response_ids"]]}
            f.write(json.dumps(line) + "\n")


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="model folder (config.json + model.safetensors)")
    ap.add_argument("--rows", help="rows JSONL")
    ap.add_argument("--out", help="output folder (or rows file with --make-rows)")
    ap.add_argument("--shared-prefix", action="store_true",
                    help="also evaluate with one shared prompt copy per row and assert equality to 1e-12")
    ap.add_argument("--check", action="store_true", help="finite-difference check of the gradients")
    ap.add_argument("--make-rows", action="store_true", help="write seeded test rows for --config to --out")
    ap.add_argument("--config", help="config.json (for --make-rows: the vocabulary size)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--autocast-bf16", action="store_true",
                    help="also write PyTorch autocast bf16's log-probs (or rewards) and gradients "
                         "(logps_autocast_bf16.jsonl or rewards_autocast_bf16.jsonl, grads_autocast_bf16.safetensors): "
                         "what PyTorch's own reduced precision gets on these inputs")
    ap.add_argument("--adapter", help="PEFT LoRA folder (adapter_config.json + adapter_model.safetensors) applied "
                                      "to --model; the gradients are then those of its tensors (the base frozen)")
    ap.add_argument("--merge-out", metavar="FILE",
                    help="with --adapter: write FILE.safetensors (FILE as given when it ends in .safetensors), "
                         "W + s B A in F32 for every target weight under the base's name")
    ap.add_argument("--make-adapter", action="store_true",
                    help="write a seeded non-zero PEFT LoRA folder for --model to --out (--seed, --r, --alpha, "
                         "--targets, --rslora)")
    ap.add_argument("--r", type=int, help="--make-adapter: LoRA rank")
    ap.add_argument("--alpha", type=float, help="--make-adapter: lora_alpha")
    ap.add_argument("--targets", help="--make-adapter: comma list among " + ",".join(LORA_MODULES))
    ap.add_argument("--rslora", action="store_true", help="--make-adapter: use_rslora (scale alpha / sqrt(r))")
    a = ap.parse_args()

    if a.make_adapter:
        return make_adapter(a)

    if a.make_rows:
        if not a.config or not a.out:
            die("--make-rows needs --config and --out")
        c = load_config(a.config)
        rows = make_rows(c.V, a.seed, c.pad if c.head else None)
        with open(a.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        print("wrote %s: %d rows, K %s, prompt lengths %s, response lengths %s"
              % (a.out, len(rows), [len(r["response_ids"]) for r in rows],
                 [len(r["prompt_ids"]) for r in rows], [[len(x) for x in r["response_ids"]] for r in rows]))
        return 0

    if not a.model or not a.rows or not a.out:
        die("--model, --rows and --out are required")
    c, names, params = load_model(a.model)
    base_names = names
    if a.merge_out and not a.adapter:
        die("--merge-out needs --adapter")
    if a.adapter:
        c.lora, names, aparams = load_adapter(a.adapter, c)
        params.update(aparams)  # the base's tensors and the adapter's; gradients for the adapter's (names) only
    rows = read_rows(a.rows, c)
    L, logps, grads = loss_and_grads(c, names, params, rows)

    os.makedirs(a.out, exist_ok=True)
    stem = "rewards" if c.head else "logps"
    write_values(os.path.join(a.out, stem + ".jsonl"), c, rows, logps)
    write_safetensors(os.path.join(a.out, "grads.safetensors"), names,
                      {n: grads[n].numpy() for n in names}, {"format": "pt", "loss": repr(L)})

    if a.autocast_bf16:
        La, logps_a, grads_a = loss_and_grads(c, names, params, rows, autocast=True)
        write_values(os.path.join(a.out, stem + "_autocast_bf16.jsonl"), c, rows, logps_a)
        write_safetensors(os.path.join(a.out, "grads_autocast_bf16.safetensors"), names,
                          {n: grads_a[n].double().numpy() for n in names}, {"format": "pt", "loss": repr(La)})

    if a.merge_out:
        merged = merged_weights(c, base_names, params)
        mpath = a.merge_out if a.merge_out.endswith(".safetensors") else a.merge_out + ".safetensors"
        write_safetensors(mpath, list(merged), {n: t.numpy() for n, t in merged.items()}, {"format": "pt"})

    gnorm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    extra = ""
    if c.rope_type == "llama3":
        extra = ", llama3 regimes (unchanged, smoothed, /factor) = %s" % (llama3_regimes(c),)
    if c.lora:
        lo = c.lora
        print("%s on %s: %s, LoRA r %d, alpha %r, scale %.6g (%s), targets %s, %d adapter params in %d tensors "
              "(base frozen: %d params)"
              % (a.adapter, a.model, c.type, lo.r, lo.alpha, lo.scale, "alpha/sqrt(r)" if lo.rslora else "alpha/r",
                 ",".join(lo.targets), sum(params[n].numel() for n in names), len(names),
                 sum(params[n].numel() for n in base_names)))
    if c.head:
        ntok = sum(len(r["prompt_ids"]) + len(x) for r in rows for x in r["response_ids"])
        allr = flat(logps)
        print("%s: %s %s (head %s [%d, %d]), %d params in %d tensors, %d rows, %d responses, %d tokens%s"
              % (a.model, c.type, c.arch, c.head, c.n_out, c.H, sum(params[n].numel() for n in base_names),
                 len(base_names), len(rows), sum(len(r) for r in logps), ntok, extra))
        print("  reward range [%.6g, %.6g], mean %.6g" % (min(allr), max(allr), sum(allr) / len(allr)))
    else:
        ntok = sum(len(x) for r in rows for x in r["response_ids"])
        allp = [x for r in logps for x in r]
        print("%s: %s, %d params in %d tensors, %d rows, %d responses, %d scored tokens%s"
              % (a.model, c.type, sum(params[n].numel() for n in base_names), len(base_names), len(rows),
                 len(allp), ntok, extra))
        print("  logp range [%.6g, %.6g], mean per token %.6g (uniform: %.6g)"
              % (min(allp), max(allp), sum(allp) / ntok, -math.log(c.V)))
    print("  L = %r, |dL/dtheta| = %.6g, max |g| = %.6g"
          % (L, gnorm, max(float(g.abs().max()) for g in grads.values())))
    if c.lora:
        for ab in ("A", "B"):
            gs = [grads[n] for n in names if n.endswith(".lora_%s.weight" % ab)]
            print("  |dL/d%s| = %.6g over %d tensors, max |g| = %.6g"
                  % (ab, math.sqrt(sum(float((g * g).sum()) for g in gs)), len(gs),
                     max(float(g.abs().max()) for g in gs)))
        if a.autocast_bf16:
            print("  autocast bf16: L = %r, |dL/dtheta| = %.6g"
                  % (La, math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads_a.values()))))
    ok = True
    if a.shared_prefix:
        ok &= shared_prefix_check(c, names, params, rows, L, logps, grads)
    if a.check:
        seed = sum(ord(ch) for ch in os.path.basename(os.path.normpath(a.model)))
        if c.lora:
            seed += sum(ord(ch) for ch in os.path.basename(os.path.normpath(a.adapter)))
        ok &= fd_check(c, names, params, rows, grads, seed, per_tensor=3 if c.lora else 2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
