#!/usr/bin/env bash
# CLI behaviour of `ppa loss`, `ppa bench loss`, help and errors.
# Usage: tests/test_cli.sh PPA_BINARY. Prints "test_cli: N passed, N failed".
ppa=${1:-./ppa}
NAME=test_cli
. "$(dirname "$0")/lib.sh"

# -- a good run: one output line per list, full precision, the paper's numbers
cat > "$tmp/good.jsonl" <<'J'
{"scores": [9, 1, 5, 2], "labels": [5, 4, 3, 2]}

{"scores": [0.7, 0.5, 0.6], "labels": [3, 2, 1]}
{"scores": [0.1, 123, -0.4], "labels": [0.5, null, 0.25]}
J
"$ppa" loss --objective ppa < "$tmp/good.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "loss exits 0" test $? -eq 0
expect "one line per list (blank lines skipped)" test "$(wc -l < "$tmp/out")" -eq 3
expect "NeuralNDCG of the appendix example" grep -q '^{"loss": -0.959187074' "$tmp/out"
expect "true NDCG of the appendix example" grep -q '"ndcg": 0.958473565289738' "$tmp/out"
expect "sinkhorn iterations reported" grep -q '"sinkhorn_iters": 50' "$tmp/out"
expect "masked item gets gradient 0" grep -q '"grad": \[[^,]*, 0, ' "$tmp/out"
"$ppa" loss --objective dpo_all_pairs --input "$tmp/good.jsonl" > "$tmp/out2"
expect "DPO example 0.6623107298429112" grep -q '"loss": 0.66231072984291' "$tmp/out2"
expect "--input reads a file" test "$(wc -l < "$tmp/out2")" -eq 3

# -- malformed lines: message names the line, exit status 2
check_error() { # check_error DESCRIPTION LINE3 EXPECTED_MESSAGE [objective]
  printf '%s\n%s\n%s\n' '{"scores": [1, 2], "labels": [1, 0]}' '{"scores": [1, 2], "labels": [0, 1]}' "$2" > "$tmp/bad.jsonl"
  "$ppa" loss --objective "${4:-ppa}" < "$tmp/bad.jsonl" > "$tmp/out" 2> "$tmp/err"
  local st=$?
  if [ $st -eq 2 ] && grep -q "stdin:3: .*$3" "$tmp/err"; then ok; else bad "$1 (status $st: $(cat "$tmp/err"))"; fi
}
check_error "bad JSON" '{"scores": [1, 2], "labels": [1, 0' "invalid JSON"
check_error "not an object" '[1, 2]' "JSON object"
check_error "lengths differ" '{"scores": [1, 2, 3], "labels": [1, 0]}' "has 3 entries"
check_error "fewer than 2 valid" '{"scores": [1, 2], "labels": [1, null]}' "at least 2"
check_error "non-finite number" '{"scores": [1e999, 2], "labels": [1, 0]}' "not a finite number"
check_error "missing field" '{"labels": [1, 0]}' 'missing field "scores"'
check_error "string score" '{"scores": ["a", 2], "labels": [1, 0]}' 'is not a number'
check_error "negative label for a gain objective" '{"scores": [1, 2], "labels": [1, -1]}' "item 1: a label is negative"
printf '%s\n' '{"scores": [1, 2], "labels": [1, -1]}' | "$ppa" loss --objective dpo > "$tmp/out" 2>&1
expect "negative labels are fine for dpo" grep -q '"ndcg": null' "$tmp/out"

# -- --skip-invalid: reported, counted, the rest computed
printf '%s\n' '{"scores": [1, 2], "labels": [1, 0]}' 'oops' '{"scores": [1], "labels": [1]}' '{"scores": [3, 2], "labels": [1, 0]}' > "$tmp/mixed.jsonl"
"$ppa" loss --objective lambda --skip-invalid < "$tmp/mixed.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "--skip-invalid exits 0" test $? -eq 0
expect "--skip-invalid keeps the valid lines" test "$(wc -l < "$tmp/out")" -eq 2
expect "--skip-invalid names each skipped line" grep -q "stdin:2: skipped: invalid JSON" "$tmp/err"
expect "--skip-invalid counts" grep -q "skipped 2 of 4 lines" "$tmp/err"

