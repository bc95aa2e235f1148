#!/usr/bin/python3
"""Plain-math reference for rope_inv_freq (no torch, no numpy).

Computes RoPE inverse frequencies with the llama3 rule of formats.md e.3,
written from the spec text, and prints the values test_config.c pins:
    /usr/bin/python3 tests/ref/config_rope_ref.py

inv_freq_j = 1 / theta^(2j/hd); wavelen = 2 pi / inv_freq_j;
  wavelen > orig/low  -> inv_freq / factor
  wavelen < orig/high -> inv_freq
  otherwise smooth = (orig/wavelen - low)/(high - low),
            inv = (1 - smooth) inv_freq/factor + smooth inv_freq
"""
import math


def llama3_inv_freq(theta, hd, factor, low, high, orig):
    out = []
    for j in range(hd // 2):
        f = 1.0 / theta ** (2 * j / hd)
        wavelen = 2 * math.pi / f
        if wavelen > orig / low:
            f = f / factor
        elif not wavelen < orig / high:
            smooth = (orig / wavelen - low) / (high - low)
            f = (1 - smooth) * f / factor + smooth * f
        out.append(f)
    return out


CASES = {
    # name: (theta, head_dim, factor, low, high, orig, [j...])
    "llama31_8b": (500000.0, 128, 8.0, 1.0, 4.0, 8192, [0, 1, 10, 27, 28, 29, 30, 32, 34, 35, 36, 50, 63]),
    "llama32_1b": (500000.0, 64, 32.0, 1.0, 4.0, 8192, [0, 13, 14, 15, 16, 17, 18, 31]),
}

for name, (theta, hd, factor, low, high, orig, js) in CASES.items():
    inv = llama3_inv_freq(theta, hd, factor, low, high, orig)
    print(f"/* {name}: theta {theta:g}, head_dim {hd}, factor {factor:g}, low {low:g}, high {high:g}, orig {orig} */")
    print("{" + ", ".join(f"{{{j}, {inv[j]!r}}}" for j in js) + "}")
