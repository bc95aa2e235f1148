#!/usr/bin/python3
"""A random BF16 Hugging Face folder of any size, written one tensor at a time.

`ppa init` builds every tensor in float32 before it writes (29 GB for a 7B
model), so the 7B-shaped folders of the bf16 benchmarks come from here:
config.json as given (torch_dtype bfloat16), model.safetensors with the
tensors a Llama / Mistral / Qwen2 config needs (the names and shapes of
shared/spec/formats.md e.2), matrices ~ N(0, std) rounded to bf16 (nearest
even), RMSNorm weights 1, biases 0. numpy only (no torch); seeded.

    /usr/bin/python3 bench/make_bf16_folder.py --config bench/configs/mistral_7b.json --out DIR [--std 0.02]
"""
import argparse
import json
import os
import sys

import numpy as np


def tensors(c):
    """(name, shape, kind) in the order transformers saves them."""
    H, I, V, L = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or H // nh
    qkv_bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)
    out = [("model.embed_tokens.weight", (V, H), "m")]
    for i in range(L):
        p = "model.layers.%d." % i
        out.append((p + "input_layernorm.weight", (H,), "n"))
        for proj, rows in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
            out.append((p + "self_attn.%s.weight" % proj, (rows, H), "m"))
            if qkv_bias:
                out.append((p + "self_attn.%s.bias" % proj, (rows,), "b"))
        out.append((p + "self_attn.o_proj.weight", (H, nh * hd), "m"))
        out.append((p + "post_attention_layernorm.weight", (H,), "n"))
        out.append((p + "mlp.gate_proj.weight", (I, H), "m"))
        out.append((p + "mlp.up_proj.weight", (I, H), "m"))
        out.append((p + "mlp.down_proj.weight", (H, I), "m"))
    out.append(("model.norm.weight", (H,), "n"))
    if not c.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", (V, H), "m"))
    return out


def to_bf16(x):
    """float32 array -> uint16 bf16 bits, round to nearest even"""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with open(a.config) as f:
        c = json.load(f)
    if os.path.exists(a.out):
        sys.exit("make_bf16_folder: %s exists" % a.out)
    os.makedirs(a.out)
    c = dict(c, torch_dtype="bfloat16")
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    ts = tensors(c)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in ts:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    rng = np.random.default_rng(a.seed)
    path = os.path.join(a.out, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name, shape, kind in ts:
            n = int(np.prod(shape))
            if kind == "m":
                step = 1 << 24  # 16M values at a time: bounded memory
                for i0 in range(0, n, step):
                    f.write(to_bf16(rng.standard_normal(min(step, n - i0), dtype=np.float32) * a.std).tobytes())
            else:
                f.write(to_bf16(np.full(n, 1.0 if kind == "n" else 0.0, dtype=np.float32)).tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.rename(path + ".tmp", path)
    print("%s: %d tensors, %.2f B parameters, %.2f GB" % (a.out, len(ts), off / 2e9, off / 1e9))


if __name__ == "__main__":
    main()