# -- options and commands
"$ppa" loss < "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "--objective is required" test $? -eq 2
"$ppa" loss --objective nope < "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "unknown objective exits 2" test $? -eq 2
expect "unknown objective is named" grep -q "unknown objective 'nope'" "$tmp/err"
"$ppa" loss --objective ppa --tau -1 < "$tmp/good.jsonl" > /dev/null 2> "$tmp/err"
expect "bad option value exits 2" test $? -eq 2
expect "bad option value is explained" grep -q "tau must be > 0" "$tmp/err"
"$ppa" loss --objective ppa --tau 0.1 --k 2 --gain linear --discount inv --sinkhorn-iters 5 --sinkhorn-tol 0 < "$tmp/good.jsonl" > "$tmp/out"
expect "objective options accepted" grep -q '"sinkhorn_iters": 5' "$tmp/out"
expect "ppa help" "$ppa" help > /dev/null
expect "ppa loss --help" "$ppa" loss --help > /dev/null
expect "ppa bench loss --help" "$ppa" bench loss --help > /dev/null
"$ppa" frobnicate > /dev/null 2>&1
expect "unknown command exits 2" test $? -eq 2
expect "--list-objectives" test "$("$ppa" loss --list-objectives | wc -l)" -eq 13
"$ppa" bench loss --lists 50 --size 6 --repeat 1 --json > "$tmp/bench"
expect "bench --json prints every objective" test "$(grep -c '"objective"' "$tmp/bench")" -eq 13
expect "ppa demo" "$ppa" demo > /dev/null

# -- ppa init / ppa inspect on a tiny Llama and a small byte-level tokenizer.json
tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" --seed 3 > "$tmp/out" 2> "$tmp/err"
expect "ppa init exits 0" test $? -eq 0
expect "ppa init writes the folder" test -s "$tmp/m/model.safetensors" -a -s "$tmp/m/config.json" -a -s "$tmp/m/tokenizer.json" -a -s "$tmp/m/generation_config.json" -a -s "$tmp/m/tokenizer_config.json"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m2" --seed 3 > /dev/null
expect "ppa init is deterministic" cmp -s "$tmp/m/model.safetensors" "$tmp/m2/model.safetensors"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" > /dev/null 2> "$tmp/err"
expect "ppa init refuses an existing folder" test $? -eq 2
expect "and says so" grep -q "already exists" "$tmp/err"
"$ppa" inspect "$tmp/m" > "$tmp/out" 2> "$tmp/err"
expect "ppa inspect exits 0" test $? -eq 0
expect "ppa inspect lists the tensors" grep -q "model.layers.1.mlp.down_proj.weight *F32 *\[32, 64\]" "$tmp/out"
expect "ppa inspect checks the tensors" grep -q "the tensors match config.json" "$tmp/out"
expect "ppa inspect names the tokenizer" grep -q "tokenizer: byte-level BPE, 258 tokens" "$tmp/out"
sed 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$tmp/m/config.json" > "$tmp/c3" && cp "$tmp/c3" "$tmp/m/config.json"
"$ppa" inspect "$tmp/m" > /dev/null 2> "$tmp/err"
expect "ppa inspect fails on missing tensors" test $? -eq 2
expect "and names them" grep -q "missing tensor model.layers.2.input_layernorm.weight" "$tmp/err"
head -c 1000 "$tmp/m2/model.safetensors" > "$tmp/trunc" && cp "$tmp/trunc" "$tmp/m2/model.safetensors"
"$ppa" inspect "$tmp/m2" > /dev/null 2> "$tmp/err"
expect "ppa inspect refuses a truncated checkpoint" test $? -eq 2
expect "and names the file" grep -q "model.safetensors" "$tmp/err"
echo '{"text": "hi <s>"}' | "$ppa" tokenize --tokenizer "$tmp/m" > "$tmp/out"
expect "ppa tokenize reads the model folder" grep -q '"ids": \[104, 105, 32, 256\]' "$tmp/out"

