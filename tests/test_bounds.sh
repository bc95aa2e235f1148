#!/usr/bin/env bash
# Every input bounded in time and memory, and no silent acceptance (docs/safety.md): a Split pattern that backtracks
# without end, normalizers that multiply the text, a chat template that loops, a row of too many responses; options
# outside their domain, SOURCE_DATE_EPOCH that is not a date, an adapter of another kind of model, test hooks absent
# from ./ppa. Each refusal exits 2 and names its bound. Usage: tests/test_bounds.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_bounds
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
letter_lists > lists.jsonl
has() { grep -qF -- "$2" "$1"; }
# with_tok DIR PYTHON-EDIT: a copy of the tiny tokenizer in DIR, edited (t: its JSON)
with_tok() {
  mkdir -p "$1" && python3 -c 'import json, sys
t = json.load(open("tokenizer.json")); exec(sys.argv[2]); json.dump(t, open(sys.argv[1] + "/tokenizer.json", "w"))' "$1" "$2"
}

# -- a Split pattern that backtracks exponentially: refused on the text, at once, naming the bound
with_tok evil 't["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?:a|a){0,21}c|."}, "behavior": "Isolated", "invert": False}, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}'
python3 -c 'import json; print(json.dumps({"text": "a" * 4000}))' > a4000.jsonl
"$ppa" tokenize --tokenizer evil < a4000.jsonl > /dev/null 2> err; st=$?
expect "a backtracking Split pattern on 4,000 characters: refused (exit 2)" test $st -eq 2
expect "... naming the line and the bound" has err "stdin:1: the pre-tokenizer's Split pattern needs more work on this text (bytes 0 to 4000) than its bound (65536 + 256 per byte match steps"
echo '{"text": "a cat sat"}' | "$ppa" tokenize --tokenizer evil > out 2> err; st=$?
expect "... the same tokenizer on ordinary text: tokenized" sh -c "test $st -eq 0 && grep -q '\"ids\": \\[97, 32, 99' out"

# -- normalizers that multiply the text: refused past 32 x + 1024 bytes
with_tok evilnorm 'r = {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 100}; t["normalizer"] = {"type": "Sequence", "normalizers": [r, r, r, r]}'
echo '{"text": "aaaaaaaaaa"}' | "$ppa" tokenize --tokenizer evilnorm > /dev/null 2> err; st=$?
expect "four nested Replace steps on 10 characters: refused (exit 2)" test $st -eq 2
expect "... naming the bound" has err "the tokenizer's normalizer makes this text (bytes 0 to 10) longer than its bound (32 x its length + 1024 bytes"
echo '{"text": "bbb"}' | "$ppa" tokenize --tokenizer evilnorm > out 2> err; st=$?
expect "... and text it leaves alone: tokenized" sh -c "test $st -eq 0 && grep -q '\"ids\": \\[98, 98, 98\\]' out"

