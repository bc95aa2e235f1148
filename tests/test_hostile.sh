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

# -- ranks: whole numbers forming a standard competition ranking of the row's K responses (1, 2, 2, 4), refused
# otherwise with FILE:LINE and the entry (rank 7 of 3 became "label -2"); scores given as well must agree
rank_row() { sed "4s/\"scores\": \[0.4, 0.5, 0.1\]/$1/" "$tmp/good.jsonl" > "$tmp/ranks.jsonl"; }
rank_row '"ranks": [1, 1, 7]'
train --data "$tmp/ranks.jsonl" --out "$tmp/o_r7" > /dev/null 2> "$tmp/err"
expect "ranks [1, 1, 7] refused (exit 2)" test $? -eq 2
expect "... with FILE:LINE and the entry" grep -q "ranks.jsonl:4: ranks\[2\] = 7: a rank must be a whole number from 1 (best) to 3" "$tmp/err"
expect "... never as a label the user did not write" sh -c "! grep -q 'label -2' '$tmp/err'"
expect "... and no model" test ! -e "$tmp/o_r7/config.json"
train --data "$tmp/ranks.jsonl" --out "$tmp/o_r7s" --skip-invalid > /dev/null 2> "$tmp/err"
expect "--skip-invalid: the row is skipped and training goes on" test $? -eq 0 -a -s "$tmp/o_r7s/config.json"
expect "... named and counted as other bad lines" grep -q "ranks.jsonl:4: skipped: ranks\[2\] = 7" "$tmp/err"
expect "... in the count" grep -q "skipped 1 invalid rows of $tmp/ranks.jsonl" "$tmp/err"
rank_row '"ranks": [1, 1, 2]'
train --data "$tmp/ranks.jsonl" --out "$tmp/o_dense" > /dev/null 2> "$tmp/err"
expect "dense ranks [1, 1, 2] refused, with the rank they mean" grep -q "ranks.jsonl:4: ranks\[2\] = 2: 2 responses rank better, so its rank is 3" "$tmp/err"
rank_row '"scores": [0.4, 0.5, 0.1], "ranks": [1, 2, 3]'
train --data "$tmp/ranks.jsonl" --out "$tmp/o_dis" > /dev/null 2> "$tmp/err"
expect "scores and ranks that disagree are refused (exit 2)" test $? -eq 2
expect "... naming both" grep -q 'ranks.jsonl:4: scores\[0\] = 0.4 and scores\[1\] = 0.5 but ranks\[0\] = 1 and ranks\[1\] = 2: "scores" and "ranks" disagree' "$tmp/err"
rank_row '"scores": [0.4, 0.5, 0.1], "ranks": [2, 1, 3]'
train --data "$tmp/ranks.jsonl" --out "$tmp/o_agree" > /dev/null 2> "$tmp/err"
expect "scores and ranks that agree train" test -s "$tmp/o_agree/config.json"
rank_row '"ranks": [1, 3, 1]'
train --data "$tmp/ranks.jsonl" --out "$tmp/o_tie" > /dev/null 2> "$tmp/err"
expect "competition ranks with a tie [1, 3, 1] train" test -s "$tmp/o_tie/config.json"

