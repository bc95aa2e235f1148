#!/usr/bin/env python3
"""PyTorch's LM-head log-probs beside the CUDA module's (scripts/test-cuda.sh, after test_cuda --bench DIR).

For each model of DIR/meta.json (Qwen2-0.5B, Llama-3.1-8B; 8 lists of K = 8, P = R = 256: n = 16,384 targets):
what a PyTorch user writes, logits = x[src] @ W^T in bf16 (float32 accumulation inside, a bf16 [n, V] result),
then log_softmax(logits.float()).gather(tgt), timed forward and forward + backward (sum of g * logp) with CUDA
events, median of 5 after a warm-up, beside test_cuda's own times from meta.json. Qwen2-0.5B runs on the very
inputs test_cuda used (DIR/x.f32, W.bf16, src.i32, tgt.i32), and test_cuda's log-probs (logp.f64) are compared
with a float32-accumulated reference (bf16 operands widened, TF32 off, computed in row chunks): the worst
difference must stay below 2e-2 (a sanity check of the comparison itself: test_cuda checks the kernel's bound;
PyTorch's own bf16 logits err by about 1e-2 at these magnitudes). Llama-3.1-8B's inputs are drawn here (its
weights are not written to disk). Closing line: "cuda_lmhead_torch: N passed, N failed"; without torch or a GPU it
says SKIP and passes. PPA_TORCH_DEVICE=cpu runs it on the CPU (a check of this script on test_cuda --bench-tiny's
dump; the times then mean nothing)."""
import json
import os
import sys
import time


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"cuda_lmhead_torch: SKIP ({e})")
        print("cuda_lmhead_torch: 0 passed, 0 failed")
        return 0
    cuda = os.environ.get("PPA_TORCH_DEVICE", "cuda") == "cuda"
    if cuda and not torch.cuda.is_available():
        print("cuda_lmhead_torch: SKIP (torch sees no GPU)")
        print("cuda_lmhead_torch: 0 passed, 0 failed")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda" if cuda else "cpu")
    meta = json.load(open(os.path.join(d, "meta.json")))
    passed = failed = 0
    rows = []

    def timed(fn, reps=5):
        fn()
        ts = []
        for _ in range(reps):
            if cuda:
                torch.cuda.synchronize()
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b))
            else:
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e3)
        ts.sort()
        return ts[len(ts) // 2]

    for m in meta["models"]:
        n, T, H, V = m["n"], m["T"], m["H"], m["V"]
        if m["files"]:
            x = torch.from_numpy(np.fromfile(os.path.join(d, "x.f32"), dtype=np.float32).reshape(T, H)).to(dev)
            Wraw = np.fromfile(os.path.join(d, "W.bf16"), dtype=np.int16).reshape(V, H)
            W = torch.from_numpy(Wraw).to(dev).view(torch.bfloat16)
            src = torch.from_numpy(np.fromfile(os.path.join(d, "src.i32"), dtype=np.int32).astype(np.int64)).to(dev)
            tgt = torch.from_numpy(np.fromfile(os.path.join(d, "tgt.i32"), dtype=np.int32).astype(np.int64)).to(dev)
            g = torch.from_numpy(np.fromfile(os.path.join(d, "g.f64"), dtype=np.float64)).to(dev).float()
            ours = torch.from_numpy(np.fromfile(os.path.join(d, "logp.f64"), dtype=np.float64)).to(dev)
        else:
            gen = torch.Generator(device=dev).manual_seed(5)
            x = torch.rand(T, H, device=dev, generator=gen) * 2 - 1
            W = ((torch.rand(V, H, device=dev, generator=gen) * 2 - 1) * 0.05).bfloat16()
            src = torch.randint(0, T, (n,), device=dev, generator=gen)
            tgt = torch.randint(0, V, (n,), device=dev, generator=gen)
            g = torch.rand(n, device=dev, generator=gen) + 0.1
            ours = None
        xs = x[src].bfloat16()

        def fwd():
            logits = xs @ W.t()
            return torch.log_softmax(logits.float(), dim=-1).gather(1, tgt[:, None])[:, 0]

        xg, Wg = xs.clone().requires_grad_(True), W.clone().requires_grad_(True)

        def fwd_bwd():
            logits = xg @ Wg.t()
            lp = torch.log_softmax(logits.float(), dim=-1).gather(1, tgt[:, None])[:, 0]
            (lp * g).sum().backward()
            xg.grad = None
            Wg.grad = None

        with torch.no_grad():
            tf = timed(fwd)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        tfb = timed(fwd_bwd)
        peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0
        line = dict(name=m["name"], n=n, V=V, H=H, ours_fwd=m["ours_fwd_ms"], torch_fwd=tf,
                    ours_fb=m["ours_fwd_ms"] + m["ours_bwd_ms"], torch_fb=tfb, peak=peak)
        if ours is not None:
            with torch.no_grad():
                ref = torch.empty(n, dtype=torch.float64, device=dev)
                tb = torch.empty(n, dtype=torch.float64, device=dev)
                Wf = W.float()
                for i in range(0, n, 1024):
                    lg = xs[i:i + 1024].float() @ Wf.t()
                    ref[i:i + 1024] = torch.log_softmax(lg.double(), dim=-1).gather(1, tgt[i:i + 1024, None])[:, 0]
                tb = fwd().double()
                diff = (ours - ref).abs().max().item()
                tdiff = (tb - ref).abs().max().item()
            ok = diff < 2e-2
            passed += ok
            failed += not ok
            line["diff"] = diff
            print(f"{m['name']}: max |test_cuda logp - float32-accumulated reference| = {diff:.3g} "
                  f"(PyTorch's bf16-logits path: {tdiff:.3g}){'' if ok else '  FAIL: over 2e-2'}")
        rows.append(line)
        del x, W, xs, xg, Wg
        if cuda:
            torch.cuda.empty_cache()

    where = torch.cuda.get_device_name() if cuda else "CPU"
    print(f"\nLM-head log-probs, n targets of a vocabulary V (torch {torch.__version__}, {where})")
    print(f"{'model':14} {'n':>6} {'V':>7} {'ours fwd ms':>12} {'torch fwd ms':>13} {'x':>6} "
          f"{'ours f+b ms':>12} {'torch f+b ms':>13} {'x':>6} {'torch peak GiB':>15}")
    for r in rows:
        print(f"{r['name']:14} {r['n']:6d} {r['V']:7d} {r['ours_fwd']:12.3f} {r['torch_fwd']:13.3f} "
              f"{r['torch_fwd'] / r['ours_fwd']:6.2f} {r['ours_fb']:12.3f} {r['torch_fb']:13.3f} "
              f"{r['torch_fb'] / r['ours_fb']:6.2f} {r['peak']:15.1f}")
    print(f"cuda_lmhead_torch: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
