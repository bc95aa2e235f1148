#!/usr/bin/env python3
"""The GPU training benchmark's PyTorch side (bench/gpu_train.sh runs it): a model folder of the real shape with
random weights (no hub here), the lists as pre-tokenized JSON Lines rows that ppa train and this script both read,
and Hugging Face transformers + PyTorch training on the same lists the way a user would write it: float32 master
weights + bf16 autocast, sdpa attention, the K responses of a list as K separate sequences of prompt + response,
the LM head on the response positions only (hidden states gathered, then lm_head), a listwise loss over
s = beta (log pi - log pi_ref), gradient clipping at 1.0 and fused AdamW. NeuralNDCG is not in torch: the loss here
is ListNet (softmax cross-entropy of s against the labels), whose cost, like NeuralNDCG's on K = 8 scalars, is
nothing beside the model's forward and backward. The LoRA shapes (*_lora) train a PEFT adapter instead: the base
loaded in bf16 and frozen, LoraConfig(r, lora_alpha = 2 r, lora_dropout 0, the 7 linear layers), the adapters in
float32 under bf16 autocast, fused AdamW and clipping over the adapters only, and the reference log-probs from the
base with the adapters disabled (model.disable_adapter(), no_grad), before the clock.

  gpu_train_hf.py make SHAPE DIR LISTS.jsonl N_LISTS   the rows (seeded), and the folder written by transformers;
                                                     without transformers: DIR.config.json for ppa init, exit 3
  gpu_train_hf.py time SHAPE DIR LISTS.jsonl BATCH STEPS WARMUP
                                                     times STEPS steps of BATCH lists, the first WARMUP not counted,
                                                     then profiles 2 more for the matrix products' share: one JSON line
  gpu_train_hf.py ppa-log SHAPE LOG.jsonl BATCH WARMUP ppa train's --log turned into the same JSON line
  gpu_train_hf.py compare SHAPE PPA_LOGPROBS.jsonl HF_LOGPS.pt   the two sides' log-probs at step 0
  gpu_train_hf.py info SHAPE                         the shape's settings for gpu_train.sh, as shell assignments
SHAPE (K = 8 responses of R = 256 tokens after a P = 256 prompt, random weights):
  qwen2_0.5b        full fine-tuning, float32 master weights (1 and 8 lists a step)
  llama3.1_8b_lora  Llama-3.1-8B (llama3 RoPE scaling, untied head), LoRA r 16, alpha 32 (1 list a step)
  mistral_7b_lora   Mistral-7B-v0.1 (vocabulary 32000, sliding window 4096 > P + R), LoRA r 16, alpha 32 (1 list)
  tiny, tiny_lora   dry runs (K = 4, P = R = 16; tiny_lora with LoRA r 4, alpha 8): on the CPU, in float32, when there
                    is no GPU
FLOPs ("flops_formula" in each line), the tokens T counted as each side computes them: K (P + R) a list here (separate
sequences), P + K R in ppa (the prompt once). Full fine-tuning: 6 N T, N the non-embedding parameters, the LM head's
6 H V K R (response positions only, both sides) apart ("head_flops_per_list", "tflops_with_head"). LoRA: the frozen
base's forward and input-gradient backward, 4 N T, the head's 4 H V K R apart as above; the adapters' own 6 N_lora T
is given as "adapter_flops_per_list" and counted in neither rate. Attention's scores count nowhere.
"""
import contextlib
import json
import random
import shutil
import statistics
import sys
import time

