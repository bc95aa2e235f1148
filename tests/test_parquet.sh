#!/usr/bin/env bash
# Parquet data through the commands (docs/commands.md "Data files"): every command that reads rows reads a Parquet
# file written by an independent writer (cache/parquetref: parquet-wasm, by scripts/fetch-fixtures.sh) exactly as
# the JSON Lines file of the same rows: logprobs, train (on a folder of three shards), sft (message lists), judge and
# generate give the same bytes; errors name FILE:row N; a damaged file and a folder of two splits are refused.
# Usage: tests/test_parquet.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_parquet_cli
. "$(dirname "$0")/lib.sh"
ref=$(cd "$(dirname "$0")/.." && pwd)/cache/parquetref
[ -f "$ref/manifest.jsonl" ] || { echo "FAIL $NAME: $ref/manifest.jsonl missing (bash scripts/fetch-fixtures.sh)" >&2; exit 1; }
cd "$tmp" || exit 1
tiny_model_files "$tmp"
sed -i 's/"max_position_embeddings": 64/"max_position_embeddings": 2048/' config.json # the fixtures' rows are long
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
mkdir mt && cp m/* mt/
printf '%s\n' '{"chat_template": "{% for m in messages %}{{ m[\"role\"] }}: {{ m[\"content\"] }}</s>{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}", "eos_token": "</s>"}' > mt/tokenizer_config.json
has() { grep -qF -- "$2" "$1"; }
same() { # same DESCRIPTION A B
  expect "$1" cmp -s "$2" "$3"
}
# logprobs: ListUltraFeedback's columns and ultrafeedback_binarized's message lists, every codec of the latter
"$ppa" logprobs --model mt --data "$ref/lists.jsonl" > lists.j 2> err
expect "logprobs on lists.jsonl ($(tail -1 err))" test -s lists.j
"$ppa" logprobs --model mt --data "$(ls "$ref"/lists-*.parquet | tail -1)" > lists.p 2> err
same "logprobs: a Zstandard Parquet file reads as its JSON Lines twin ($(tail -1 err))" lists.j lists.p
"$ppa" logprobs --model mt --data "$ref/binarized.jsonl" > bin.j 2> err
expect "logprobs on binarized.jsonl ($(tail -1 err))" test -s bin.j
for f in "$ref"/binarized-*.parquet; do
  "$ppa" logprobs --model mt --data "$f" > bin.p 2> err
  same "logprobs: ${f##*/} reads as its twin ($(tail -1 err))" bin.j bin.p
