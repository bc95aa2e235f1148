#!/usr/bin/env bash
# LoRA adapters on the command line: `ppa train --lora-r` writes PEFT's folder
# (adapter_config.json, adapter_model.safetensors under PEFT's names) with
# step-0 rewards exactly 0 (fp32 and bf16), raises the held-out ranking
# accuracy of a small task, resumes byte for byte (dropout on); --adapter on
# logprobs, eval, score, generate and grad; `ppa merge` = the adapted model;
# `ppa sft --lora-r`; recipes (use_peft); refusals naming the file and field.
# Usage: tests/test_lora.sh PPA_BINARY.
ppa=${1:-./ppa}
NAME=test_lora
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; }
not() { ! "$@"; }
expect_status() { if [ "$3" -eq "$2" ]; then ok; else bad "$1 (exit $3, wanted $2)"; fi; } # DESCRIPTION WANT GOT
py() { /usr/bin/python3 - "$@"; }

tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/lm" --seed 1 > /dev/null 2>&1
letter_lists > "$tmp/all.jsonl"
head -18 "$tmp/all.jsonl" > "$tmp/train.jsonl"
tail -6 "$tmp/all.jsonl" > "$tmp/held.jsonl"
run=(--model "$tmp/lm" --data "$tmp/train.jsonl" --list-size 4 --batch-size 4 --micro-batch 2 --lr 2e-2 --warmup-ratio 0
     --lora-r 4 --lora-alpha 8)

# -- a LoRA run: PEFT's folder, rewards 0 at step 0, a better held-out ranking
"$ppa" train "${run[@]}" --out "$tmp/a" --max-steps 30 --eval-data "$tmp/held.jsonl" 2> "$tmp/err"
expect "train --lora-r exits 0" test $? -eq 0
expect "adapter_config.json written" test -f "$tmp/a/adapter_config.json"
expect "adapter_model.safetensors written" test -f "$tmp/a/adapter_model.safetensors"
expect "no full model written" not test -f "$tmp/a/config.json"
py "$tmp/a" > "$tmp/py" <<'P'
import json, struct, sys
d = sys.argv[1]
c = json.load(open(d + "/adapter_config.json"))
want = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "bias": "none", "task_type": "CAUSAL_LM", "use_rslora": False,
        "fan_in_fan_out": False, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
