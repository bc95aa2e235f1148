#!/usr/bin/env bash
# Bad numbers never pass as success: labels whose gain overflows are refused
# (ppa loss, and ppa train before any step, with FILE:LINE), a NaN in the
# weights stops ppa train before any update and leaves no model, ppa
# logprobs refuses to print NaN (JSON has none).
# Usage: tests/test_hostile.sh PPA_BINARY. Prints "test_hostile: N passed, N failed".
ppa=$(realpath "${1:-./ppa}")
NAME=test_hostile
. "$(dirname "$0")/lib.sh"

# -- ppa loss: a label of 2000 (or 1e308) overflows 2^psi - 1
for psi in 2000 1e308 1000.5; do
  echo "{\"scores\": [1, 2, 3], \"labels\": [$psi, 1, 0]}" | "$ppa" loss --objective ppa > "$tmp/out" 2> "$tmp/err"
  expect "loss: label $psi refused (exit 2)" test $? -eq 2
  expect "loss: label $psi named with its line" grep -q "stdin:1: item 0: a label is above 1000" "$tmp/err"
  expect "loss: label $psi prints no result" test ! -s "$tmp/out"
done
echo '{"scores": [1, 2, 3], "labels": [1000, 1, 0]}' | "$ppa" loss --objective ppa > "$tmp/out" 2> "$tmp/err"
expect "loss: label 1000 is fine and finite" grep -q '^{"loss": -' "$tmp/out"
echo '{"scores": [1, 2], "labels": [2000, 1]}' | "$ppa" loss --objective dpo > "$tmp/out" 2> "$tmp/err"
expect "loss: dpo uses no gain, so 2000 is fine" grep -q '^{"loss": 1.31' "$tmp/out"

# -- a 20,000-item list: refused at once by approx_ndcg (n x n memory), computed by listmle (O(n) memory)
awk 'BEGIN { printf "{\"scores\": ["; for (i = 0; i < 20000; i++) printf "%s%.4f", i ? ", " : "", (i * 7919 % 1000) / 1000;
  printf "], \"labels\": ["; for (i = 0; i < 20000; i++) printf "%s%d", i ? ", " : "", i % 5; print "]}" }' > "$tmp/long.jsonl"
"$ppa" loss --objective approx_ndcg --input "$tmp/long.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "loss: approx_ndcg refuses 20,000 items (exit 2)" test $? -eq 2
expect "loss: and says why" grep -q "more than 1024 valid items" "$tmp/err"
"$ppa" loss --objective listmle --input "$tmp/long.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "loss: listmle takes 20,000 items" grep -q '^{"loss": [0-9]' "$tmp/out"

# -- ppa train: bad labels are found before any step, with the data line
tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" --seed 7 --init-std 0.3 > /dev/null
for i in 1 2 3 4 5 6; do echo "{\"prompt\": \"q$i\", \"responses\": [\"a\", \"bb\", \"c\"], \"scores\": [0.$i, 0.5, 0.1]}"; done > "$tmp/good.jsonl"
train() { "$ppa" train --model "$tmp/m" --template none --list-size 3 --batch-size 2 --lr 0.01 --max-steps 2 "$@"; }
for psi in 2000 -1; do
  sed "4s/0.4, 0.5/$psi, 0.5/" "$tmp/good.jsonl" > "$tmp/bad.jsonl"
  train --data "$tmp/bad.jsonl" --out "$tmp/o_$psi" > /dev/null 2> "$tmp/err"
  expect "train: label $psi refused (exit 2)" test $? -eq 2
  expect "train: label $psi named by FILE:LINE and response" grep -q "bad.jsonl:4: response 1: label $psi" "$tmp/err"
  expect "train: label $psi refused before any step" test ! -s "$tmp/o_$psi/train_log.jsonl"
  expect "train: no model for label $psi" test ! -e "$tmp/o_$psi/config.json"
done
sed "4s/0.4, 0.5/-1, 0.5/" "$tmp/good.jsonl" > "$tmp/bad.jsonl"
train --data "$tmp/bad.jsonl" --out "$tmp/o_dpo" --objective dpo > /dev/null 2> "$tmp/err"
expect "train: a negative label is fine for dpo" test -s "$tmp/o_dpo/config.json"

# -- a NaN in the weights: train stops before the update, saves nothing; logprobs refuses
cp -r "$tmp/m" "$tmp/nan"
size=$(stat -c %s "$tmp/nan/model.safetensors")
# the last float of the file (the last tensor in the file's order): a quiet NaN
printf '\x00\x00\xc0\x7f' | dd of="$tmp/nan/model.safetensors" bs=1 seek=$((size - 4)) conv=notrunc status=none
"$ppa" logprobs --model "$tmp/nan" --data "$tmp/good.jsonl" --template none > "$tmp/out" 2> "$tmp/err"
expect "logprobs: NaN weights exit 2" test $? -eq 2
expect "logprobs: prints no bare nan" sh -c "! grep -qi 'nan' '$tmp/out'"
expect "logprobs: says which row and why" grep -q "good.jsonl:1: response 1: the log-probability is not finite" "$tmp/err"
train --data "$tmp/good.jsonl" --model "$tmp/nan" --ref "$tmp/m" --out "$tmp/o_nan" > /dev/null 2> "$tmp/err"
expect "train: NaN weights exit 2" test $? -eq 2
expect "train: names the step and the list" grep -q "step 1: the list of data line [0-9]*: " "$tmp/err"
expect "train: no model written" test ! -e "$tmp/o_nan/config.json" -a ! -e "$tmp/o_nan/model.safetensors"
expect "train: no log line for the failed step" test ! -s "$tmp/o_nan/train_log.jsonl"

report