# -- ppa logprobs / ppa grad / ppa sft on the tiny model (pre-tokenized and text rows)
cat > "$tmp/rows.jsonl" <<'J'
{"prompt_ids": [256, 104, 105], "response_ids": [[97, 257], [98, 99, 257], [100, 257]], "scores": [0.9, 0.5, 0.1]}
{"prompt": "hi", "responses": ["yes", "no"], "scores": [1, 0]}
J
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/e" --seed 5 --init-std 0.3 > /dev/null
"$ppa" logprobs --model "$tmp/e" --data "$tmp/rows.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "ppa logprobs exits 0" test $? -eq 0
expect "ppa logprobs: one line per row" test "$(wc -l < "$tmp/out")" -eq 2
expect "ppa logprobs counts scored tokens" grep -q '"n_tokens": \[2, 3, 2\]' "$tmp/out"
expect "ppa logprobs: text rows get the EOS once" grep -q '"n_tokens": \[4, 3\]' "$tmp/out"
"$ppa" grad --model "$tmp/e" --data "$tmp/rows.jsonl" --objective dpo_all_pairs --beta 0.1 --out "$tmp/g.safetensors" > "$tmp/out" 2> "$tmp/err"
expect "ppa grad exits 0" test $? -eq 0
expect "ppa grad without --ref: s = 0, so DPO gives ln 2" grep -q '"loss": 0.69314718055994' "$tmp/out"
expect "ppa grad writes the gradients" test -s "$tmp/g.safetensors"
echo '{"prompt_ids": [256], "response_ids": [[300]]}' > "$tmp/badrows.jsonl"
"$ppa" logprobs --model "$tmp/e" --data "$tmp/badrows.jsonl" > /dev/null 2> "$tmp/err"
expect "ppa logprobs refuses ids outside the vocabulary" test $? -eq 2
expect "and names the line" grep -q "badrows.jsonl:1:" "$tmp/err"
for i in $(seq 1 16); do echo '{"text": "the cat sat on the mat and the dog sat on the log"}'; done > "$tmp/sft.jsonl"
"$ppa" sft --model "$tmp/e" --data "$tmp/sft.jsonl" --out "$tmp/sft_out" --max-steps 12 --batch-size 4 --micro-batch 2 --lr 0.01 > "$tmp/log" 2> "$tmp/err"
expect "ppa sft exits 0" test $? -eq 0
first=$(head -1 "$tmp/log" | sed -E 's/.*"loss": ([0-9.]+).*/\1/')
last=$(grep "^{\"step\"" "$tmp/log" | tail -1 | sed -E 's/.*"loss": ([0-9.]+).*/\1/')
expect "ppa sft: the loss falls ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.7 * a) }'
"$ppa" inspect "$tmp/sft_out" > /dev/null 2>&1
expect "ppa sft writes a model folder" test $? -eq 0