# -- a chat template that loops: refused with the bound at the model's first render (its probe)
mkdir tpl && cp m/* tpl/
printf '%s\n' '{"chat_template": "{% for i in range(1000) %}{% for j in range(300) %}{{ \"\" }}{% endfor %}{% endfor %}{% for m in messages %}{{ m[\"content\"] }}</s>{% endfor %}", "eos_token": "</s>"}' > tpl/tokenizer_config.json
"$ppa" logprobs --model tpl --data lists.jsonl > /dev/null 2> err; st=$?
expect "a template of 300,000 steps: refused (exit 2)" test $st -eq 2
expect "... naming the bound" has err "the template runs too long: more than"
expect "... and its terms" has err "the bound: 200000 + 20000 a message + 100 a byte)"

# -- responses a row: at most 1024
python3 -c 'import json
for n in (1024, 1025): print(json.dumps({"prompt": "p", "responses": ["r%d" % i for i in range(n)], "scores": [i % 7 for i in range(n)]}))' > many.jsonl
head -1 many.jsonl > k1024.jsonl
"$ppa" logprobs --model m --data k1024.jsonl --template none > out 2> err; st=$?
expect "a row of 1024 responses: scored (exit 0)" sh -c "test $st -eq 0 && test \$(grep -o 'logps' out | wc -l) -ge 1"
"$ppa" logprobs --model m --data many.jsonl --template none > /dev/null 2> err; st=$?
expect "a row of 1025: refused (exit 2)" test $st -eq 2
expect "... naming the line and the bound" has err "many.jsonl:2: 1025 responses: at most 1024 a row"

# -- objective options outside their domain: refused with the option, the value's range (train, loss, grad alike)
T=(--model m --data lists.jsonl --template none --list-size 4 --batch-size 4 --max-steps 1 --warmup-ratio 0)
for bad in "--label-smoothing 1:label_smoothing must be in [0, 0.5)" "--label-smoothing 0.5:label_smoothing must be in [0, 0.5)" \
           "--label-smoothing -0.1:label_smoothing must be in [0, 0.5)" "--tau 0:tau must be > 0 (and finite)" "--tau inf:cannot use value 'inf'" \
           "--sinkhorn-iters 0:sinkhorn_iters must be in 1..100000" "--sigma 0:sigma must be > 0" "--beta 0:--beta must be > 0, found 0" "--beta nan:expected a finite number"; do
  opt=${bad%%:*} want=${bad#*:}
  "$ppa" train "${T[@]}" --objective dpo $opt --out "o$RANDOM" > /dev/null 2> err; st=$?
  expect "train $opt: refused (exit 2)" test $st -eq 2
  expect "... saying the range" has err "$want"
done
echo '{"scores": [2, 1], "labels": [1, 0]}' | "$ppa" loss --objective dpo --label-smoothing 1 > /dev/null 2> err; st=$?
expect "loss --label-smoothing 1: refused (exit 2) with the range" sh -c "test $st -eq 2 && grep -qF 'label_smoothing must be in [0, 0.5)' err"
"$ppa" grad --model m --data lists.jsonl --template none --objective dpo --label-smoothing 0.7 --out g.st > /dev/null 2> err; st=$?
expect "grad --label-smoothing 0.7: refused (exit 2) with the range" sh -c "test $st -eq 2 && grep -qF 'label_smoothing must be in [0, 0.5)' err"
echo '{"scores": [2, 1], "labels": [1, 0]}' | "$ppa" loss --objective dpo --label-smoothing 0.49 > /dev/null 2> err; st=$?
expect "loss --label-smoothing 0.49: accepted" test $st -eq 0

# -- SOURCE_DATE_EPOCH: decimal seconds, or refused naming the variable (not the template)
printf '%s\n' '{"chat_template": "{{ strftime_now(\"%d %B %Y\") }}{% for m in messages %}{{ m[\"content\"] }}</s>{% endfor %}", "eos_token": "</s>"}' > tpl/tokenizer_config.json
for v in abc 1e9 -5 99999999999999999999 $'12\033[2J'; do
  SOURCE_DATE_EPOCH=$v "$ppa" logprobs --model tpl --data lists.jsonl > /dev/null 2> err; st=$?
  expect "SOURCE_DATE_EPOCH=$(printf %q "$v"): refused (exit 2)" test $st -eq 2
  expect "... naming the variable" has err "expected whole seconds since 1970-01-01 UTC, from 0 to 253402300799 (9999-12-31)"
done
expect "... its control bytes escaped" has err 'SOURCE_DATE_EPOCH=12\x1b[2J:'
SOURCE_DATE_EPOCH=86400 "$ppa" logprobs --model tpl --data lists.jsonl > /dev/null 2> err; st=$?
expect "SOURCE_DATE_EPOCH=86400: accepted" test $st -eq 0

# -- an adapter's task_type must match the model (CAUSAL_LM on a causal LM)
"$ppa" train "${T[@]}" --objective dpo --lora-r 2 --out ad > /dev/null 2> err; st=$?
expect "a LoRA run (exit 0)" test $st -eq 0
sed -i 's/"CAUSAL_LM"/"SEQ_CLS"/' ad/adapter_config.json
"$ppa" merge --model m --adapter ad --out merged > /dev/null 2> err; st=$?
expect "a SEQ_CLS adapter on a causal LM: refused (exit 2)" test $st -eq 2
expect "... naming both" has err "ad/adapter_config.json: task_type SEQ_CLS is an adapter of a sequence classifier (a reward model), but this model is a causal LM"

# -- test hooks are not in ./ppa: PPA_TEST_DIE_IN_SAVE means nothing to it
PPA_TEST_DIE_IN_SAVE=1 "$ppa" train "${T[@]}" --objective dpo --max-steps 2 --save-every 1 --out hk > /dev/null 2> err; st=$?
expect "PPA_TEST_DIE_IN_SAVE=1: ./ppa saves and finishes (exit 0)" sh -c "test $st -eq 0 && test -d hk/checkpoint-1"
report
