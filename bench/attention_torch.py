#!/usr/bin/env python3
"""attention_torch.py: PyTorch's scaled_dot_product_attention on the plain causal shapes that
tests/cuda/test_attention times ("<model> causal T<T>": one row of T tokens, no responses), so the two can be
read side by side from one run on the same GPU:

    build/cuda-tests/test_attention | grep TABLE
    python3 bench/attention_torch.py

bf16 q, k, v of batch 1 with NH query heads, is_causal=True, the default backend choice; k and v are repeated to
NH heads first (transformers' repeat_kv for SDPA), outside the timed region. One line per shape: the forward
(under no_grad) and the backward (torch.autograd.grad of out with a random dout; its forward outside the timed
region), each the median of --reps CUDA-event timings after warm-ups. FLOPs as test_attention counts them: the
visible (query, key) pairs of a head, T (T + 1) / 2, times 4 HS NH for the forward and 10 HS NH for the backward.
--backends adds a line for each of FLASH_ATTENTION, CUDNN_ATTENTION and EFFICIENT_ATTENTION forced (skipped
where PyTorch refuses it). Without torch or without a CUDA device it says SKIP and exits 0.
"""
import argparse
import statistics
import sys

SHAPES = [  # name, NH, NKV, HS (test_attention's plain causal shapes)
    ("qwen2-0.5b", 14, 2, 64),
    ("llama-3.1-8b", 32, 8, 128),
]
LENGTHS = (2048, 4096)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20, help="timed runs per measurement (median reported)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--backends", action="store_true", help="also time each SDPA backend forced")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("attention_torch: SKIP (no torch)")
        return 0
    if not torch.cuda.is_available():
        print("attention_torch: SKIP (no CUDA device)")
        return 0
    dev = torch.device("cuda")
    print(f"attention_torch: torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, reps {args.reps}")

    def timed(fn):
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        ms = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b))
        return statistics.median(ms)

    def measure(q, k, v, dout):
        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=True)

        t_f = timed(fwd)
        qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, v))
        bwd_ms = []
        for i in range(args.warmup + args.reps):  # a fresh forward each time, outside the timed region
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.autograd.grad(out, (qg, kg, vg), dout)
            b.record()
            b.synchronize()
            if i >= args.warmup:
                bwd_ms.append(a.elapsed_time(b))
        return t_f, statistics.median(bwd_ms)

    backends = []
    if args.backends:
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
                if hasattr(SDPBackend, name):
                    backends.append((name, getattr(SDPBackend, name)))
        except ImportError:
            print("attention_torch: no torch.nn.attention.sdpa_kernel: --backends ignored")

    torch.manual_seed(0)
    for model, NH, NKV, HS in SHAPES:
        for T in LENGTHS:
            q = torch.randn(1, NH, T, HS, device=dev, dtype=torch.bfloat16)
            k = torch.randn(1, NKV, T, HS, device=dev, dtype=torch.bfloat16).repeat_interleave(NH // NKV, dim=1)
            v = torch.randn(1, NKV, T, HS, device=dev, dtype=torch.bfloat16).repeat_interleave(NH // NKV, dim=1)
            dout = torch.randn(1, NH, T, HS, device=dev, dtype=torch.bfloat16)
            pairs = T * (T + 1) / 2
            fl_f, fl_b = 4.0 * HS * NH * pairs, 10.0 * HS * NH * pairs
            runs = [("default", None)] + backends
            for label, be in runs:
                try:
                    if be is None:
                        tf, tb = measure(q, k, v, dout)
                    else:
                        with sdpa_kernel(be):
                            tf, tb = measure(q, k, v, dout)
                except RuntimeError as e:
                    print(f"TORCH sdpa {label:>19} {model} causal T{T}: not available ({str(e).splitlines()[0][:80]})")
                    continue
                print(f"TORCH sdpa {label:>19} {model + ' causal T' + str(T):<28} NH {NH:2d} NKV {NKV} HS {HS:3d} | "
                      f"fwd {tf:9.4f} ms {fl_f / tf / 1e9:7.2f} TFLOP/s | bwd {tb:9.4f} ms {fl_b / tb / 1e9:7.2f} TFLOP/s",
                      flush=True)
            del q, k, v, dout
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