# -- chat templates and special-token strings in the data (issue 29)
"$ppa" logprobs --model "$tmp/e" --data "$tmp/rows.jsonl" --template llama3 > /dev/null 2> "$tmp/err"
expect "--template llama3 on a tokenizer without its special tokens exits 2" test $? -eq 2
expect "and names them at once" grep -q "template llama3: the tokenizer .* has no special token <|begin_of_text|>, <|start_header_id|>, <|end_header_id|>, <|eot_id|>" "$tmp/err"
printf '%s\n' '{"prompt": "hi", "responses": ["yes", "no</s> more"]}' '{"prompt": "hi", "responses": ["yes", "no"]}' > "$tmp/eot.jsonl"
"$ppa" logprobs --model "$tmp/e" --data "$tmp/eot.jsonl" > /dev/null 2> "$tmp/err"
expect "a response holding the end-of-turn text exits 2" test $? -eq 2
expect "naming FILE:LINE and the response" grep -q 'eot.jsonl:1: response 2 contains the end-of-turn text "</s>"' "$tmp/err"
"$ppa" logprobs --model "$tmp/e" --data "$tmp/eot.jsonl" --special-tokens-in-text > /dev/null 2> "$tmp/err"
expect "refused with --special-tokens-in-text too" grep -q 'eot.jsonl:1: response 2 contains the end-of-turn text' "$tmp/err"
"$ppa" logprobs --model "$tmp/e" --data "$tmp/eot.jsonl" --skip-invalid > "$tmp/out" 2> "$tmp/err"
expect "--skip-invalid skips it and goes on" test $? -eq 0 -a "$(wc -l < "$tmp/out")" -eq 1
expect "and reports the line" grep -q "eot.jsonl:1: skipped: response 2 contains" "$tmp/err"
echo '{"messages": [{"role": "user", "content": "a<s>"}]}' | "$ppa" tokenize --tokenizer "$tmp/e" > "$tmp/out"
expect "ppa tokenize: a message's <s> stays text" grep -q '"ids": \[97, 60, 115, 62\]' "$tmp/out"
echo '{"messages": [{"role": "user", "content": "a<s>"}]}' | "$ppa" tokenize --tokenizer "$tmp/e" --special-tokens-in-text > "$tmp/out"
expect "ppa tokenize --special-tokens-in-text: it is the control token" grep -q '"ids": \[97, 256\]' "$tmp/out"
for cmd in train sft reward score eval logprobs grad generate judge; do
  if "$ppa" "$cmd" --help 2>&1 | grep -q -- "--special-tokens-in-text"; then ok; else bad "ppa $cmd takes --special-tokens-in-text"; fi
done
cp -r "$tmp/e" "$tmp/j"
printf '%s\n' '{"eos_token": "</s>", "chat_template": "{% for m in messages %}<s>{{ m.content }}</s>{% endfor %}{% if add_generation_prompt %}<s>{% endif %}"}' > "$tmp/j/tokenizer_config.json"
echo '{"messages": [{"role": "user", "content": "hi"}]}' | "$ppa" tokenize --tokenizer "$tmp/j" > "$tmp/out" 2> "$tmp/err"
expect "the folder's Jinja template renders the messages" grep -q '"text": "<s>hi</s><s>", "ids": \[256, 104, 105, 257, 256\]' "$tmp/out"
"$ppa" logprobs --model "$tmp/j" --data "$tmp/rows.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "ppa logprobs with it: the answer and one </s> scored" grep -q '"n_tokens": \[4, 3\]' "$tmp/out"
"$ppa" inspect "$tmp/j" > "$tmp/out" 2>&1
expect "ppa inspect names the Jinja template" grep -Eq "chat template jinja-[0-9a-f]{16}" "$tmp/out"
printf '%s\n' '{"chat_template": "{% for m in messages %}\n{% macro f() %}{% endmacro %}{% endfor %}"}' > "$tmp/j/tokenizer_config.json"
"$ppa" logprobs --model "$tmp/j" --data "$tmp/rows.jsonl" > /dev/null 2> "$tmp/err"
expect "a template ppa cannot render exactly exits 2" test $? -eq 2
expect "naming the file, line and construct" grep -q 'tokenizer_config.json: chat_template line 2: {% macro %} is not supported' "$tmp/err"
printf '%s\n' '{"chat_template": [{"name": "a", "template": "x"}, {"name": "b", "template": "y"}]}' > "$tmp/j/tokenizer_config.json"
"$ppa" logprobs --model "$tmp/j" --data "$tmp/rows.jsonl" > /dev/null 2> "$tmp/err"
expect "named templates without a default are refused" grep -q 'chat_template lists 2 templates ("a", "b") and none is named "default"' "$tmp/err"
"$ppa" logprobs --model "$tmp/j" --data "$tmp/rows.jsonl" --template none > "$tmp/out" 2> "$tmp/err"
expect "--template NAME still uses ppa's own template" test $? -eq 0 -a "$(wc -l < "$tmp/out")" -eq 2

