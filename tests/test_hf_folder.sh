#!/usr/bin/env bash
# Every folder ppa writes is a complete Hugging Face folder: from an input
# folder holding every tokenizer and template file (a chat_template.jinja
# that overrides tokenizer_config.json's template, special_tokens_map.json,
# added_tokens.json, tokenizer.model, vocab.json, merges.txt, ...) and a
# generation_config.json of its own (temperature 0.6, top_p 0.9, eos [1, 2]),
# `train` (and its checkpoint), `sft`, `reward`, a LoRA `train` (PEFT's
# folder: no generation_config.json), `merge` and `init` write folders that
# hold the same files byte for byte and render a prompt to the same ids.
# Refused: a carried name that is a FIFO, a directory or a dangling link,
# named; read through: a link to a regular file. An input without
# generation_config.json gets ppa's minimal one.
# Usage: tests/test_hf_folder.sh PPA_BINARY.
ppa=${1:-./ppa}
NAME=test_hf_folder
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; }
not() { ! "$@"; }
expect_status() { if [ "$3" -eq "$2" ]; then ok; else bad "$1 (exit $3, wanted $2)"; fi; } # DESCRIPTION WANT GOT

carried="tokenizer.json tokenizer_config.json chat_template.jinja chat_template.json special_tokens_map.json
         added_tokens.json tokenizer.model vocab.json merges.txt"

# -- the input folder: a tiny model with every file save_pretrained may write
tiny_model_files "$tmp"
in=$tmp/in
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$in" --seed 3 --init-std 0.3 > /dev/null
cat > "$in/tokenizer_config.json" <<'J'
{
  "add_bos_token": false,
  "bos_token": "<s>",
  "chat_template": "{% for m in messages %}{{ '<|config ' + m['role'] + '|>' + m['content'] + eos_token }}{% endfor %}{% if add_generation_prompt %}{{ '<|config assistant|>' }}{% endif %}",
  "eos_token": "</s>",
  "model_max_length": 64,
  "tokenizer_class": "PreTrainedTokenizerFast"
}
J
# the template transformers and ppa prefer to tokenizer_config.json's
printf '%s' "{%- for m in messages %}{{ '<|hf-folder ' + m['role'] + '|>' + m['content'] + eos_token }}{%- endfor %}" \
  "{%- if add_generation_prompt %}{{ '<|hf-folder assistant|>' }}{%- endif %}" > "$in/chat_template.jinja"
echo '{"chat_template": "{{ messages[0][\"content\"] }}"}' > "$in/chat_template.json"
echo '{"bos_token": "<s>", "eos_token": "</s>"}' > "$in/special_tokens_map.json"
echo '{}' > "$in/added_tokens.json"
printf 'spm\000\001\002\377 not read by ppa' > "$in/tokenizer.model"
echo '{"a": 97}' > "$in/vocab.json"
printf '#version: 0.2\n' > "$in/merges.txt"
cat > "$in/generation_config.json" <<'J'
{
  "bos_token_id": 256,
  "do_sample": true,
  "eos_token_id": [
    1,
    2
  ],
  "max_new_tokens": 12,
  "temperature": 0.6,
  "top_k": 20,
  "top_p": 0.9,
  "transformers_version": "4.51.0"
}
J

# the tokenizer, template and generation files of a folder (not its weights, config, or a run's files), one line
hf_set() {
  ls -A "$1" | grep -vxE 'config\.json|model\.safetensors|adapter_config\.json|adapter_model\.safetensors|train_log\.jsonl|train_options\.json|reference(\.eval)?\.cache|\.ppa\.lock|checkpoint-[0-9]+|optimizer\.safetensors|ppa_state\.json|README\.md|runs|summary\.json' |
    sort | tr '\n' ' '
}
want_model=$(hf_set "$in")
want_adapter=$(ls -A "$in" | grep -vxE 'config\.json|model\.safetensors|generation_config\.json' | sort | tr '\n' ' ')
msg='{"messages": [{"role": "user", "content": "abc"}]}'
echo "$msg" | "$ppa" tokenize --tokenizer "$in" > "$tmp/in.ids" 2> "$tmp/err"
expect "the input renders with its chat_template.jinja ($(cat "$tmp/in.ids" "$tmp/err"))" has "$tmp/in.ids" '<|hf-folder assistant|>'