# -- values whose arithmetic overflows are refused before anything runs, naming the option and the bound
# (they were reported as "the weights or the data hold NaN or Inf", or trained: --lr 1e30)
opt_refused() { # opt_refused DESCRIPTION EXPECTED COMMAND...
  local d=$1 want=$2; shift 2
  "$@" > /dev/null 2> "$tmp/err"
  local st=$?
  if [ $st -eq 2 ] && grep -qF -- "$want" "$tmp/err" && ! grep -q "NaN or Inf" "$tmp/err"; then ok; else bad "$d (status $st: $(tail -1 "$tmp/err"))"; fi
}
opt_refused "train --beta 1e300" "--beta 1e+300 is above 1e+20: beta scales the scores" train --data "$tmp/good.jsonl" --out "$tmp/o_b" --beta 1e300
opt_refused "train --tau 1e-300" "--tau 1e-300 is too small for beta 0.1 (the default): beta / tau above 1e+20" train --data "$tmp/good.jsonl" --out "$tmp/o_t" --tau 1e-300
opt_refused "train --lr 1e30" "--lr 1e+30 is above 1e+18: one AdamW step moves a weight by about lr" train --data "$tmp/good.jsonl" --out "$tmp/o_l" --lr 1e30
opt_refused "sft --lr 1e30" "--lr 1e+30 is above 1e+18" "$ppa" sft --model "$tmp/m" --data "$tmp/good.jsonl" --template none --out "$tmp/s_l" --lr 1e30
opt_refused "reward --tau 1e-30" "--tau 1e-30 is below 1e-20" "$ppa" reward --model "$tmp/m" --data "$tmp/good.jsonl" --template none --out "$tmp/r_t" --objective neural_ndcg --tau 1e-30
expect "no output folder for a refused option" test ! -e "$tmp/o_b" -a ! -e "$tmp/o_l" -a ! -e "$tmp/s_l"

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
expect "train: and that the loaded weights are the cause" grep -q "step 1: the list of data line [0-9]*: response [0-9]*: the log-probability is not finite (.*nan): parameter [0-9]* of the weights is not finite (NaN or Inf as loaded); nothing was updated" "$tmp/err"
expect "train: no model written" test ! -e "$tmp/o_nan/config.json" -a ! -e "$tmp/o_nan/model.safetensors"
expect "train: no log line for the failed step" test ! -s "$tmp/o_nan/train_log.jsonl"

"$ppa" sft --model "$tmp/nan" --data "$tmp/good.jsonl" --template none --out "$tmp/sft_nan" --max-steps 1 --batch-size 2 > "$tmp/out" 2> "$tmp/err"
expect "sft: NaN weights exit 2" test $? -eq 2
expect "sft: names the step" grep -q "sft: step 1: the loss is not finite" "$tmp/err"
expect "sft: and the loaded weights as the cause" grep -q "sft: step 1: the loss is not finite (.*nan): parameter [0-9]* of the weights is not finite (NaN or Inf as loaded)" "$tmp/err"
expect "sft: no model and no nan in its log" sh -c "test ! -e '$tmp/sft_nan/config.json' && ! grep -qi nan '$tmp/out'"