# -- one grammar for every command (options/argv.h) and the exit statuses (docs/cli.md)
"$ppa" trian > /dev/null 2> "$tmp/err"
expect "ppa trian exits 2" test $? -eq 2
expect "... with did you mean 'train'" grep -q "unknown command 'trian' (did you mean 'train'?" "$tmp/err"
expect "ppa help documents the exit statuses" sh -c "'$ppa' help | grep -q '^exit status: 0 done; 2 a usage or input error'"
hint() { # hint DESCRIPTION EXPECTED ARGS...: exit 2 and the message
  local d=$1 want=$2; shift 2
  "$ppa" "$@" < /dev/null > /dev/null 2> "$tmp/err"
  local st=$?
  if [ $st -eq 2 ] && grep -qF -- "$want" "$tmp/err"; then ok; else bad "$d (status $st: $(cat "$tmp/err"))"; fi
}
hint "--loss_type sigmoid names ppa's objective" "unknown option '--loss_type' (did you mean '--objective dpo_all_pairs'? loss_type sigmoid is ppa's dpo_all_pairs)" train --loss_type sigmoid
hint "--loss-type=ipo too" "(did you mean '--objective ipo'?" train --model m --loss-type=ipo
hint "--loss_type of TRL's that ppa lacks: the list" "ppa has no objective for loss_type robust; \`ppa train --list-objectives\` lists ppa's" train --loss_type robust
hint "--loss_type without a value: the mapping" "TRL's loss types in ppa: sigmoid -> dpo_all_pairs, hinge -> hinge, ipo -> ipo" train --loss_type
hint "--bf16" "unknown option '--bf16' (did you mean '--precision bf16'?" train --bf16
hint "--report_to: the flag" "unknown option '--report_to' (did you mean '--report-to'?" train --report_to wandb
hint "--report-to of a service ppa does not know" "--report-to 'wandx' is not a service ppa knows: none, tensorboard, wandb or all" reward --model m --data d --out o --report-to wandx
hint "--lora_target_modules" "unknown option '--lora_target_modules' (did you mean '--lora-targets'?" train --lora_target_modules q_proj
hint "--lora-target-modules" "(did you mean '--lora-targets'?" sft --lora-target-modules q_proj
hint "ppa merge --dtype bf16: --save-dtype" "merge: unknown option '--dtype' (did you mean '--save-dtype'? --dtype is its former name)" merge --dtype bf16
hint "ppa init --dtype too" "init: unknown option '--dtype' (did you mean '--save-dtype'?" init --dtype bf16
same_message() { # same_message DESCRIPTION "CMD..." ARGS...: each command says what train says, but for its name
  local d=$1 cmds=$2 cmd want got st; shift 2
  "$ppa" train "$@" < /dev/null > /dev/null 2> "$tmp/err"
  want=$(sed 's/train/CMD/g' "$tmp/err")
  for cmd in $cmds; do
    "$ppa" ${cmd/_/ } "$@" < /dev/null > /dev/null 2> "$tmp/err"
    st=$?
    got=$(sed "s/${cmd/_/ }/CMD/g" "$tmp/err")
    if [ $st -eq 2 ] && [ "$got" = "$want" ] && [ -n "$want" ]; then ok; else bad "$d: ppa $cmd $*: '$got' (status $st), train: '$want'"; fi
  done
}
same_message "an unknown option" "merge loss tokenize init inspect demo bench_loss" --bogus
same_message "a value given to --help" "merge loss tokenize init demo bench_loss" --help=1
same_message "a stray argument" "merge loss tokenize init demo bench_loss" stray
same_message "a misspelt option" "merge init" --outt x
same_message "a value missing" "merge init" --out
for cmd in loss tokenize; do
  "$ppa" $cmd --inptu x > /dev/null 2> "$tmp/err"
  expect "$cmd: a misspelt option" grep -qxF "ppa: $cmd: unknown option '--inptu' (did you mean '--input'?)" "$tmp/err"
  "$ppa" $cmd --input > /dev/null 2> "$tmp/err"
  expect "$cmd: a value missing" grep -qxF "ppa: $cmd: --input needs a value" "$tmp/err"
