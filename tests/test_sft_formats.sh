#!/usr/bin/env bash
# TRL's SFT data formats (docs/commands.md): a conversation under "messages" whose last message is the assistant's
# (the answer; the turns before it are the prompt) and "prompt"/"completion" (strings, or message lists) read as the
# same row as {"prompt", "responses": [answer]}: the same log-probs, and ppa sft on either file writes the same bytes.
# Usage: tests/test_sft_formats.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_sft_formats
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
has() { grep -qF -- "$2" "$1"; }
# the same model with a chat template of its own (roles, an end-of-turn token after each message)
mkdir mt && cp m/* mt/
printf '%s\n' '{"chat_template": "{% for m in messages %}{{ m[\"role\"] }}: {{ m[\"content\"] }}</s>{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}", "eos_token": "</s>"}' > mt/tokenizer_config.json
Q='Name a fruit.' A='A pear.' S='Answer briefly.'
cat > native.jsonl <<J
{"prompt": "$Q", "responses": ["$A"]}
{"system": "$S", "prompt": "$Q", "responses": ["$A"]}
J
cat > messages.jsonl <<J
{"messages": [{"role": "user", "content": "$Q"}, {"role": "assistant", "content": "$A"}]}
{"messages": [{"role": "system", "content": "$S"}, {"role": "user", "content": "$Q"}, {"role": "assistant", "content": "$A"}]}
J
cat > completion.jsonl <<J
{"prompt": "$Q", "completion": "$A"}
{"prompt": [{"role": "system", "content": "$S"}, {"role": "user", "content": "$Q"}], "completion": [{"role": "assistant", "content": "$A"}]}
J
for tpl in none own; do
  T=(--model m --template none); [ $tpl = own ] && T=(--model mt)
  "$ppa" logprobs "${T[@]}" --data native.jsonl > native.$tpl 2> err; st=$?
  expect "the native rows score (template $tpl; exit $st)" test $st -eq 0 -a -s native.$tpl
  for f in messages completion; do
    "$ppa" logprobs "${T[@]}" --data $f.jsonl > $f.$tpl 2> err; st=$?
    expect "$f rows: the native rows' log-probs (template $tpl; exit $st: $(tail -1 err))" sh -c "test $st -eq 0 && cmp -s native.$tpl $f.$tpl"
  done
done
expect "the system turn changes the prompt (the two rows differ)" test "$(sed -n 1p native.own)" != "$(sed -n 2p native.own)"
# ppa sft on each file: the same weights, byte for byte
for f in native messages completion; do
  for i in 1 2 3 4; do cat $f.jsonl; done > $f.x4.jsonl
  "$ppa" sft --model mt --data $f.x4.jsonl --batch-size 4 --lr 0.01 --out sft_$f > /dev/null 2> err; st=$?
  expect "sft on $f rows (exit $st: $(tail -1 err))" test $st -eq 0
done
expect "sft: messages rows train the native rows' weights" cmp -s sft_native/model.safetensors sft_messages/model.safetensors
expect "sft: prompt/completion rows train the native rows' weights" cmp -s sft_native/model.safetensors sft_completion/model.safetensors
# refusals with the file and line
printf '%s\n' '{"prompt": "q", "completion": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]}' > bad.jsonl
"$ppa" logprobs --model m --template none --data bad.jsonl > /dev/null 2> err; st=$?
expect "a completion of two messages: refused (exit 2)" test $st -eq 2
expect "... naming the line and the format" has err 'bad.jsonl:1: "completion" must be a string or a list of one assistant message'
printf '%s\n' '{"messages": [{"role": "user", "content": "q"}]}' > noanswer.jsonl
"$ppa" logprobs --model m --template none --data noanswer.jsonl > /dev/null 2> err; st=$?
expect "messages without an assistant answer: refused (exit 2)" sh -c "test $st -eq 2 && grep -q 'noanswer.jsonl:1: expected \"responses\"' err"
report