SHAPES = {
    "qwen2_0.5b": dict(K=8, P=256, R=256, config=dict(
        model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=896, intermediate_size=4864,
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
        max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        use_sliding_window=False, sliding_window=32768, max_window_layers=24, bos_token_id=151643,
        eos_token_id=151643)),
    # head size 64, as the GPU engine requires; small enough for the CPU stand-in of the CUDA module
    "tiny": dict(K=4, P=16, R=16, config=dict(
        model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=128, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, vocab_size=512,
        max_position_embeddings=4096, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        use_sliding_window=False, sliding_window=4096, max_window_layers=2, bos_token_id=0, eos_token_id=1)),
    # Llama-3.1-8B's config.json (meta-llama/Llama-3.1-8B), the adapter as the anchors' (r 16, alpha 32, 7 targets)
    "llama3.1_8b_lora": dict(K=8, P=256, R=256, lora=dict(r=16, alpha=32), config=dict(
        model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
        max_position_embeddings=131072, rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=8192),
        rms_norm_eps=1e-5, hidden_act="silu", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
        bos_token_id=128000, eos_token_id=128001)),
    # Mistral-7B-v0.1's config.json: its sliding window of 4096 kept, which P + R = 512 never reaches (both sides
    # compute plain causal attention; ppa refuses only a sequence longer than the window)
    "mistral_7b_lora": dict(K=8, P=256, R=256, lora=dict(r=16, alpha=32), config=dict(
        model_type="mistral", architectures=["MistralForCausalLM"], hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=32000,
        max_position_embeddings=32768, rope_theta=10000.0, sliding_window=4096, rms_norm_eps=1e-5,
        hidden_act="silu", tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)),
}
SHAPES["tiny_lora"] = dict(SHAPES["tiny"], lora=dict(r=4, alpha=8))
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
BETA = 0.1


def settings(shape):
    """gpu_train.sh's defaults for a shape: lists a step, steps (1 list a step, more), the learning rate (both sides)"""
    if SHAPES[shape].get("lora"):
        return dict(batches_default="1", steps_1=12, steps_n=12, lr="1e-4")  # the anchors' LoRA rate
    return dict(batches_default="1 8", steps_1=20, steps_n=12, lr="1e-6")


def sig(x, n=4):
    """x to n significant digits, for rates that span the tiny dry run to the GPU"""
    return float(f"{x:.{n}g}")


def dims(shape):
    """(H, I, L, V, the query width NH hd, the key/value width NKV hd)"""
    c = SHAPES[shape]["config"]
    H = c["hidden_size"]
    hd = c.get("head_dim") or H // c["num_attention_heads"]
    return (H, c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"], c["num_attention_heads"] * hd,
            c["num_key_value_heads"] * hd)


def params(shape):
    """(non-embedding parameters, all parameters) of a Qwen2/Llama/Mistral shape, the base without adapters: q/k/v
    with biases (Qwen2), o, gate, up, down, two norms a layer, the final norm; a tied head adds none, an untied one
    V H (counted as embedding)"""
    c = SHAPES[shape]["config"]
    H, I, L, V, q, kv = dims(shape)
    bias = c["model_type"] == "qwen2"
    layer = H * q + 2 * H * kv + (q + 2 * kv if bias else 0) + q * H + 3 * H * I + 2 * H
    non_emb = L * layer + H
    return non_emb, non_emb + V * H * (1 if c["tie_word_embeddings"] else 2)


def lora_params(shape):
    """the adapters' parameters: r (in + out) on each of the 7 linear layers of every layer"""
    H, I, L, V, q, kv = dims(shape)
    return L * SHAPES[shape]["lora"]["r"] * ((H + q) + 2 * (H + kv) + (q + H) + 2 * (H + I) + (I + H))


def flops(shape, tokens):
    """(the model's FLOPs for one list of `tokens` computed, the LM head's, the adapters', the formula): full
    fine-tuning 6 N T and 6 H V K R; LoRA (frozen base: forward + the input gradient, no weight gradient) 4 N T and
    4 H V K R, the adapters' 6 N_lora T apart"""
    s, c = SHAPES[shape], SHAPES[shape]["config"]
    n, head = params(shape)[0], c["hidden_size"] * c["vocab_size"] * s["K"] * s["R"]
    if s.get("lora"):
        return (4 * n * tokens, 4 * head, 6 * lora_params(shape) * tokens,
                "LoRA: 4 N T (frozen base: forward + input-gradient backward; N = non-embedding base parameters, "
                "T = tokens computed a list), head 4 H V K R apart, adapters 6 N_lora T apart (in neither rate)")
    return (6 * n * tokens, 6 * head, 0, "6 N T (N = non-embedding parameters, T = tokens computed a list), "
            "head 6 H V K R apart")