done
"$ppa" tokenize --sk > /dev/null 2> "$tmp/err"
expect "tokenize: an ambiguous prefix names the candidates" grep -qF "ppa: tokenize: ambiguous option '--sk': --skip-special-tokens, --skip-invalid" "$tmp/err"
echo '{"text": "hi"}' | "$ppa" tokenize --tokenize "$tmp/m" > "$tmp/out"
expect "tokenize: a unique prefix is the option" grep -q '"ids": \[104, 105\]' "$tmp/out"
"$ppa" init --config "$tmp/config.json" --out "$tmp/notok" --seed 1 > /dev/null
"$ppa" logprobs --model "$tmp/notok" --data "$tmp/rows.jsonl" > /dev/null 2> "$tmp/err"
expect "no tokenizer.json: exit 2" test $? -eq 2
expect "... naming the model folder and the missing file" grep -qF "the model folder $tmp/notok has no tokenizer.json (rows of token ids" "$tmp/err"
abs_ppa=$(cd "$(dirname "$ppa")" && pwd)/$(basename "$ppa")
(cd "$tmp" && "$abs_ppa" logprobs --model Qwen/Qwen2-0.5B --data rows.jsonl > /dev/null 2> err)
expect "a Hub id for --model: exit 2" test $? -eq 2
expect "... saying ppa reads local folders and how to get one" grep -qF "Qwen/Qwen2-0.5B: no such folder. ppa reads local Hugging Face folders, and Qwen/Qwen2-0.5B looks like a Hub id: download it first, e.g. \`huggingface-cli download Qwen/Qwen2-0.5B --local-dir Qwen2-0.5B\`" "$tmp/err"
"$ppa" logprobs --model "$tmp/no-such/m" --data "$tmp/rows.jsonl" > /dev/null 2> "$tmp/err"
expect "a missing folder that is no Hub id keeps its message" sh -c "grep -q 'no-such/m: cannot open: No such file or directory' '$tmp/err' && ! grep -q huggingface '$tmp/err'"
# a runtime failure exits 1: the output cannot be written (/dev/full: every write fails with ENOSPC, a full disk)
if [ -w /dev/full ]; then
  "$ppa" loss --objective ppa --input "$tmp/good.jsonl" > /dev/full 2> "$tmp/err"
  expect "loss: a full output exits 1" sh -c "test $? -eq 1 && grep -q 'error writing the output' '$tmp/err'"
  echo '{"text": "hi"}' | "$ppa" tokenize --tokenizer "$tmp/m" > /dev/full 2> "$tmp/err"
  expect "tokenize: a full output exits 1" sh -c "test $? -eq 1 && grep -q 'error writing the output' '$tmp/err'"
  "$ppa" logprobs --model "$tmp/e" --data "$tmp/rows.jsonl" > /dev/full 2> "$tmp/err"
  expect "logprobs: a full output exits 1" sh -c "test $? -eq 1 && grep -q 'error writing the output' '$tmp/err'"
else
  echo "SKIP $NAME: no writable /dev/full: the exit status 1 of a failed write is not checked"
fi
for cmd in loss tokenize logprobs; do
  "$ppa" $cmd --frobnicate > /dev/null 2>&1
  expect "$cmd: a usage error exits 2" test $? -eq 2
done

report
