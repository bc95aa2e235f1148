#!/usr/bin/env bash
# Reward models on the command line: `ppa init` / `ppa inspect` of reward-model
# configs (score and ArmoRM heads), `ppa judge --reward-model` (scores written
# back, the prompt shared, --reward-index, bf16, FILE:LINE errors), the causal-LM
# commands refusing a reward model, and `ppa reward`: a reward model trained from
# a tiny causal LM on a synthetic list task (the label is the share of a's in the
# answer) reaching a high held-out ranking accuracy, its output folder, and an
# exact resume. Usage: tests/test_reward.sh PPA_BINARY.
ppa=${1:-./ppa}
NAME=test_reward
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; }
not() { ! "$@"; }
expect_status() { if [ "$3" -eq "$2" ]; then ok; else bad "$1 (exit $3, wanted $2)"; fi; } # DESCRIPTION WANT GOT

tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/lm" --seed 1 > /dev/null 2>&1
expect "a tiny causal LM" test -f "$tmp/lm/model.safetensors"
python3 - "$tmp" <<'P'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
s = dict(c, architectures=["LlamaForSequenceClassification"], id2label={"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
         label2id={"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2}, pad_token_id=257)
json.dump(s, open(d + "/rm.json", "w"))
json.dump(dict(c, architectures=["LlamaForRewardModelWithGating"], num_objectives=19), open(d + "/armo.json", "w"))
json.dump(dict(c, architectures=["LlamaForTokenClassification"]), open(d + "/bad.json", "w"))
P

# -- init and inspect
"$ppa" init --config "$tmp/rm.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/rm" --seed 2 > /dev/null 2>&1
expect "init writes a reward model" has "$tmp/rm/config.json" '"LlamaForSequenceClassification"'
expect "with id2label" has "$tmp/rm/config.json" '"2": "LABEL_2"'
"$ppa" inspect "$tmp/rm" > "$tmp/insp" 2>&1
expect "inspect shows the head" has "$tmp/insp" "reward head score.weight [3, 32] on the last token (no lm_head)"
expect "inspect lists score.weight" has "$tmp/insp" "score.weight"
expect "no lm_head in a reward model" not has "$tmp/insp" "lm_head.weight"
"$ppa" init --config "$tmp/armo.json" --out "$tmp/armo" --seed 2 > /dev/null 2>&1
"$ppa" inspect "$tmp/armo" > "$tmp/insp2" 2>&1
expect "ArmoRM-style: 19 objective heads" has "$tmp/insp2" "regression_layer.weight [19, 32]"
"$ppa" init --config "$tmp/bad.json" --out "$tmp/bad" > "$tmp/err" 2>&1
expect_status "an unknown architecture is refused" 2 "$?"
expect "naming it" has "$tmp/err" 'LlamaForTokenClassification'

# -- judge: scores written back, one per response; the same rows any later reader takes
letter_lists > "$tmp/all.jsonl"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --reward-index 2 --out "$tmp/judged.jsonl" 2> "$tmp/err"
expect "judge exits 0" test $? -eq 0
expect "every row written" test "$(wc -l < "$tmp/judged.jsonl")" -eq 24
expect "summary" has "$tmp/err" "judge reward-model: 24 rows, 120 responses scored (output 2 of"
python3 - "$tmp" > "$tmp/py" <<'P'
import json, sys
d = sys.argv[1]
a = [json.loads(l) for l in open(d + "/all.jsonl")]
b = [json.loads(l) for l in open(d + "/judged.jsonl")]
ok = all(x["prompt"] == y["prompt"] and x["responses"] == y["responses"] and len(y["scores"]) == len(x["responses"])
         and y["scores"] != x["scores"] for x, y in zip(a, b))
print("fields kept, scores replaced" if ok else "MISMATCH")
print("distinct" if len({s for y in b for s in y["scores"]}) > 100 else "CONSTANT")
P
expect "fields kept, one new score per response" has "$tmp/py" "fields kept, scores replaced"
expect "scores are not constant" has "$tmp/py" "distinct"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --reward-index 2 2> /dev/null > "$tmp/judged2.jsonl"
expect "stdout equals --out, bytes" cmp -s "$tmp/judged.jsonl" "$tmp/judged2.jsonl"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --reward-index 2 --threads 1 2> /dev/null > "$tmp/judged1.jsonl"
expect "1 thread: the same bytes" cmp -s "$tmp/judged.jsonl" "$tmp/judged1.jsonl"
head -1 "$tmp/all.jsonl" > "$tmp/one.jsonl"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/one.jsonl" --reward-index 2 2> /dev/null > "$tmp/judged_one.jsonl"
expect "a row's scores do not depend on the other rows" test "$(head -1 "$tmp/judged.jsonl")" = "$(cat "$tmp/judged_one.jsonl")"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --reward-index 3 > /dev/null 2> "$tmp/err"
expect_status "--reward-index past the head is refused" 2 "$?"
expect "with the head's size" has "$tmp/err" "has 3 outputs (0..2)"
{ head -2 "$tmp/all.jsonl"; echo '{"prompt": "x", "responses": "nope"}'; } > "$tmp/badrows.jsonl"
cp "$tmp/judged.jsonl" "$tmp/keep.jsonl"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/badrows.jsonl" --out "$tmp/keep.jsonl" > /dev/null 2> "$tmp/err"
expect_status "a bad row stops the judge" 2 "$?"
expect "naming FILE:LINE" has "$tmp/err" "badrows.jsonl:3"
expect "--out left unchanged" cmp -s "$tmp/keep.jsonl" "$tmp/judged.jsonl"
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/badrows.jsonl" --skip-invalid > "$tmp/skipped.jsonl" 2> "$tmp/err"
expect "--skip-invalid: the good rows" test "$(wc -l < "$tmp/skipped.jsonl")" -eq 2
expect "the bad one counted" has "$tmp/err" "1 invalid rows left out"
if grep -q avx512_bf16 /proc/cpuinfo || [ "${PPA_BF16:-}" = builtin ]; then
  "$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --reward-index 2 --precision bf16 2> /dev/null > "$tmp/jb.jsonl"
  python3 - "$tmp" > "$tmp/py" <<'P'
import json, sys
d = sys.argv[1]
a = [s for l in open(d + "/judged.jsonl") for s in json.loads(l)["scores"]]
b = [s for l in open(d + "/jb.jsonl") for s in json.loads(l)["scores"]]
print("bf16 close" if len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < 0.05 else "bf16 FAR")
P
  expect "bf16 scores near float32 ones" has "$tmp/py" "bf16 close"
fi

# -- the causal-LM commands refuse a reward model, and the judge a causal LM
"$ppa" logprobs --model "$tmp/rm" --data "$tmp/all.jsonl" > /dev/null 2> "$tmp/err"
expect_status "logprobs refuses a reward model" 2 "$?"
expect "saying what it is" has "$tmp/err" "is a reward model (LlamaForSequenceClassification)"
"$ppa" generate --model "$tmp/rm" --prompts "$tmp/all.jsonl" > /dev/null 2> "$tmp/err"
expect_status "generate refuses a reward model" 2 "$?"
"$ppa" judge --reward-model "$tmp/lm" --data "$tmp/all.jsonl" > /dev/null 2> "$tmp/err"
expect_status "judge refuses a causal LM" 2 "$?"
expect "saying so" has "$tmp/err" "is a causal LM (LlamaForCausalLM), not a reward model"

# -- ppa reward: Bradley-Terry from the causal LM; the held-out accuracy in the log
head -18 "$tmp/all.jsonl" > "$tmp/train.jsonl"
tail -6 "$tmp/all.jsonl" > "$tmp/eval.jsonl"
args=(--model "$tmp/lm" --data "$tmp/train.jsonl" --eval-data "$tmp/eval.jsonl" --lr 3e-3 --epochs 30 --batch-size 6
      --micro-batch 6 --list-size 5 --warmup-ratio 0 --threads 1)
"$ppa" reward "${args[@]}" --out "$tmp/rmt" 2> "$tmp/err"
expect "reward trains" test $? -eq 0
expect "a sequence-classification folder" has "$tmp/rmt/config.json" '"LlamaForSequenceClassification"'
expect "Bradley-Terry by default" has "$tmp/err" "dpo_all_pairs, s = reward output 0"
acc=$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if '\"eval\"' in l][-1]['eval']['ranking_accuracy'])" "$tmp/rmt/train_log.jsonl")
expect "held-out ranking accuracy >= 0.9 (got $acc)" python3 -c "import sys; sys.exit(float(sys.argv[1]) < 0.9)" "$acc"
"$ppa" judge --reward-model "$tmp/rmt" --data "$tmp/eval.jsonl" > "$tmp/rj.jsonl" 2> /dev/null
expect "the trained model judges" test "$(wc -l < "$tmp/rj.jsonl")" -eq 6
"$ppa" reward "${args[@]}" --objective neural_ndcg --max-steps 3 --out "$tmp/rmn" 2> "$tmp/err"
expect "a listwise objective trains a reward model too" test -f "$tmp/rmn/model.safetensors"
"$ppa" reward "${args[@]}" --objective simpo --out "$tmp/rms" > /dev/null 2> "$tmp/err"
expect_status "simpo is refused for a reward model" 2 "$?"

# -- winrate with the trained reward model: answers stripped of their a's lose; the swap gives 1 - p
python3 - "$tmp" <<'P'
import json, sys
d = sys.argv[1]
with open(d + "/A.jsonl", "w") as a, open(d + "/B.jsonl", "w") as b:
    for l in open(d + "/all.jsonl"):  # each prompt's answer with the most a's, against it with its a's made e's
        r = json.loads(l)
        best = max(r["responses"], key=lambda x: x.count("a") / len(x))
        if "a" in best:
            a.write(json.dumps({"prompt": r["prompt"], "responses": [best]}) + "\n")
            b.write(json.dumps({"prompt": r["prompt"], "response": best.replace("a", "e")}) + "\n")
P
"$ppa" winrate --a "$tmp/A.jsonl" --b "$tmp/B.jsonl" --judge reward-model --reward-model "$tmp/rmt" > "$tmp/w1" 2> /dev/null
"$ppa" winrate --a "$tmp/B.jsonl" --b "$tmp/A.jsonl" --judge reward-model --reward-model "$tmp/rmt" > "$tmp/w2" 2> /dev/null
python3 - "$tmp" > "$tmp/py" <<'P'
import json, sys
d = sys.argv[1]
w1, w2 = json.load(open(d + "/w1")), json.load(open(d + "/w2"))
print("wins %s" % ("yes" if w1["win_rate"] > 0.9 else "no %g" % w1["win_rate"]))
print("swap %s" % ("exact" if abs(w1["win_rate"] + w2["win_rate"] - 1) < 1e-12 else "off"))
P
expect "the reward model prefers the answers with a's" has "$tmp/py" "wins yes"
expect "swapping A and B gives 1 - the win rate" has "$tmp/py" "swap exact"
"$ppa" winrate --a "$tmp/A.jsonl" --b "$tmp/B.jsonl" --judge reward-model --reward-model "$tmp/lm" > /dev/null 2> "$tmp/err"
expect_status "winrate refuses a causal LM as a reward model" 2 "$?"

# -- the pair-preference judge on the causal LM: a K x K matrix whose mirror entries add to 1
printf 'Q: {prompt} 1: {response_A} 2: {response_B} ->\n' > "$tmp/pair.txt"
"$ppa" judge --pair-model "$tmp/lm" --pair-template "$tmp/pair.txt" --data "$tmp/eval.jsonl" > "$tmp/pj.jsonl" 2> "$tmp/err"
expect "the pair judge runs" test "$(wc -l < "$tmp/pj.jsonl")" -eq 6
expect "and counts its pairs" has "$tmp/err" "6 rows, 30 responses, 60 pairs judged in both orders"
python3 - "$tmp" > "$tmp/py" <<'P'
import json, sys
ok = True
for l in open(sys.argv[1] + "/pj.jsonl"):
    r = json.loads(l)
    P, s, K = r["preferences"], r["scores"], len(r["responses"])
    for i in range(K):
        ok &= P[i][i] is None and abs(s[i] - sum(P[i][j] for j in range(K) if j != i) / (K - 1)) < 1e-12
        for j in range(K):
            ok &= i == j or P[i][j] + P[j][i] == 1.0
print("symmetric" if ok else "ASYMMETRIC")
P
expect "p(i over j) + p(j over i) = 1 exactly; scores are the mean preferences" has "$tmp/py" "symmetric"
"$ppa" winrate --a "$tmp/A.jsonl" --b "$tmp/B.jsonl" --judge pair-model --pair-model "$tmp/lm" --pair-template "$tmp/pair.txt" \
  > "$tmp/w3" 2> /dev/null
"$ppa" winrate --a "$tmp/B.jsonl" --b "$tmp/A.jsonl" --judge pair-model --pair-model "$tmp/lm" --pair-template "$tmp/pair.txt" \
  > "$tmp/w4" 2> /dev/null
expect "pair-model win rates: the swap gives 1 - p" python3 -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(abs(a['win_rate']+b['win_rate']-1)>1e-12 or abs(a['mean_preference']+b['mean_preference']-1)>1e-12)" "$tmp/w3" "$tmp/w4"
"$ppa" judge --pair-model "$tmp/rm" --pair-template "$tmp/pair.txt" --data "$tmp/eval.jsonl" > /dev/null 2> "$tmp/err"
expect_status "the pair judge refuses a reward model" 2 "$?"
"$ppa" judge --pair-model "$tmp/lm" --data "$tmp/eval.jsonl" > /dev/null 2> "$tmp/err"
expect_status "the pair judge needs its template" 2 "$?"

# -- exact resume: stop at a checkpoint, continue, the same bytes as one run
short=(--model "$tmp/lm" --data "$tmp/train.jsonl" --lr 3e-3 --max-steps 6 --batch-size 6 --micro-batch 3 --list-size 5
       --threads 1 --save-every 3)
"$ppa" reward "${short[@]}" --out "$tmp/r1" 2> /dev/null
"$ppa" reward "${short[@]}" --out "$tmp/r2" 2> /dev/null
rm -f "$tmp/r2/model.safetensors" "$tmp/r2/config.json"
rm -rf "$tmp/r2/checkpoint-6"
"$ppa" reward "${short[@]}" --out "$tmp/r2" --resume "$tmp/r2/checkpoint-3" 2> "$tmp/err"
expect "resumed at step 3" has "$tmp/err" "resuming at step 3"
expect "resume: the same weights, bytes" cmp -s "$tmp/r1/model.safetensors" "$tmp/r2/model.safetensors"
report