def list_tokens(shape):
    """(separate sequences' tokens, ppa's packed tokens) of one list"""
    s = SHAPES[shape]
    return s["K"] * (s["P"] + s["R"]), s["P"] + s["K"] * s["R"]


def dtype_kw(transformers, dtype):
    # transformers 5 renamed torch_dtype to dtype (and loads a folder's own dtype by default)
    return {"dtype": dtype} if int(transformers.__version__.split(".")[0]) >= 5 else {"torch_dtype": dtype}


def make(shape, folder, rows_path, n_lists):
    s = SHAPES[shape]
    K, P, R, V = s["K"], s["P"], s["R"], s["config"]["vocab_size"]
    g = random.Random(1)
    with open(rows_path, "w") as f:
        for _ in range(n_lists):
            # labels: a permutation of K evenly spaced values in [0, 1], unsorted as ListUltraFeedback stores them
            scores = [k / (K - 1) for k in range(K)]
            g.shuffle(scores)
            row = {"prompt_ids": [g.randrange(3, V) for _ in range(P)],
                   "response_ids": [[g.randrange(3, V) for _ in range(R)] for _ in range(K)], "scores": scores}
            f.write(json.dumps(row) + "\n")
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError:
        c = s["config"]
        c = dict(c, torch_dtype="bfloat16", head_dim=c["hidden_size"] // c["num_attention_heads"])
        json.dump(c, open(folder + ".config.json", "w"), indent=1)
        print(f"gpu_train_hf: no transformers here: wrote {rows_path} and {folder}.config.json "
              "(ppa init writes the folder)")
        sys.exit(3)
    c = dict(s["config"])
    config = AutoConfig.for_model(c.pop("model_type"), **dtype_kw(transformers, "bfloat16"), **c)
    torch.manual_seed(0)
    # drawn on the GPU where there is one: seconds, not minutes, for half a billion weights
    with torch.device("cuda") if torch.cuda.is_available() else contextlib.nullcontext():
        model = AutoModelForCausalLM.from_config(config, **dtype_kw(transformers, torch.bfloat16))
    model.save_pretrained(folder, safe_serialization=True)
    # the shape as written (transformers 5 turns rope_theta and rope_scaling into rope_parameters): a RoPE or window
    # lost on the way would time another model
    saved = json.load(open(folder + "/config.json"))
    c = s["config"]
    rope = dict(saved.get("rope_scaling") or {}, **(saved.get("rope_parameters") or {}))
    want = dict(c.get("rope_scaling") or {}, rope_theta=c["rope_theta"])
    bad = [f"{k} {rope.get(k, saved.get(k))!r} (expected {v!r})" for k, v in want.items()
           if k != "type" and rope.get(k, saved.get(k)) != v]
    if "sliding_window" in c and c["model_type"] == "mistral" and saved.get("sliding_window") != c["sliding_window"]:
        bad.append(f"sliding_window {saved.get('sliding_window')!r} (expected {c['sliding_window']!r})")
    if bad:
        shutil.rmtree(folder)  # not left for the next run to take
        sys.exit(f"gpu_train_hf: {folder}/config.json: " + "; ".join(bad))


def batches(rows, batch, dev):
    """the lists, BATCH a step, as tensors: ids [B K, T] (right-padded when lengths differ, with a mask), the flat
    hidden-state rows predicting each response token and those tokens, each token's sequence, labels [B, K]"""
    import torch
    out = []
    for i in range(0, len(rows) - batch + 1, batch):
        lists = rows[i:i + batch]
        seqs = [(r["prompt_ids"], resp) for r in lists for resp in r["response_ids"]]
        T = max(len(p) + len(q) for p, q in seqs)
        ids = torch.zeros(len(seqs), T, dtype=torch.long)
        mask = torch.zeros(len(seqs), T, dtype=torch.long)
        at, tgt, seg = [], [], []
        for j, (p, q) in enumerate(seqs):
            n = len(p) + len(q)
            ids[j, :n] = torch.tensor(p + q)
            mask[j, :n] = 1
            at += [j * T + len(p) - 1 + t for t in range(len(q))]  # position t - 1 scores response token t
            tgt += q
            seg += [j] * len(q)
        padded = bool((mask == 0).any())
        labels = torch.tensor([r["scores"] for r in lists], dtype=torch.float32)
        out.append(dict(ids=ids.to(dev), mask=mask.to(dev) if padded else None, at=torch.tensor(at, device=dev),
                        tgt=torch.tensor(tgt, device=dev), seg=torch.tensor(seg, device=dev),
                        labels=labels.to(dev), n=len(seqs), lists=len(lists)))
    return out


def gemm_time(run, cuda):
    """(microseconds in matrix products, in all GPU kernels, an error or None) of run() under torch.profiler: the
    kernels whose names look like GEMMs (cuBLAS, cuBLASLt, CUTLASS), not attention's; without a GPU the CPU's
    product operators, their own time (attention's batched products among them)"""
    from torch.profiler import ProfilerActivity, profile
    gemm_us = busy_us = 0.0
    gemm_words = ("gemm", "cutlass", "xmma", "sm90", "nvjet")
    not_gemm = ("fmha", "flash", "attention", "sdpa", "softmax")
    try:
        with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
            run()
        for e in prof.events():
            name = e.name.lower()
            if cuda:
                if str(e.device_type).endswith("CUDA"):
                    us = e.time_range.elapsed_us()
                    busy_us += us
                    if any(w in name for w in gemm_words) and not any(w in name for w in not_gemm):
                        gemm_us += us
            elif name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
                gemm_us += e.self_cpu_time_total
    except Exception as e:  # the timing stands without the profile
        return 0.0, 0.0, repr(e)[:200]
    return gemm_us, busy_us, None if gemm_us else "the profiler saw no matrix products"


def time_hf(shape, folder, rows_path, batch, steps, warm):
    import torch
    import torch.nn.functional as F
    import transformers
    from transformers import AutoModelForCausalLM
    s = SHAPES[shape]
    K, lora = s["K"], s.get("lora")
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"  # the CPU only for the tiny dry runs
    if lora:
        from peft import LoraConfig, get_peft_model
        import peft
        # the base in bf16 (float32 on the CPU dry run), frozen; the adapters in float32 under autocast
        model = AutoModelForCausalLM.from_pretrained(
            folder, attn_implementation="sdpa", **dtype_kw(transformers, torch.bfloat16 if cuda else torch.float32))
        model = model.to(dev)
        model.requires_grad_(False)
    else:
        model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa",
                                                     **dtype_kw(transformers, torch.float32))
        model = model.float().to(dev)  # float32 master weights whatever the folder holds
    n_params = sum(p.numel() for p in model.parameters())
    if n_params != params(shape)[1]:
        print(f"gpu_train_hf: the model has {n_params} parameters, the FLOP count assumes {params(shape)[1]}",
              file=sys.stderr)
    if lora:
        model = get_peft_model(model, LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=0.0,
                                                 target_modules=LORA_TARGETS))
        trained = [p for p in model.parameters() if p.requires_grad]
        for p in trained:
            p.data = p.data.float()
        n_lora = sum(p.numel() for p in trained)
        if n_lora != lora_params(shape):
            print(f"gpu_train_hf: the adapters have {n_lora} parameters, the FLOP count assumes "
                  f"{lora_params(shape)}", file=sys.stderr)
        inner = model.get_base_model()  # the causal LM, its linear layers carrying the adapters
        base, head = inner.base_model, inner.get_output_embeddings()
        reference = model.disable_adapter  # the base: TRL's reference of a PEFT model
    else:
        trained = list(model.parameters())
        base, head = model.base_model, model.get_output_embeddings()
        reference = contextlib.nullcontext  # the initial model itself
    model.train()
    rows = [json.loads(l) for l in open(rows_path)]
    need = batch * (steps + 2)  # the timed steps and the 2 profiled, cycling through the file
    rows = [rows[i % len(rows)] for i in range(need)]
    data = batches(rows, batch, dev)

    def logps(b):
        with torch.autocast(device_type=dev, dtype=torch.bfloat16, enabled=cuda):
            h = base(input_ids=b["ids"], attention_mask=b["mask"], use_cache=False).last_hidden_state
            logits = head(h.reshape(-1, h.shape[-1]).index_select(0, b["at"]))
        tok = -F.cross_entropy(logits.float(), b["tgt"], reduction="none")
        return torch.zeros(b["n"], device=dev).index_add(0, b["seg"], tok).view(b["lists"], K)

    # the reference, once, before the clock: the initial model (ppa reads it from a cache), or for LoRA the base
    # with the adapters disabled (ppa train computes it before its first step)
    with torch.no_grad(), reference():
        for b in data:
            b["ref"] = logps(b)
    n_file = sum(1 for _ in open(rows_path))
    torch.save(torch.cat([b["ref"].reshape(-1) for b in data]).double().cpu()[:n_file * K], rows_path + ".hf_logps.pt")
    # fused: one kernel launch for the whole update (it needs the GPU; the CPU dry run takes the default)
    opt = torch.optim.AdamW(trained, lr=float(settings(shape)["lr"]), **({"fused": True} if cuda else {}))

    def step(b):
        lp = logps(b)
        sc = BETA * (lp - b["ref"])
        # ListNet: cross-entropy of softmax(s) against softmax(labels), the mean over the step's lists
        loss = -(torch.softmax(b["labels"], -1) * torch.log_softmax(sc, -1)).sum(-1).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    for i in range(steps):
        sync()
        t0 = time.perf_counter()
        loss = step(data[i])
        sync()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None

    def profiled():
        for b in data[steps:steps + 2]:
            step(b)
        sync()

    gemm_us, busy_us, perr = gemm_time(profiled, cuda)
    steady = times[warm:]
    lists = batch * len(steady)
    spl = sum(steady) / lists
    sep, _ = list_tokens(shape)
    fl, fh, fa, formula = flops(shape, sep)
    gemm_step = gemm_us / 2 / 1e6 or None
    rec = dict(side="hf", shape=shape, lists_per_step=batch, steps=steps, warmup=warm, s_per_list=round(spl, 5),
               step_s_median=round(statistics.median(steady), 5), tokens_per_s=round(sep / spl),
               tokens_per_s_computed=round(sep / spl), peak_gib=None if peak is None else round(peak, 2),
               flops_per_list=fl, tflops=sig(fl / spl / 1e12), head_flops_per_list=fh,
               tflops_with_head=sig((fl + fh) / spl / 1e12),
               **({"adapter_flops_per_list": fa, "lora_r": lora["r"], "lora_alpha": lora["alpha"],
                   "trained_params": n_lora} if lora else {}), flops_formula=formula,
               gemm_s_per_step=gemm_step and round(gemm_step, 5),
               gemm_share=gemm_step and round(gemm_step / statistics.mean(steady), 3),
               gemm_share_of_kernels=round(gemm_us / busy_us, 3) if gemm_step and busy_us else None,
               gemm_tflops=gemm_step and sig((fl + fh) * batch / gemm_step / 1e12),
               **({"profile_error": perr} if perr else {}),
               loss_first=round(losses[0], 6), loss_last=round(losses[-1], 6),
               device=torch.cuda.get_device_name() if cuda else "cpu (dry run: float32, no autocast)",
               torch=torch.__version__, transformers=transformers.__version__,
               **({"peft": peft.__version__} if lora else {}))
    print(json.dumps(rec), flush=True)