done
# train on a folder of three shards, and on a quoted glob and a comma list of them: the JSON Lines file's weights
T=(--model mt --list-size 3 --batch-size 4 --max-steps 3 --lr 0.01 --seed 3)
"$ppa" train "${T[@]}" --data "$ref/shards.jsonl" --out tj > /dev/null 2> err; st=$?
expect "train on shards.jsonl (exit $st: $(tail -1 err))" test $st -eq 0
"$ppa" train "${T[@]}" --data "$ref/shards" --out tp > /dev/null 2> err; st=$?
expect "train on a folder of Parquet shards (exit $st: $(tail -1 err))" test $st -eq 0
same "... trains the JSON Lines file's weights, byte for byte" tj/model.safetensors tp/model.safetensors
"$ppa" train "${T[@]}" --data "$ref/shards/train-*-of-00003.parquet" --out tg > /dev/null 2> err
same "... and so does a quoted glob ($(tail -1 err))" tj/model.safetensors tg/model.safetensors
s="$ref/shards/train-00000-of-00003.parquet,$ref/shards/train-00001-of-00003.parquet,$ref/shards/train-00002-of-00003.parquet"
"$ppa" train "${T[@]}" --data "$s" --out tc > /dev/null 2> err
same "... and a comma list ($(tail -1 err))" tj/model.safetensors tc/model.safetensors
# sft on TRL message lists
"$ppa" sft --model mt --data "$ref/sft_messages.jsonl" --batch-size 5 --lr 0.01 --out sj > /dev/null 2> err
"$ppa" sft --model mt --data "$(ls "$ref"/sft_messages-*.parquet | head -1)" --batch-size 5 --lr 0.01 --out sp > /dev/null 2> err
same "sft: Parquet message lists train the JSON Lines file's weights ($(tail -1 err))" sj/model.safetensors sp/model.safetensors
# judge and generate pass every field through
"$ppa" judge --judge afinn --npm-cache "$ref/../npm" --data "$ref/native.jsonl" > jj 2> /dev/null
"$ppa" judge --judge afinn --npm-cache "$ref/../npm" --data "$(ls "$ref"/native-*.parquet | head -1)" > jp 2> err
expect "judge: Parquet rows come out as the JSON Lines rows ($(tail -1 err))" sh -c "test -s jj && cmp -s jj jp"
pf=$(ls "$ref"/prompts-*.parquet | head -1)
"$ppa" generate --model mt --prompts "$ref/prompts.jsonl" --max-new-tokens 3 --seed 1 > gj 2> /dev/null
"$ppa" generate --model mt --prompts "$pf" --max-new-tokens 3 --seed 1 > gp 2> err
expect "generate: Parquet prompts give the JSON Lines prompts' output ($(tail -1 err))" sh -c "test -s gj && cmp -s gj gp"
# errors name the file and the row
"$ppa" logprobs --model mt --data "$ref/types-snappy-v1-dict.parquet" > /dev/null 2> err; st=$?
expect "rows without a prompt: refused (exit $st)" test $st -eq 2
expect "... naming FILE:row 1" has err "types-snappy-v1-dict.parquet:row 1: "
"$ppa" logprobs --model mt --data "$ref/types-snappy-v1-dict.parquet" --skip-invalid > /dev/null 2> err; st=$?
expect "--skip-invalid reports each row (row 1000)" has err "types-snappy-v1-dict.parquet:row 1000: skipped"
head -c 2000 "$(ls "$ref"/lists-*.parquet | tail -1)" > cut.parquet
"$ppa" logprobs --model mt --data cut.parquet > /dev/null 2> err; st=$?
expect "a cut Parquet file: refused (exit $st)" test $st -eq 2
expect "... naming it ($(tail -1 err))" has err "cut.parquet: "
mkdir splits && cp "$ref/shards/train-00000-of-00003.parquet" splits/ && cp "$ref/shards/train-00001-of-00003.parquet" splits/test-00000-of-00001.parquet
"$ppa" logprobs --model mt --data splits > /dev/null 2> err; st=$?
expect "a folder of two splits: refused (exit $st)" test $st -eq 2
expect "... naming both ($(tail -1 err))" sh -c "grep -q \"several splits ('test' and 'train' files)\" err"
"$ppa" logprobs --model mt --data "$ref/refused-brotli.parquet" > /dev/null 2> err; st=$?
expect "Brotli pages: refused by name (exit $st: $(tail -1 err))" sh -c "test $st -eq 2 && grep -q 'Brotli compression is not read' err"
# an output is never one of the files of a several-file input
cp "$ref/prompts.jsonl" p1.jsonl && cp "$ref/prompts.jsonl" p2.jsonl
"$ppa" generate --model mt --prompts p1.jsonl,p2.jsonl --out p2.jsonl --max-new-tokens 2 > /dev/null 2> err; st=$?
expect "--out naming a file of a comma list: refused (exit $st: $(tail -1 err))" sh -c "test $st -eq 2 && grep -q 'is the same file as --prompts p2.jsonl' err"
"$ppa" generate --model mt --prompts 'p*.jsonl' --out p1.jsonl --max-new-tokens 2 > /dev/null 2> err; st=$?
expect "--out naming a file of a glob: refused (exit $st)" sh -c "test $st -eq 2 && grep -q 'is the same file as --prompts p1.jsonl' err"
expect "... and both inputs unchanged" sh -c "cmp -s p1.jsonl '$ref/prompts.jsonl' && cmp -s p2.jsonl '$ref/prompts.jsonl'"
report