print("config ok" if all(c.get(k) == v for k, v in want.items()) and c["base_model_name_or_path"].endswith("/lm") else "CONFIG %s" % c)
b = open(d + "/adapter_model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
names = sorted(k for k in h if k != "__metadata__")
print("tensors %d" % len(names))
print("q A", h["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"]["shape"])
print("down B", h["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"]["shape"], h["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"]["dtype"])
print("metadata", h["__metadata__"])
P
expect "adapter_config.json holds PEFT's fields" has "$tmp/py" "config ok"
expect "2 layers x 7 targets x (A, B)" has "$tmp/py" "tensors 28"
expect "lora_A is [r, in]" has "$tmp/py" "q A [4, 32]"
expect "lora_B is [out, r], float32" has "$tmp/py" "down B [32, 4] F32"
expect "safetensors metadata format pt" has "$tmp/py" "metadata {'format': 'pt'}"
first=$(head -1 "$tmp/a/train_log.jsonl")
expect "step 1: reward 0 and margin 0" test "$(echo "$first" | grep -o '"reward": [^,]*, "margin": [^,]*')" = '"reward": 0, "margin": 0'
acc=$(grep '"eval"' "$tmp/a/train_log.jsonl" | tail -1 | grep -o '"ranking_accuracy": [0-9.]*' | sed 's/.*: //')
expect "held-out ranking accuracy after LoRA training >= 0.8 (got $acc)" awk -v a="$acc" 'BEGIN { exit !(a >= 0.8) }'
expect "the summary names the adapter" has "$tmp/err" "LoRA r 4"

# -- bf16: the frozen base in bf16, still 0 at step 0
"$ppa" train "${run[@]}" --out "$tmp/b16" --max-steps 2 --precision bf16 --gradient-checkpointing 2> "$tmp/err"
expect "bf16 LoRA with checkpointing exits 0" test $? -eq 0
first=$(head -1 "$tmp/b16/train_log.jsonl")
expect "bf16: step 1 reward 0 and margin 0" test "$(echo "$first" | grep -o '"reward": [^,]*, "margin": [^,]*')" = '"reward": 0, "margin": 0'

# -- resume: byte for byte, dropout masks included
"$ppa" train "${run[@]}" --lora-dropout 0.1 --out "$tmp/full" --max-steps 4 > /dev/null 2>&1
"$ppa" train "${run[@]}" --lora-dropout 0.1 --out "$tmp/half" --max-steps 4 --save-every 2 > /dev/null 2>&1
expect "a checkpoint holds the adapter" test -f "$tmp/half/checkpoint-2/adapter_model.safetensors"
rm -f "$tmp/half/adapter_model.safetensors" "$tmp/half/adapter_config.json"
"$ppa" train "${run[@]}" --lora-dropout 0.1 --out "$tmp/half" --max-steps 4 --save-every 2 --resume "$tmp/half/checkpoint-2" 2> "$tmp/err"
expect "resume exits 0" test $? -eq 0
expect "resumed adapter = uninterrupted adapter, bytes" cmp -s "$tmp/full/adapter_model.safetensors" "$tmp/half/adapter_model.safetensors"
"$ppa" train "${run[@]}" --out "$tmp/nodrop" --max-steps 4 > /dev/null 2>&1
expect "dropout changes the run" not cmp -s "$tmp/full/adapter_model.safetensors" "$tmp/nodrop/adapter_model.safetensors"
"$ppa" train "${run[@]}" --lora-r 8 --out "$tmp/half" --max-steps 4 --resume "$tmp/half/checkpoint-2" 2> "$tmp/err"
expect_status "resume with another rank is refused" 2 "$?"
expect "naming lora" has "$tmp/err" "lora"

# -- --adapter on the scoring commands, and merge
"$ppa" logprobs --model "$tmp/lm" --adapter "$tmp/a" --data "$tmp/held.jsonl" > "$tmp/lp_adapter.jsonl" 2> "$tmp/err"
expect "logprobs --adapter exits 0" test $? -eq 0
"$ppa" logprobs --model "$tmp/lm" --data "$tmp/held.jsonl" > "$tmp/lp_base.jsonl" 2> /dev/null
expect "the adapter changes the log-probs" not cmp -s "$tmp/lp_adapter.jsonl" "$tmp/lp_base.jsonl"
"$ppa" merge --model "$tmp/lm" --adapter "$tmp/a" --out "$tmp/merged" 2> "$tmp/err"
expect "merge exits 0" test $? -eq 0
expect "merged: a Hugging Face folder" test -f "$tmp/merged/config.json" -a -f "$tmp/merged/model.safetensors" -a -f "$tmp/merged/tokenizer.json"
"$ppa" inspect "$tmp/merged" > "$tmp/insp" 2>&1
expect "merged folder passes inspect" has "$tmp/insp" "check: the tensors match config.json"
"$ppa" logprobs --model "$tmp/merged" --data "$tmp/held.jsonl" > "$tmp/lp_merged.jsonl" 2> /dev/null
py "$tmp/lp_adapter.jsonl" "$tmp/lp_merged.jsonl" "$tmp/lp_base.jsonl" > "$tmp/py" <<'P'
import json, sys
a, m, b = ([x for l in open(p) for x in json.loads(l)["logps"]] for p in sys.argv[1:4])
d = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(a, m))
e = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(a, b))
print("merged = adapted" if len(a) == len(m) and d < 1e-5 else "DIFF %g" % d)
print("base differs" if e > 1e-3 else "SAME %g" % e)
P
expect "merged log-probs = the adapted model's (float32 rounding)" has "$tmp/py" "merged = adapted"
expect "and differ from the base's" has "$tmp/py" "base differs"
"$ppa" merge --model "$tmp/lm" --adapter "$tmp/a" --out "$tmp/merged" > /dev/null 2> "$tmp/err"
expect_status "merge refuses an existing --out" 2 "$?"
"$ppa" eval --model "$tmp/lm" --adapter "$tmp/a" --ref "$tmp/lm" --data "$tmp/held.jsonl" > "$tmp/eval.json" 2> "$tmp/err"
expect "eval --adapter --ref base exits 0" test $? -eq 0
eacc=$(grep -o '"ranking_accuracy": [0-9.]*' "$tmp/eval.json" | sed 's/.*: //')
expect "eval --adapter gives the run's held-out accuracy ($eacc vs $acc)" test "$eacc" = "$acc"
"$ppa" score --model "$tmp/lm" --adapter "$tmp/a" --data "$tmp/held.jsonl" --out "$tmp/adapted.cache" 2> /dev/null
expect "score --adapter writes a cache" test -s "$tmp/adapted.cache"
printf '{"prompt": "q1"}\n{"prompt": "q2"}\n' > "$tmp/prompts.jsonl"
"$ppa" generate --model "$tmp/lm" --adapter "$tmp/a" --prompts "$tmp/prompts.jsonl" --max-new-tokens 4 --out "$tmp/gen.jsonl" 2> "$tmp/err"
expect "generate --adapter exits 0" test $? -eq 0
expect "two prompts sampled" test "$(wc -l < "$tmp/gen.jsonl")" -eq 2
"$ppa" generate --model "$tmp/merged" --prompts "$tmp/prompts.jsonl" --max-new-tokens 4 --out "$tmp/gen_m.jsonl" 2> /dev/null
expect "greedy continuations of the merged model = the adapted model's" cmp -s "$tmp/gen.jsonl" "$tmp/gen_m.jsonl"

