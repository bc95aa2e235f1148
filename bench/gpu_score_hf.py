#!/usr/bin/env python3
"""The GPU scoring benchmark's PyTorch side (bench/gpu_score.sh runs it): a model folder of the real shapes with
random bf16 weights (no hub here), the lists as pre-tokenized JSON Lines rows that ppa reads as they are, and
Hugging Face transformers + PyTorch scoring the same lists: bf16 weights, sdpa attention, the K responses of a list
as K separate sequences of prompt + response (as TRL-style code batches them), the logits of the response tokens
only (logits_to_keep), log_softmax + gather summed per response, no gradient.

  gpu_score_hf.py make SHAPE DIR LISTS.jsonl N_LISTS   writes the folder and the rows (seeded)
  gpu_score_hf.py time SHAPE DIR LISTS.jsonl BATCH      times transformers on them: one JSON line
SHAPE: qwen2_0.5b or llama3.1_8b. K = 8 responses of R = 256 tokens after a P = 256 prompt.
"""
import json
import sys
import time

import torch

K, P, R = 8, 256, 256
SHAPES = {
    "qwen2_0.5b": dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=896,
                       intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                       vocab_size=151936, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                       tie_word_embeddings=True, use_sliding_window=False, sliding_window=32768,
                       max_window_layers=24, bos_token_id=151643, eos_token_id=151643),
    "llama3.1_8b": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=4096,
                        intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                        vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                        tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001,
                        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                          original_max_position_embeddings=8192)),
}


def config(shape):
    from transformers import AutoConfig
    c = dict(SHAPES[shape])
    return AutoConfig.for_model(c.pop("model_type"), torch_dtype="bfloat16", **c)


def make(shape, folder, rows_path, n_lists):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config(shape), torch_dtype=torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    V = SHAPES[shape]["vocab_size"]
    g = torch.Generator().manual_seed(1)
    with open(rows_path, "w") as f:
        for _ in range(n_lists):
            ids = torch.randint(0, V, (1 + K, max(P, R)), generator=g)
            row = {"prompt_ids": ids[0, :P].tolist(), "response_ids": [ids[1 + k, :R].tolist() for k in range(K)],
                   "scores": [float(k) for k in range(K)]}
            f.write(json.dumps(row) + "\n")


def time_hf(shape, folder, rows_path, batch):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.bfloat16, attn_implementation="sdpa").cuda()
    model.eval()
    rows = [json.loads(l) for l in open(rows_path)]
    seqs = torch.tensor([[*r["prompt_ids"], *resp] for r in rows for resp in r["response_ids"]], device="cuda")
    out = torch.empty(len(seqs), dtype=torch.float64, device="cuda")

    def run():
        with torch.no_grad():
            for i in range(0, len(rows), batch):
                ids = seqs[i * K:(i + batch) * K]
                logits = model(input_ids=ids, logits_to_keep=R + 1).logits[:, :-1].float()
                lp = torch.log_softmax(logits, -1).gather(-1, ids[:, -R:, None]).squeeze(-1)
                out[i * K:(i + batch) * K] = lp.sum(-1).double()
        torch.cuda.synchronize()

    run()  # warm-up: kernels chosen, memory reserved
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    t = sorted(times)[1]
    n = len(rows)
    print(json.dumps(dict(side="hf", shape=shape, lists=n, batch_lists=batch, s_per_list=round(t / n, 5),
                          tokens_per_s=round(n * K * (P + R) / t), peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2),
                          torch=torch.__version__, gpu=torch.cuda.get_device_name())), flush=True)
    torch.save(out.cpu(), rows_path + ".hf_logps.pt")


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in ("make", "time") or sys.argv[2] not in SHAPES:
        sys.exit(__doc__)
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("gpu_score_hf: SKIP (no transformers)")
        sys.exit(77)
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        time_hf(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
