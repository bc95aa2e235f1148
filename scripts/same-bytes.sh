#!/usr/bin/env bash
# scripts/same-bytes.sh OLD_PPA NEW_PPA: two builds of ppa compared on what they write, byte for byte
# (a refactor must leave them byte-identical): ppa train fp32, bf16, gradient checkpointing, bf16 with --low-memory
# and checkpointing, LoRA fp32 and bf16, dpo with weight decay; sft, reward, grad and bf16 logprobs on a 3-layer
# hidden-64 model. Prints "same: ..." or "DIFFERENT: ..." per run; exit 1 when one differs.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(realpath "$1") new=$(realpath "$2")
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT; cd "$t"
NAME=same_bytes
. "$root/tests/lib.sh" >/dev/null 2>&1
trap 'rm -rf "$t" "$tmp"' EXIT # ours and lib.sh's folder
tiny_model_files $t
python3 - <<'P'
import json
c=json.load(open('config.json')); c.update(num_hidden_layers=3, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
json.dump(c, open('config.json','w'))
P
$new init --config config.json --tokenizer tokenizer.json --out m --seed 3 --init-std 0.2 >/dev/null
letter_lists > D.jsonl
export PPA_BF16=builtin
fail=0
cmpit() { if cmp -s "$1/$3" "$2/$3"; then echo "same: $4"; else echo "DIFFERENT: $4"; fail=1; fi; }
base=(--model m --data D.jsonl --template none --list-size 4 --batch-size 4 --micro-batch 2 --lr 0.01 --max-steps 3 --seed 5)
i=0
for extra in "" "--precision bf16" "--gradient-checkpointing" "--precision bf16 --low-memory --gradient-checkpointing" "--lora-r 4" "--lora-r 4 --precision bf16" "--objective dpo --weight-decay 0.1"; do
  i=$((i+1))
  $old train "${base[@]}" $extra --out o$i > /dev/null 2>&1; $new train "${base[@]}" $extra --out n$i > /dev/null 2>&1
  f=model.safetensors; [ -e n$i/adapter_model.safetensors ] && f=adapter_model.safetensors
  cmpit o$i n$i $f "train $extra"
done
$old sft --model m --data D.jsonl --template none --max-steps 3 --out os >/dev/null 2>&1; $new sft --model m --data D.jsonl --template none --max-steps 3 --out ns >/dev/null 2>&1; cmpit os ns model.safetensors "sft"
$old reward --model m --data D.jsonl --template none --list-size 4 --batch-size 4 --max-steps 3 --out orw >/dev/null 2>&1; $new reward --model m --data D.jsonl --template none --list-size 4 --batch-size 4 --max-steps 3 --out nrw >/dev/null 2>&1; cmpit orw nrw model.safetensors "reward"
$old grad --model m --data D.jsonl --template none --objective ppa --beta 0.1 --out og.st >/dev/null 2>&1; $new grad --model m --data D.jsonl --template none --objective ppa --beta 0.1 --out ng.st >/dev/null 2>&1; cmp -s og.st ng.st && echo "same: grad" || { echo "DIFFERENT: grad"; fail=1; }
$old logprobs --model m --data D.jsonl --template none --precision bf16 > olp 2>/dev/null; $new logprobs --model m --data D.jsonl --template none --precision bf16 > nlp 2>/dev/null; cmp -s olp nlp && echo "same: logprobs bf16" || { echo "DIFFERENT: logprobs"; fail=1; }
exit $fail