# -- grad: the adapter's gradients under PEFT's names
"$ppa" grad --model "$tmp/lm" --data "$tmp/held.jsonl" --lora-r 2 --objective neural_ndcg --beta 0.1 --ref "$tmp/lm" --out "$tmp/g.safetensors" > /dev/null 2> "$tmp/err"
expect "grad --lora-r exits 0" test $? -eq 0
py "$tmp/g.safetensors" > "$tmp/py" <<'P'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
names = [k for k in h if k != "__metadata__"]
def vals(k):
    s, e = h[k]["data_offsets"]
    return struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s:8 + n + e])
A = [k for k in names if ".lora_A." in k]
B = [k for k in names if ".lora_B." in k]
print("names ok" if len(names) == 28 and all(k.startswith("base_model.model.model.layers.") for k in names) else "NAMES %s" % names[:3])
print("A zero" if all(v == 0 for k in A for v in vals(k)) else "A NONZERO")
print("B nonzero" if any(v != 0 for k in B for v in vals(k)) else "B ZERO")
P
expect "gradients under PEFT's names" has "$tmp/py" "names ok"
expect "d/dA = 0 at B = 0" has "$tmp/py" "A zero"
expect "d/dB != 0" has "$tmp/py" "B nonzero"

# -- sft with an adapter, and continuing training from an adapter
printf '{"text": "abab abab abab"}\n{"text": "baba baba"}\n{"text": "aaaa bbbb"}\n{"text": "abba abba abba"}\n' > "$tmp/sft.jsonl"
"$ppa" sft --model "$tmp/lm" --data "$tmp/sft.jsonl" --lora-r 4 --lr 1e-2 --epochs 8 --batch-size 2 --micro-batch 2 --out "$tmp/sft" > "$tmp/sft.log" 2> "$tmp/err"
expect "sft --lora-r exits 0" test $? -eq 0
expect "sft writes an adapter" test -f "$tmp/sft/adapter_model.safetensors"
l0=$(head -1 "$tmp/sft.log" | grep -o '"loss": [0-9.]*' | sed 's/.*: //')
l1=$(grep "^{\"step\"" "$tmp/sft.log" | tail -1 | grep -o '"loss": [0-9.]*' | sed 's/.*: //')
expect "sft loss falls ($l0 -> $l1)" awk -v a="$l0" -v b="$l1" 'BEGIN { exit !(b != "" && b < a) }'
"$ppa" train --model "$tmp/lm" --adapter "$tmp/sft" --data "$tmp/train.jsonl" --list-size 4 --batch-size 4 --max-steps 1 --warmup-ratio 0 --out "$tmp/cont" 2> "$tmp/err"
expect "train --adapter continues an adapter" test $? -eq 0 -a -f "$tmp/cont/adapter_model.safetensors"
"$ppa" train --model "$tmp/lm" --adapter "$tmp/sft" --lora-r 8 --data "$tmp/train.jsonl" --out "$tmp/x1" > /dev/null 2> "$tmp/err"
expect_status "--adapter with --lora-r is refused" 2 "$?"
expect "saying the adapter sets its shape" has "$tmp/err" "sets its own shape"

