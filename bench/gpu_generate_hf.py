#!/usr/bin/env python3
"""The GPU generation benchmark's Hugging Face side (bench/gpu_generate.sh runs it): the model folder of a real shape
with random weights (gpu_train_hf.py's shapes and writer), prompts of random token ids as pre-tokenized JSON Lines rows
({"prompt_ids": [...]}) that ppa generate and this script both read, and transformers' `generate` on them the way
../shared/bench/gpu_anchor_hf.py measured it (its gen_bench): bf16 weights, sdpa, a batch of equal-length prompts,
do_sample=True, temperature 1, top_p 0.9, top_k 0 (transformers' default top-k of 50 off, as ppa has none),
max_new_tokens = min_new_tokens = NEW, eos_token_id None: every sequence makes exactly NEW tokens; one warm-up call,
then REPS timed calls, the fastest kept (the anchor's min), new tokens/s = batch x NEW / seconds. The clock spans the
whole call: prefill, the decoding steps, sampling.

  gpu_generate_hf.py make SHAPE DIR PROMPTS.jsonl N    N prompts (seeded), and the folder written by transformers
                                                       (gpu_train_hf.py make); without transformers:
                                                       DIR.config.json for ppa init, exit 3
  gpu_generate_hf.py noeos DIR                         eos_token_id null in DIR's config.json (ppa then has no stop
                                                       id: its responses run to --max-new-tokens) and
                                                       generation_config.json
  gpu_generate_hf.py time SHAPE DIR PROMPTS.jsonl NEW REPS BATCH [BATCH ...]
                                                       one JSON line per batch (its first BATCH prompts); without
                                                       torch or transformers one "skipped" line per batch, exit 77;
                                                       NUM_RETURN=K: num_return_sequences=K (K samples a prompt,
                                                       the listwise data job)
  gpu_generate_hf.py ppa-bench SHAPE BATCH K NEW BENCH.json [SMI_GIB]
                                                       `ppa bench generate --json`'s line (the same job on ppa:
                                                       a warm-up call, the fastest of REPS) as this side's line
  gpu_generate_hf.py info SHAPE                        the shape's settings for gpu_generate.sh, shell assignments
SHAPE (the anchor's settings, ../shared/spec/gpu.md):
  qwen2_0.5b   Qwen2-0.5B, 256-token prompts, 128 new tokens, batches 8 and 64 (anchor: 259 and 2,512 new tokens/s)
  llama3.1_8b  Llama-3.1-8B (gpu_train_hf.py's llama3.1_8b_lora base: llama3 RoPE scaling, untied head), batches 8
               and 32 (anchor: 313 and 1,190 new tokens/s)
  tiny         a dry run (gpu_train_hf.py's tiny: head size 64), 16-token prompts, 8 new tokens, batches 2 and 4; on
               the CPU in float32 when there is no GPU
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_train_hf as T  # noqa: E402  (the shapes and the model-folder writer)

# shape: (gpu_train_hf.py's shape whose config it is, prompt tokens, new tokens, default batches,
#         the anchor's transformers new tokens/s at each default batch)
GEN = {
    "qwen2_0.5b": ("qwen2_0.5b", 256, 128, "8 64", {8: 259, 64: 2512}),
    "llama3.1_8b": ("llama3.1_8b_lora", 256, 128, "8 32", {8: 313, 32: 1190}),
    "tiny": ("tiny", 16, 8, "2 4", {}),
}


def config(shape):
    return T.SHAPES[GEN[shape][0]]["config"]


def make(shape, folder, prompts_path, n):
    base, P = GEN[shape][0], GEN[shape][1]
    V = config(shape)["vocab_size"]
    g = random.Random(2)
    with open(prompts_path, "w") as f:
        for _ in range(n):
            f.write(json.dumps({"prompt_ids": [g.randrange(3, V) for _ in range(P)]}) + "\n")
    # no training rows (0 lists, to nowhere); exits 3 without transformers (DIR.config.json written)
    T.make(base, folder, os.devnull, 0)


def noeos(folder):
    """No stop id on either side: ppa reads eos_token_id null as none (its responses end at --max-new-tokens); the
    transformers side passes eos_token_id=None and min_new_tokens anyway"""
    for name in ("config.json", "generation_config.json"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            c = json.load(open(path))
            c["eos_token_id"] = None
            json.dump(c, open(path, "w"), indent=2)


def time_hf(shape, folder, prompts_path, new, reps, batches):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"  # the CPU only for the tiny dry run
    dtype = torch.bfloat16 if cuda else torch.float32
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa", **T.dtype_kw(transformers, dtype))
    model = model.to(dev).eval()
    prompts = [json.loads(l)["prompt_ids"] for l in open(prompts_path) if l.strip()]
    k = int(os.environ.get("NUM_RETURN", "1"))
    kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=True, temperature=1.0, top_p=0.9, top_k=0,
              pad_token_id=0, eos_token_id=None, num_return_sequences=k)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    anchor = GEN[shape][4]
    for b in batches:
        rec = dict(side="hf", shape=shape, batch=b, samples_per_prompt=k, prompt_tokens=len(prompts[0]), new_tokens=new)
        try:
            if b > len(prompts):
                raise ValueError(f"{b} prompts asked, {prompts_path} has {len(prompts)}")
            ids = torch.tensor(prompts[:b], device=dev)
            mask = torch.ones_like(ids)
            if cuda:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            torch.manual_seed(0)
            times, made = [], None
            with torch.no_grad():
                for i in range(reps + 1):  # the first call warms up, not counted
                    sync()
                    t0 = time.perf_counter()
                    out = model.generate(input_ids=ids, attention_mask=mask, **kw)
                    sync()
                    times.append(time.perf_counter() - t0)
                    made = out.shape[1] - ids.shape[1]
            s = min(times[1:])
            rec.update(new_tokens_made=made, s=round(s, 4), s_reps=[round(t, 4) for t in times[1:]],
                       s_first_call=round(times[0], 4), new_tokens_per_s=round(b * k * made / s, 1),
                       peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
                       reserved_gib=round(torch.cuda.max_memory_reserved() / 2**30, 2) if cuda else None,
                       anchor_new_tokens_per_s=anchor.get(b) if k == 1 else None,
                       settings="bf16, sdpa, do_sample, temperature 1, top_p 0.9, top_k 0, min_new_tokens = "
                                f"max_new_tokens, eos None, num_return_sequences {k}; the fastest of the timed calls "
                                "after 1 warm-up",
                       device=torch.cuda.get_device_name() if cuda else "cpu (dry run: float32)",
                       torch=torch.__version__, transformers=transformers.__version__)
            if made != new:
                rec["error"] = f"{made} new tokens made, {new} asked"
        except Exception as e:  # out of GPU memory above all: one line saying so, and the next batch goes on
            rec.update(error=repr(e)[:400],
                       peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None)
        print(json.dumps(rec), flush=True)


def ppa_bench(shape, batch, k, new, bench_path, smi):
    rec = dict(side="ppa", shape=shape, batch=batch, samples_per_prompt=k, prompt_tokens=GEN[shape][1], new_tokens=new)
    lines = [l for l in open(bench_path, errors="replace") if l.startswith("{")]
    if not lines:
        rec["error"] = "no line from ppa bench generate"
        print(json.dumps(rec))
        return
    b = json.loads(lines[-1])
    rec.update(tokens=b["new_tokens"], s=b["s"], new_tokens_per_s=b["new_tokens_per_s"],
               s_first_call=b["s_first_call"], first_call_new_tokens_per_s=b["first_call_new_tokens_per_s"],
               sampler=b["sampler"], repeat=b["repeat"],
               timing="ppa bench generate: the model loaded and uploaded once, a warm-up call, then the fastest of "
                      "the timed calls, each the whole job (prefill, steps, draws)",
               gpu_peak_gib=None, smi_peak_gib=smi,
               anchor_hf_new_tokens_per_s=GEN[shape][4].get(batch) if k == 1 else None, device=b["device"])
    if b["new_tokens"] != batch * k * new:
        rec["error"] = f"{b['new_tokens']} tokens, {batch} x {k} x {new} asked"
    print(json.dumps(rec))


if __name__ == "__main__":
    a = sys.argv[1:]
    forms = {"make": (5, 5), "noeos": (2, 2), "time": (7, 99), "ppa-bench": (6, 7), "info": (2, 2)}
    if not a or a[0] not in forms or not forms[a[0]][0] <= len(a) <= forms[a[0]][1] or \
            (a[0] != "noeos" and a[1] not in GEN):
        sys.exit(__doc__)
    if a[0] == "info":
        base, P, new, batches, anchor = GEN[a[1]]
        lw = "2:3" if a[1] == "tiny" else "8:8"  # the listwise job: prompts:samples
        print(f"prompt_tokens='{P}' new_tokens='{new}' batches_default='{batches}' listwise_default='{lw}'")
    elif a[0] == "make":
        make(a[1], a[2], a[3], int(a[4]))
    elif a[0] == "noeos":
        noeos(a[1])
    elif a[0] == "ppa-bench":
        ppa_bench(a[1], int(a[2]), int(a[3]), int(a[4]), a[5], float(a[6]) if len(a) > 6 and a[6] else None)
    else:
        import importlib.util
        batches = [int(b) for b in a[6:]]
        for m in ("torch", "transformers"):
            if importlib.util.find_spec(m) is None:
                for b in batches:
                    print(json.dumps(dict(side="hf", shape=a[1], batch=b, skipped=f"no {m}")))
                sys.exit(77)
        time_hf(a[1], a[2], a[3], int(a[4]), int(a[5]), batches)