# same_folder DESCRIPTION OUT [adapter]: OUT holds the input's files, byte for byte, and renders the same prompt
same_folder() {
  local d=$1 out=$2 want=$want_model f
  [ "${3:-}" = adapter ] && want=$want_adapter
  expect "$d: the input's files and no others (got: $(hf_set "$out"))" test "$(hf_set "$out")" = "$want"
  for f in $want; do expect "$d: $f byte for byte" cmp -s "$in/$f" "$out/$f"; done
  echo "$msg" | "$ppa" tokenize --tokenizer "$out" > "$tmp/out.ids" 2> "$tmp/err"
  expect "$d: the prompt renders to the input's ids ($(cat "$tmp/out.ids" "$tmp/err"))" cmp -s "$tmp/in.ids" "$tmp/out.ids"
}

letter_lists | head -8 > "$tmp/lists.jsonl"
small=(--data "$tmp/lists.jsonl" --list-size 4 --batch-size 4 --micro-batch 4 --lr 0.01 --warmup-ratio 0 --threads 1)

# -- train (and its checkpoint), reward, a LoRA train and its merge, sft, init
"$ppa" train --model "$in" "${small[@]}" --max-steps 2 --save-every 1 --out "$tmp/t" > /dev/null 2> "$tmp/err"
st=$?; expect "train exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder train "$tmp/t"
same_folder "train's checkpoint" "$tmp/t/checkpoint-1"
"$ppa" reward --model "$in" "${small[@]}" --max-steps 1 --out "$tmp/r" > /dev/null 2> "$tmp/err"
st=$?; expect "reward exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder reward "$tmp/r"
"$ppa" train --model "$in" "${small[@]}" --max-steps 1 --lora-r 2 --out "$tmp/a" > /dev/null 2> "$tmp/err"
st=$?; expect "a LoRA train exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder "the LoRA adapter (PEFT's: no generation_config.json)" "$tmp/a" adapter
"$ppa" merge --model "$in" --adapter "$tmp/a" --out "$tmp/mg" > /dev/null 2> "$tmp/err"
st=$?; expect "merge exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder merge "$tmp/mg"
echo '{"prompt": "abc", "responses": ["abd"]}' > "$tmp/sft.jsonl"
"$ppa" sft --model "$in" --data "$tmp/sft.jsonl" --max-steps 1 --batch-size 1 --micro-batch 1 --lr 0.01 --out "$tmp/s" \
  > /dev/null 2> "$tmp/err"
st=$?; expect "sft exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder sft "$tmp/s"
"$ppa" init --config "$in/config.json" --tokenizer "$in" --out "$tmp/i" > /dev/null 2> "$tmp/err"
st=$?; expect "init from the folder exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder "init --tokenizer FOLDER" "$tmp/i"
"$ppa" init --config "$in/config.json" --tokenizer "$in/tokenizer.json" --out "$tmp/i2" > /dev/null 2> "$tmp/err"
st=$?; expect "init from the folder's tokenizer.json exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
same_folder "init --tokenizer FOLDER/tokenizer.json (the files beside it, where ppa reads them)" "$tmp/i2"

# -- no generation_config.json in the input: ppa's minimal one, of config.json's ids
cp -r "$in" "$tmp/nogen"
rm "$tmp/nogen/generation_config.json"
"$ppa" init --config "$tmp/nogen/config.json" --tokenizer "$tmp/nogen" --out "$tmp/ng" > /dev/null 2> "$tmp/err"
expect "init without a generation_config.json exits 0" test $? -eq 0
"$ppa" sft --model "$tmp/nogen" --data "$tmp/sft.jsonl" --max-steps 1 --batch-size 1 --micro-batch 1 --out "$tmp/ngs" \
  > /dev/null 2> "$tmp/err"
expect "sft without a generation_config.json exits 0" test $? -eq 0
for o in ng ngs; do
  expect "$o: ppa's minimal generation_config.json" \
    test "$(tr -d ' \n' < "$tmp/$o/generation_config.json")" = '{"bos_token_id":256,"eos_token_id":257,"pad_token_id":null,"transformers_version":"4.51.0"}'
done

# -- a link to a regular file is read through (as ppa's readers do); the copy is a regular file
cp -r "$in" "$tmp/linked"
ln -sf "$in/chat_template.jinja" "$tmp/linked/chat_template.jinja"
"$ppa" init --config "$in/config.json" --tokenizer "$tmp/linked" --out "$tmp/l" > /dev/null 2> "$tmp/err"
st=$?; expect "a linked chat_template.jinja: init exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
expect "the copy is a regular file, not a link" test -f "$tmp/l/chat_template.jinja" -a ! -L "$tmp/l/chat_template.jinja"
expect "with the link's bytes" cmp -s "$in/chat_template.jinja" "$tmp/l/chat_template.jinja"

# -- refused, naming the file: a FIFO, a directory, a dangling link; nothing is written
refused() { # DESCRIPTION NAME KIND: the copy of the input with NAME made KIND is refused by init and train
  local d=$1 name=$2 kind=$3 bad=$tmp/bad_$2
  cp -r "$in" "$bad"
  rm "$bad/$name"
  case $kind in
    FIFO) mkfifo "$bad/$name" ;;
    directory) mkdir "$bad/$name" ;;
    link) ln -s "$tmp/nowhere" "$bad/$name" ;;
  esac
  timeout 60 "$ppa" init --config "$bad/config.json" --tokenizer "$bad" --out "$tmp/x_$name" > /dev/null 2> "$tmp/err"
  expect_status "$d: init refuses it" 2 "$?"
  expect "$d: naming it ($(cat "$tmp/err"))" has "$tmp/err" "$bad/$name"
  expect "$d: no folder is left" test -z "$(ls -d "$tmp/x_$name"* 2> /dev/null)"
  timeout 60 "$ppa" train --model "$bad" "${small[@]}" --max-steps 1 --out "$tmp/y_$name" > /dev/null 2> "$tmp/err"
  expect_status "$d: train refuses it before it trains" 2 "$?"
  expect "$d: naming it ($(cat "$tmp/err"))" has "$tmp/err" "$bad/$name"
  expect "$d: no log was written" test ! -e "$tmp/y_$name/train_log.jsonl"
}
refused "special_tokens_map.json as a FIFO" special_tokens_map.json FIFO
expect "saying what it is" has "$tmp/err" "is a FIFO, not a regular file"
refused "vocab.json as a directory" vocab.json directory
expect "saying what it is" has "$tmp/err" "is a directory, not a regular file"
refused "generation_config.json as a dangling link" generation_config.json link
"$ppa" sft --model "$tmp/bad_special_tokens_map.json" --data "$tmp/sft.jsonl" --max-steps 1 --batch-size 1 \
  --micro-batch 1 --out "$tmp/z" > /dev/null 2> "$tmp/err"
expect_status "sft refuses a FIFO special_tokens_map.json before it trains" 2 "$?"
expect "naming it" has "$tmp/err" "bad_special_tokens_map.json/special_tokens_map.json"
timeout 60 "$ppa" merge --model "$tmp/bad_vocab.json" --adapter "$tmp/a" --out "$tmp/zm" > /dev/null 2> "$tmp/err"
expect_status "merge refuses a directory vocab.json" 2 "$?"
expect "naming it" has "$tmp/err" "bad_vocab.json/vocab.json"
expect "no merged folder is left" test -z "$(ls -d "$tmp/zm"* 2> /dev/null)"

report