# -- divergence: a model whose log-probs stop being finite after an update stops the run (non-zero, the step, the
# likely cause with its value), and is never saved: not as the final model, not as a checkpoint (--lr 1e10 is below
# the bound of certain overflow, but on this model one step of 1e10 overflows float32)
train --data "$tmp/good.jsonl" --out "$tmp/dv" --lr 1e10 --warmup-ratio 0 --max-steps 3 > /dev/null 2> "$tmp/err"
expect "diverged at step 2: exit 1 (a runtime failure)" test $? -eq 1
expect "... naming the step, the list and the non-finite log-prob" grep -q "step 2: the list of data line [0-9]*: response [0-9]*: the log-probability is not finite" "$tmp/err"
expect "... the update that diverged and the likely cause with its value" grep -q "the model diverged in the update of step 1 (its weights are finite, their float32 products overflow); likely cause: the learning rate 1e+10" "$tmp/err"
expect "... not blaming the data" sh -c "! grep -q 'NaN or Inf' '$tmp/err'"
expect "... and no model" test ! -e "$tmp/dv/config.json" -a ! -e "$tmp/dv/model.safetensors"
expect "... the log has the one step that ran" test "$(wc -l < "$tmp/dv/train_log.jsonl")" -eq 1
train --data "$tmp/good.jsonl" --out "$tmp/dv1" --lr 1e10 --warmup-ratio 0 --max-steps 1 > /dev/null 2> "$tmp/err"
expect "the last update diverged: exit 1" test $? -eq 1
expect "... found on the step's own lists after the update" grep -q "step 1: after its update, the list of data line [0-9]*: response [0-9]*: the log-probability is not finite.*likely cause: the learning rate 1e+10.*; nothing was saved" "$tmp/err"
expect "... and the diverged model is not written" test ! -e "$tmp/dv1/config.json" -a ! -e "$tmp/dv1/model.safetensors"
train --data "$tmp/good.jsonl" --out "$tmp/dvc" --lr 1e10 --warmup-ratio 0 --max-steps 3 --save-every 1 > /dev/null 2> "$tmp/err"
expect "a diverged checkpoint is not written either" sh -c "test $? -eq 1 && ! ls -d '$tmp/dvc'/checkpoint-* > /dev/null 2>&1"
train --data "$tmp/good.jsonl" --out "$tmp/dvl" --lr 0.01 --warmup-ratio 0 --max-steps 3 --lora-r 2 --lora-alpha 1e15 > /dev/null 2> "$tmp/err"
expect "an adapter's extreme scale is named as the likely cause" grep -q "the model diverged in the update of step 1.*likely cause: the adapter's scale alpha / r = 5e+14" "$tmp/err"
"$ppa" sft --model "$tmp/m" --data "$tmp/good.jsonl" --template none --out "$tmp/sdv" --lr 1e10 --warmup-ratio 0 --max-steps 3 --batch-size 2 > "$tmp/out" 2> "$tmp/err"
expect "sft: diverged at step 2: exit 1" test $? -eq 1
expect "... naming the step, the update and the likely cause" grep -q "sft: step 2: the loss is not finite (.*nan): the model diverged in the update of step 1; likely cause: the learning rate 1e+10" "$tmp/err"
"$ppa" sft --model "$tmp/m" --data "$tmp/good.jsonl" --template none --out "$tmp/sdv1" --lr 1e10 --warmup-ratio 0 --max-steps 1 --batch-size 2 > "$tmp/out" 2> "$tmp/err"
expect "sft: the last update diverged: exit 1" test $? -eq 1
expect "... found after the update" grep -q "sft: step 1: after its update the log-probabilities of its rows are not finite: the model diverged in that update; likely cause: the learning rate 1e+10" "$tmp/err"
expect "sft: ... and no model" test ! -e "$tmp/sdv1/config.json" -a ! -e "$tmp/sdv/config.json"

# -- messages name the real cause
: > "$tmp/empty.jsonl"
train --data "$tmp/empty.jsonl" --out "$tmp/o_empty" > /dev/null 2> "$tmp/err"
expect "train: an empty data file exits 2" test $? -eq 2
expect "... and says so, not 'all labels equal'" sh -c "grep -q 'empty.jsonl holds no rows: nothing to train on' '$tmp/err' && ! grep -q 'labels equal' '$tmp/err'"
"$ppa" eval --model "$tmp/m" --ref "$tmp/m" --template none --data "$tmp/empty.jsonl" > /dev/null 2> "$tmp/err"
expect "eval: an empty data file: nothing to evaluate (not 'train on')" sh -c "grep -q 'eval: .*empty.jsonl holds no rows: nothing to evaluate' '$tmp/err' && ! grep -q 'train on' '$tmp/err'"
printf '{"prompt": "q", "responses": ["a", "b"], "scores": [1, 1]}\n' > "$tmp/equal.jsonl"
"$ppa" eval --model "$tmp/m" --ref "$tmp/m" --template none --data "$tmp/equal.jsonl" > /dev/null 2> "$tmp/err"
expect "eval: rows that give no list are counted" grep -q "equal.jsonl gives no list: of its 1 row, 1 has all labels equal and 0 have fewer than 2 labelled, distinct responses: nothing to evaluate" "$tmp/err"
cp -r "$tmp/m" "$tmp/theta"
sed -i -E 's/"rope_theta": [0-9.e+]+/"rope_theta": 1e400/' "$tmp/theta/config.json"
"$ppa" logprobs --template none --model "$tmp/theta" --data "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "config.json rope_theta 1e400: the key and the overflow named, not null" grep -q 'config.json: rope_theta = a number that overflows a double (expected a number > 0)' "$tmp/err"
# finite weights too large for float32 products (a model diverged by an earlier run): not called NaN or Inf
cp -r "$tmp/m" "$tmp/huge"
/usr/bin/python3 - "$tmp/huge/model.safetensors" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
for o in range(8 + n, len(b), 4):
    b[o:o + 4] = struct.pack("<f", 1e12 if struct.unpack("<f", b[o:o + 4])[0] >= 0 else -1e12)