def compare(ppa_path, hf_path):
    """ppa logprobs' lines against the reference log-probs time_hf saved (the same rows, the same initial weights)"""
    import torch
    ppa = [v for l in open(ppa_path) for v in json.loads(l)["logps"]]
    hf = torch.load(hf_path).tolist()
    d = sorted(abs(a - b) for a, b in zip(ppa, hf))
    if not d:
        print("log-probs: nothing to compare")
        return
    print(f"log-probs at step 0, ppa against transformers: {len(d)} responses, median |diff| {d[len(d) // 2]:.3g} "
          f"nats, max {d[-1]:.3g}, of magnitudes about {sum(abs(b) for b in hf) / len(hf):.0f}")


def ppa_log(shape, log_path, batch, warm):
    """ppa train's --log lines as the same record as time_hf's. elapsed_s counts from train_run's start (after the
    reference log-probs, which ppa train computes before it when there is no --ref-cache, as for LoRA; before the
    weights' upload to the engine and the first step), each line written at the end of its step: the differences
    after the WARMUP-th line time the steps that follow it and nothing before"""
    lines = [json.loads(l) for l in open(log_path) if l.strip()]
    lines = [l for l in lines if "step" in l and "elapsed_s" in l and "eval" not in l]
    if len(lines) <= warm:
        print(json.dumps(dict(side="ppa", shape=shape, lists_per_step=batch,
                              error=f"{len(lines)} steps logged, {warm} of them warm-up")))
        return
    el = [0.0] + [l["elapsed_s"] for l in lines]
    steady = [b - a for a, b in zip(el[warm:], el[warm + 1:])]
    lists = sum(l["lists"] for l in lines[warm:])
    spl = sum(steady) / lists
    sep, packed = list_tokens(shape)
    fl, fh, fa, formula = flops(shape, packed)
    lora = SHAPES[shape].get("lora")
    peaks = [l["gpu_peak_gib"] for l in lines if l.get("gpu_peak_gib") is not None]
    rec = dict(side="ppa", shape=shape, lists_per_step=batch, steps=len(lines), warmup=warm, s_per_list=round(spl, 5),
               step_s_median=round(statistics.median(steady), 5), tokens_per_s=round(sep / spl),
               tokens_per_s_computed=round(packed / spl),
               tokens_per_s_logged=round(statistics.mean(l["tokens_per_s"] for l in lines[warm:])),
               gpu_peak_gib=max(peaks) if peaks else None, flops_per_list=fl, tflops=sig(fl / spl / 1e12),
               head_flops_per_list=fh, tflops_with_head=sig((fl + fh) / spl / 1e12),
               **({"adapter_flops_per_list": fa, "lora_r": lora["r"], "lora_alpha": lora["alpha"]} if lora else {}),
               flops_formula=formula, loss_first=lines[0].get("loss"), loss_last=lines[-1].get("loss"))
    print(json.dumps(rec))


