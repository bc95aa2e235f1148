#!/usr/bin/python3
"""A random reward-model folder for engine_ref.py, written without ppa.

Writes OUT/config.json (the config, as given) and OUT/model.safetensors: F32 tensors in the
HF checkpoint order (model.embed_tokens, then per layer input_layernorm, q/k/v (+ bias) and o
projections, post_attention_layernorm, gate/up/down, then model.norm, then the head:
score.weight [num_labels, H] for *ForSequenceClassification, regression_layer.weight
[num_objectives, H] for LlamaForRewardModelWithGating).  No lm_head, whatever
tie_word_embeddings says.  Entries ~ N(0, std^2), RMSNorm weights 1 + N(0, std^2), as
`ppa init --init-std STD --init-all` draws them (not the same numbers: numpy's generator,
seeded by --seed).  --with-gating adds stand-ins for ArmoRM's gating network
(gating.layers.*, reward_transform_matrix), which the reference reads and never uses.

The tensor names are spelled out here, not taken from engine_ref.py, so a folder written by
this script checks the reference's expectations.  It exists to test engine_ref.py's reward
mode before `ppa init` writes reward models; the committed goldens come from ppa init folders.

    /usr/bin/python3 tests/ref/make_reward_folder.py --config C.json --out DIR [--seed N]
        [--std 0.3] [--with-gating]
"""

import argparse
import json
import os
import struct
import sys

import numpy as np


def die(msg):
    sys.stderr.write("make_reward_folder: %s\n" % msg)
    sys.exit(2)


def tensors(j, gating):
    """[(name, shape)] in checkpoint order."""
    V, H, I = j["vocab_size"], j["hidden_size"], j["intermediate_size"]
    nh = j["num_attention_heads"]
    nkv = j.get("num_key_value_heads") or nh
    hd = j.get("head_dim") or H // nh
    mt = j["model_type"]
    if mt not in ("llama", "mistral", "qwen2"):
        die("model_type %r (llama, mistral, qwen2)" % mt)
    arch = j["architectures"][0]
    qkv_bias = mt == "qwen2" or (mt == "llama" and j.get("attention_bias", False))
    o_bias = mt == "llama" and j.get("attention_bias", False)
    mlp_bias = mt == "llama" and j.get("mlp_bias", False)
    out = [("model.embed_tokens.weight", (V, H))]
    for i in range(j["num_hidden_layers"]):
        p = "model.layers.%d." % i
        out.append((p + "input_layernorm.weight", (H,)))
        for proj, rows in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
            out.append((p + "self_attn.%s.weight" % proj, (rows, H)))
            if qkv_bias:
                out.append((p + "self_attn.%s.bias" % proj, (rows,)))
        out.append((p + "self_attn.o_proj.weight", (H, nh * hd)))
        if o_bias:
            out.append((p + "self_attn.o_proj.bias", (H,)))
        out.append((p + "post_attention_layernorm.weight", (H,)))
        for proj, shape in (("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))):
            out.append((p + "mlp.%s.weight" % proj, shape))
            if mlp_bias:
                out.append((p + "mlp.%s.bias" % proj, shape[:1]))
    out.append(("model.norm.weight", (H,)))
    if arch.endswith("ForSequenceClassification"):
        n = len(j["id2label"]) if "id2label" in j else j["num_labels"]
        out.append(("score.weight", (n, H)))
    elif arch == "LlamaForRewardModelWithGating":
        n = j["num_objectives"]
        out.append(("regression_layer.weight", (n, H)))
        if gating:
            out += [("gating.layers.0.weight", (8, H)), ("gating.layers.0.bias", (8,)),
                    ("gating.layers.1.weight", (n, 8)), ("reward_transform_matrix", (n, 3))]
    else:
        die("architectures[0] %r is not a reward model" % arch)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--std", type=float, default=0.3)
    ap.add_argument("--with-gating", action="store_true")
    a = ap.parse_args()
    with open(a.config) as f:
        text = f.read()
    j = json.loads(text)
    rng = np.random.RandomState(a.seed)
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, shape in tensors(j, a.with_gating):
        x = rng.standard_normal(shape) * a.std
        if name.endswith("norm.weight"):
            x += 1.0
        b = np.ascontiguousarray(x, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    print("wrote %s: %d tensors, %d parameters" % (a.out, len(header) - 1, off // 4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