open(sys.argv[1], "wb").write(b)
PY
"$ppa" logprobs --template none --model "$tmp/huge" --data "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "logprobs: huge finite weights named as such" grep -q "the log-probability is not finite (.*nan): the model's weights are finite, so their float32 products overflow" "$tmp/err"
train --data "$tmp/good.jsonl" --model "$tmp/huge" --ref "$tmp/m" --out "$tmp/o_huge" > /dev/null 2> "$tmp/err"
expect "train: huge loaded weights named as the cause at step 1" grep -q "step 1: the list of data line [0-9]*: response [0-9]*: the log-probability is not finite (.*nan): the weights as loaded are finite, so their float32 products overflow: weights too large; nothing was updated" "$tmp/err"

# -- checkpoints: their files are checksummed and verified on resume; a killed save's leftovers are cleaned
ck=(--data "$tmp/good.jsonl" --list-size 3 --batch-size 2 --lr 0.01 --max-steps 2 --save-every 1)
train "${ck[@]}" --out "$tmp/ck" > /dev/null 2>&1
expect "a checkpoint lists the checksums of its files" grep -q '"optimizer.safetensors":' "$tmp/ck/checkpoint-1/ppa_state.json"
resume_from() { rm -rf "$tmp/r" && mkdir "$tmp/r" && cp -r "$1" "$tmp/r/checkpoint-1" && \
  "$ppa" train --model "$tmp/m" --template none "${ck[@]}" --out "$tmp/r" --resume "$tmp/r/checkpoint-1" > /dev/null 2> "$tmp/err"; }
resume_from "$tmp/ck/checkpoint-1"
expect "an intact checkpoint resumes" test $? -eq 0 -a -s "$tmp/r/config.json"
cp -r "$tmp/ck/checkpoint-1" "$tmp/flip"
size=$(stat -c %s "$tmp/flip/optimizer.safetensors")
printf '\x01' | dd of="$tmp/flip/optimizer.safetensors" bs=1 seek=$((size - 3)) conv=notrunc status=none
resume_from "$tmp/flip"
expect "a flipped byte in the optimizer file is refused (exit 2)" test $? -eq 2
expect "... naming the file and the checksum" grep -q "optimizer.safetensors: changed since the checkpoint was written" "$tmp/err"
cp "$tmp/ck/checkpoint-1/optimizer.safetensors" "$tmp/flip/"
printf '\x01' | dd of="$tmp/flip/model.safetensors" bs=1 seek=$(($(stat -c %s "$tmp/flip/model.safetensors") - 3)) conv=notrunc status=none
resume_from "$tmp/flip"
expect "a flipped byte in the model file is refused" grep -q "model.safetensors: changed since" "$tmp/err"
# a hand-edited step: ppa_state.json covers itself (state_checksum)
rm -rf "$tmp/flip" && cp -r "$tmp/ck/checkpoint-1" "$tmp/flip"
sed -i -E 's/("step":[[:space:]]*)1,/\12,/' "$tmp/flip/ppa_state.json"
resume_from "$tmp/flip"
expect "an edited step is refused" grep -q "ppa_state.json does not match its checksum (state_checksum)" "$tmp/err"
# a moment of -1, in a state without checksums (as older ppa wrote them)
rm -rf "$tmp/flip" && cp -r "$tmp/ck/checkpoint-1" "$tmp/flip"
/usr/bin/python3 - "$tmp/flip" <<'PY'
import json, struct, sys
d = sys.argv[1]
st = json.load(open(d + "/ppa_state.json")); del st["checksums"]; json.dump(st, open(d + "/ppa_state.json", "w"))
b = bytearray(open(d + "/optimizer.safetensors", "rb").read())
n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); o = 8 + n + h["exp_avg_sq"]["data_offsets"][0]
b[o:o + 4] = struct.pack("<f", -1.0); open(d + "/optimizer.safetensors", "wb").write(b)
PY
resume_from "$tmp/flip"
expect "an exp_avg_sq of -1 with the checksums removed is refused" grep -q "ppa_state.json does not match its checksum" "$tmp/err"
# a kill in the middle of a save leaves a partial folder; the next run removes it
mkdir -p "$tmp/r2/checkpoint-5.partial.tmp.123" && cp -r "$tmp/ck/checkpoint-1" "$tmp/r2/"
"$ppa" train --model "$tmp/m" --template none "${ck[@]}" --out "$tmp/r2" --resume "$tmp/r2/checkpoint-1" > /dev/null 2>&1
expect "stale partial saves are removed" test ! -e "$tmp/r2/checkpoint-5.partial.tmp.123" -a -s "$tmp/r2/config.json"