# -- recipes: use_peft
printf 'model_name_or_path: %s\ntrain_file: %s\noutput_dir: %s\nuse_peft: true\nlora_r: 2\nlora_target_modules:\n  - q_proj\n  - v_proj\nmax_steps: 1\nwarmup_ratio: 0\nlist_size: 4\nbatch_size: 4\n' \
  "$tmp/lm" "$tmp/train.jsonl" "$tmp/rec" > "$tmp/rec.yaml"
"$ppa" train --config "$tmp/rec.yaml" 2> "$tmp/err"
expect "a use_peft recipe trains an adapter" test -f "$tmp/rec/adapter_config.json"
py "$tmp/rec/adapter_config.json" > "$tmp/py" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
print(c["r"], c["lora_alpha"], c["lora_dropout"], c["target_modules"])
P
expect "r 2, TRL's alpha 32 and dropout 0.05, the listed targets" has "$tmp/py" "2 32 0.05 ['q_proj', 'v_proj']"
printf 'model_name_or_path: %s\ntrain_file: %s\noutput_dir: %s\nlora_r: 2\nmax_steps: 1\nwarmup_ratio: 0\nlist_size: 4\nbatch_size: 4\n' \
  "$tmp/lm" "$tmp/train.jsonl" "$tmp/rec2" > "$tmp/rec2.yaml"
"$ppa" train --config "$tmp/rec2.yaml" 2> "$tmp/err"
expect "lora_r without use_peft: every parameter trains (TRL's rule)" test -f "$tmp/rec2/config.json"
expect "with a note" has "$tmp/err" "lora_r ignored: use_peft is not true"

# -- refusals
cp -r "$tmp/a" "$tmp/dora" && sed -i 's/"use_dora": false/"use_dora": true/' "$tmp/dora/adapter_config.json"
"$ppa" logprobs --model "$tmp/lm" --adapter "$tmp/dora" --data "$tmp/held.jsonl" > /dev/null 2> "$tmp/err"
expect_status "a DoRA adapter is refused" 2 "$?"
expect "naming the file and field" has "$tmp/err" "dora/adapter_config.json: use_dora = true"
cp -r "$tmp/a" "$tmp/few" && sed -i 's/"r": 4/"r": 3/' "$tmp/few/adapter_config.json"
"$ppa" logprobs --model "$tmp/lm" --adapter "$tmp/few" --data "$tmp/held.jsonl" > /dev/null 2> "$tmp/err"
expect_status "tensors of another rank are refused" 2 "$?"
expect "naming the tensor and shapes" has "$tmp/err" "lora_A.weight has shape [4, 32], expected [3, 32]"
cp -r "$tmp/a" "$tmp/rx" && py "$tmp/rx/adapter_config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1])); c["target_modules"] = ".*proj"; json.dump(c, open(sys.argv[1], "w"))
P
"$ppa" logprobs --model "$tmp/lm" --adapter "$tmp/rx" --data "$tmp/held.jsonl" > /dev/null 2> "$tmp/err"
expect_status "a regular expression for target_modules is refused" 2 "$?"
mkdir -p "$tmp/none"
"$ppa" logprobs --model "$tmp/lm" --adapter "$tmp/none" --data "$tmp/held.jsonl" > /dev/null 2> "$tmp/err"
expect_status "a folder without adapter_config.json is refused" 2 "$?"
"$ppa" train "${run[@]}" --lora-targets q_proj,lm_head --out "$tmp/x2" > /dev/null 2> "$tmp/err"
expect_status "an unknown target is refused" 2 "$?"
expect "naming it" has "$tmp/err" "'lm_head' is not a target"
"$ppa" train "${run[@]}" --lora-r 64 --out "$tmp/x3" > /dev/null 2> "$tmp/err"
expect_status "a rank above the layer's size is refused" 2 "$?"
report