if __name__ == "__main__":
    a = sys.argv[1:]
    forms = {"make": 5, "time": 7, "ppa-log": 5, "compare": 4, "info": 2}
    if not a or a[0] not in forms or len(a) != forms[a[0]] or a[1] not in SHAPES or \
            (a[0] == "time" and int(a[5]) <= int(a[6])):
        sys.exit(__doc__)
    if a[0] == "info":
        s = SHAPES[a[1]]
        print(" ".join(f"{k}='{v}'" for k, v in dict(k=s["K"], lora_r=s.get("lora", {}).get("r", 0),
                                                       lora_alpha=s.get("lora", {}).get("alpha", 0),
                                                       **settings(a[1])).items()))
    elif a[0] == "make":
        make(a[1], a[2], a[3], int(a[4]))
    elif a[0] == "ppa-log":
        ppa_log(a[1], a[2], int(a[3]), int(a[4]))
    elif a[0] == "compare":
        compare(a[2], a[3])
    else:
        import importlib.util
        for m in ("torch", "transformers") + (("peft",) if SHAPES[a[1]].get("lora") else ()):
            if importlib.util.find_spec(m) is None:
                print(json.dumps(dict(side="hf", shape=a[1], lists_per_step=int(a[4]), skipped=f"no {m}")))
                sys.exit(77)
        try:
            time_hf(a[1], a[2], a[3], int(a[4]), int(a[5]), int(a[6]))
        except Exception as e:  # out of GPU memory above all: one line saying so, and the next case goes on
            import torch
            peak = round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None
            print(json.dumps(dict(side="hf", shape=a[1], lists_per_step=int(a[4]), error=repr(e)[:400],
                                  peak_gib=peak)), flush=True)
            sys.exit(1)