# -- a Split pattern that hits PCRE2's match limit: refused, not taken as "no more matches" (which dropped text)
echo '{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a|aa)+b"}, "behavior": "Removed"},
 "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}, "merges": []}}' > "$tmp/limit.json"
echo '{"text": "aaaaacab"}' | "$ppa" tokenize --tokenizer "$tmp/limit.json" > "$tmp/out" 2> "$tmp/err"
expect "a short text matches: 'ab' removed" grep -q '^{"ids": \[0, 0, 0, 0, 0, 2\]}$' "$tmp/out"
printf '{"text": "%scab"}\n' "$(printf 'a%.0s' $(seq 40))" | "$ppa" tokenize --tokenizer "$tmp/limit.json" > "$tmp/out" 2> "$tmp/err"
expect "40 a's hit the match limit: exit 2" test $? -eq 2 -a ! -s "$tmp/out"
expect "... with the reason" grep -q "stdin:1: the pre-tokenizer's Split pattern needs more work on this text" "$tmp/err"

# -- the model's positions: never run past them (logprobs refuses, train cuts by its rule and says so)
awk 'BEGIN { printf "{\"prompt\": \""; for (i = 0; i < 1000000; i++) printf "x"; print "\", \"responses\": [\"a\", \"b\"], \"scores\": [1, 0]}" }' > "$tmp/huge.jsonl"
timeout 60 "$ppa" logprobs --model "$tmp/m" --template none --data "$tmp/huge.jsonl" > /dev/null 2> "$tmp/err"
expect "logprobs: a 1 MB prompt is refused (exit 2)" test $? -eq 2
expect "logprobs: with its length and the limit" grep -q "a sequence of 1000002 tokens is longer than the model's 64 positions" "$tmp/err"
awk 'BEGIN { for (r = 0; r < 4; r++) { printf "{\"prompt\": \"q%d ", r; for (i = 0; i < 80; i++) printf "x";
  printf "\", \"responses\": [\"a\", \"bb\", \"c\"], \"scores\": [0.%d, 0.5, 0.1]}\n", r } }' > "$tmp/longrows.jsonl"
train --data "$tmp/longrows.jsonl" --out "$tmp/o_long" > /dev/null 2> "$tmp/err"
expect "train: rows longer than the positions are cut, not refused" test -s "$tmp/o_long/config.json"
expect "train: and it says so" grep -q "max-length 1024 is more than the model's 64 positions: rows are cut to 64 tokens, prompts to 32" "$tmp/err"

# -- strict JSON at every edge: refused with FILE:LINE, never read differently
lp() { "$ppa" logprobs --model "$tmp/m" --template none "$@"; }
bad_line() { # bad_line DESCRIPTION LINE2 EXPECTED: the second line of a data file is refused, named
  { head -1 "$tmp/good.jsonl"; printf '%s\n' "$2"; } > "$tmp/strict.jsonl"
  lp --data "$tmp/strict.jsonl" > /dev/null 2> "$tmp/err"
  local st=$?
  if [ $st -eq 2 ] && grep -q "strict.jsonl:2: .*$3" "$tmp/err"; then ok; else bad "$1 (status $st: $(tail -1 "$tmp/err"))"; fi
}
bad_line "duplicate key" '{"prompt": "q", "responses": ["a", "b"], "scores": [1, 0], "scores": [0, 1]}' 'duplicate key "scores"'
bad_line "trailing garbage" '{"prompt": "q", "responses": ["a", "b"], "scores": [1, 0]} x' "content after the JSON value"
bad_line "NUL in a string" '{"prompt": "q\u0000hidden", "responses": ["a", "b"], "scores": [1, 0]}' "a string holds NUL"
bad_line "invalid UTF-8, named in its field" "$(printf '{"prompt": "q", "responses": ["a", "b\xfe"], "scores": [1, 0]}')" '"responses"\[1\]: invalid UTF-8 at byte 1 of the string'
bad_line "an id of 3.5" '{"id": 3.5, "prompt": "q", "responses": ["a", "b"], "scores": [1, 0]}' '"id" must be a whole number'
{ head -1 "$tmp/good.jsonl"; printf '{"prompt": "q", "responses": ["a", "b"],\0 "scores": [1, 0]}\n'; } > "$tmp/nul.jsonl"
lp --data "$tmp/nul.jsonl" > /dev/null 2> "$tmp/err"
expect "a NUL byte in a line is refused (exit 2)" test $? -eq 2
expect "and named" grep -q "nul.jsonl:2: a NUL byte" "$tmp/err"
lp --data "$tmp/nul.jsonl" --skip-invalid > "$tmp/out" 2> "$tmp/err"
expect "--skip-invalid skips it and goes on" test "$(wc -l < "$tmp/out")" -eq 1
# lines have a limit: a line that never ends stops at it
awk 'BEGIN { printf "{\"prompt\": \""; for (i = 0; i < 3000; i++) printf "x"; print "\", \"responses\": [\"a\", \"b\"]}" }' > "$tmp/long_line.jsonl"
lp --data "$tmp/long_line.jsonl" --max-line-bytes 2048 > /dev/null 2> "$tmp/err"
expect "a line over --max-line-bytes is refused (exit 2)" test $? -eq 2
expect "with its line and the limit" grep -q "long_line.jsonl:1: a line longer than 2048 bytes" "$tmp/err"
timeout 20 "$ppa" logprobs --model "$tmp/m" --data /dev/zero --max-line-bytes 1048576 > /dev/null 2> "$tmp/err"
expect "--data /dev/zero stops at the line limit" grep -q "/dev/zero:1: a line longer than 1048576 bytes" "$tmp/err"
# tokenizer.json: ids and booleans are typed
cp -r "$tmp/m" "$tmp/tk"
sed -i 's/"\\u0041": 65/"\\u0041": 65.5/' "$tmp/tk/tokenizer.json"
lp --model "$tmp/tk" --data "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "a vocab id of 65.5 is refused" grep -q 'model.vocab: "A" must be a whole number in \[0, 16777215\], found 65.5' "$tmp/err"
cp "$tmp/m/tokenizer.json" "$tmp/tk/tokenizer.json"
sed -i 's/"special": true/"special": "true"/' "$tmp/tk/tokenizer.json"
lp --model "$tmp/tk" --data "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "a boolean written as a string is refused" grep -q '"special" must be true or false, found "true"' "$tmp/err"
# tokenizer_config.json is read as strictly (a malformed one was silently ignored, losing its settings)
cp "$tmp/m/tokenizer.json" "$tmp/tk/tokenizer.json"
echo '{"clean_up_tokenization_spaces": "yes"}' > "$tmp/tk/tokenizer_config.json"
lp --model "$tmp/tk" --data "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "a malformed tokenizer_config.json is refused" grep -q 'tokenizer_config.json: "clean_up_tokenization_spaces" must be true or false' "$tmp/err"

report
