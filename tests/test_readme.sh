#!/usr/bin/env bash
# test_readme.sh: the README's commands run as the README writes them, so a README that shows a broken command
# fails the suite. The quickstart block (between its <!-- quickstart --> markers) and the example of every row of
# the Commands table run word for word in a folder where the names they use exist: M and Qwen2-0.5B-Instruct are a
# tiny random Llama with a chat template, lists.jsonl holds 256 scored lists (two optimizer steps at the paper's 128
# lists a step, so warm-up leaves the second a learning rate), heldout.jsonl 24, and the files an example reads that
# no earlier example writes are made first (text.jsonl, prompts.jsonl, config.json, the LoRA run `run`, the two
# generations winrate compares). Lines that download or install (huggingface-cli, git clone, install-deps) are not
# run: the test says which. Every `make TARGET` the README names is checked with `make -n` (the demo targets
# themselves run through the Makefile at the smallest size in tests/test_demo.sh).
# Usage: tests/test_readme.sh ./ppa
NAME=test_readme
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
ppa=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
readme="$root/README.md"
work="$tmp/w"
mkdir -p "$work/src"
ln -s "$ppa" "$work/ppa"                      # the README runs ./ppa from the repository's root
[ -d "$root/cache" ] && ln -s "$root/cache" "$work/cache" # the lexicon judges' word lists (make fixtures)
mkdir -p "$work/bench/configs" && cp "$root/bench/configs/llama_50m.json" "$work/bench/configs/"
cd "$work" || exit 1

# the model: a 2-layer Llama over bytes with a chat template of its own (what an instruct model's folder has)
tiny_model_files src
printf '%s' '{% for m in messages %}<s>{{ m.role }}: {{ m.content }}</s>{% endfor %}{% if add_generation_prompt %}<s>assistant: {% endif %}' \
  > src/chat_template.jinja
"$ppa" init --config src/config.json --tokenizer src/tokenizer.json --out M --seed 3 > /dev/null 2>&1 ||
  bad "ppa init of the test's model"
cp src/chat_template.jinja M/
cp -r M Qwen2-0.5B-Instruct
cp src/config.json config.json
# lists: prompts q0..q255 with 3 responses of letters scored by their share of a's
awk 'BEGIN { srand(5); for (i = 0; i < 280; i++) {
  printf "{\"prompt\": \"q%d\", \"responses\": [", i; sc = ""
  for (k = 0; k < 3; k++) { n = 1 + int(rand() * 4); r = ""; a = 0
    for (j = 0; j < n; j++) { c = substr("abcde", 1 + int(rand() * 5), 1); r = r c; a += c == "a" }
    printf "%s\"%s\"", k ? ", " : "", r; sc = sc sprintf("%s%.4f", k ? ", " : "", a / n + k * 0.001) }
  printf "], \"scores\": [%s]}\n", sc } }' > all.jsonl
head -256 all.jsonl > lists.jsonl
tail -24 all.jsonl > heldout.jsonl
awk -F'"' '{ printf "{\"text\": \"%s %s\"}\n", $4, $8 }' lists.jsonl | head -64 > text.jsonl
awk -F'"' '{ printf "{\"prompt\": \"%s\"}\n", $4 }' heldout.jsonl | head -4 > prompts.jsonl

run_line() { # run_line WHERE LINE: one README command, word for word, through bash
  local where=$1 line=$2
  if local t0=$SECONDS; bash -c "set -o pipefail; $line" > "$tmp/out" 2> "$tmp/err"; then ok; else
    bad "$where: '$line' failed (status $?): $(tail -3 "$tmp/err")"
  fi
  echo "test_readme: $where: $((SECONDS - t0)) s" >&2
}

# ---- the quickstart block
quick=$(awk '/<!-- quickstart/ { on = 1; next } /<!-- \/quickstart/ { on = 0 } on' "$readme")
expect "the README has a quickstart block" test -n "$quick"
n_run=0
while IFS= read -r line; do
  case "$line" in
    ./ppa*) run_line quickstart "$line"; n_run=$((n_run + 1)) ;;
    huggingface-cli*|git\ *) echo "test_readme: not run (downloads): $line" ;;
    '#'*|'```'*|'') ;;
    *) bad "quickstart: a line this test does not know how to run: '$line'" ;;
  esac
done <<< "$quick"
expect "the quickstart trains and evaluates (2 ppa lines run)" test "$n_run" -ge 2
expect "the quickstart's training wrote a model folder" test -s aligned/model.safetensors -a -s aligned/config.json
expect "the quickstart's eval printed its accuracy" grep -q "\"ranking_accuracy\"" "$tmp/out"

# ---- the Commands table: `| \`cmd\` | what | \`example\` |`, run in the table's order
rm -rf aligned # the table trains it again
# what examples read that no earlier example writes: a LoRA run for merge, two generations for winrate
"$ppa" train --model M --data lists.jsonl --out run --lora-r 4 --batch-size 32 --max-steps 2 --warmup-ratio 0 \
  > /dev/null 2>&1 || bad "the LoRA run merge's example reads"
"$ppa" generate --model M --prompts prompts.jsonl --out gen_ppa.jsonl -n 2 --max-new-tokens 4 --seed 1 > /dev/null 2>&1 &&
  "$ppa" generate --model M --prompts prompts.jsonl --out gen_sft.jsonl -n 2 --max-new-tokens 4 --seed 2 > /dev/null 2>&1 ||
  bad "the generations winrate's example reads"
rows=$(grep -E '^\| `[a-z]+` \|' "$readme")
listed=$(printf '%s\n' "$rows" | sed -E 's/^\| `([a-z]+)`.*/\1/' | sort | tr '\n' ' ')
commands=$("$ppa" help | awk '/^commands:/ { on = 1; next } on && NF { print $1 }' | grep -v '^help$' | sort | tr '\n' ' ')
expect "the Commands table has one row for each command of 'ppa help' (table: $listed; ppa: $commands)" \
  test "$listed" = "$commands"
while IFS= read -r row; do
  cmd=$(sed -E 's/^\| `([a-z]+)`.*/\1/' <<< "$row")
  example=$(sed -E 's/.*\| `(.*)` \|$/\1/; s/\\\|/|/g' <<< "$row")
  case "$example" in
    *"./ppa $cmd"*) ;;
    *) bad "table row $cmd: its example does not run ./ppa $cmd: '$example'"; continue ;;
  esac
  # the table is short: examples with many steps or huge outputs keep their words, with small sizes given here
  case "$cmd" in
    generate) example="$example --max-new-tokens 4" ;;
    sft) example="$example --batch-size 8 --max-steps 2" ;;
    reward) example="$example --batch-size 64 --max-steps 2" ;;
    bench) example="$example --steps 1" ;;
  esac
  run_line "table row $cmd" "$example"
done <<< "$rows"

# ---- the general-benchmark block, after the table trained `aligned`: an AlpacaEval array, a FastChat question file
printf '%s\n' '[{"instruction": "Name a fruit.", "dataset": "helpful_base"}, {"instruction": "Say hi.", "dataset": "oasst"}]' \
  > alpaca_eval.json
mkdir -p data/mt_bench/model_answer
printf '%s\n' '{"question_id": 81, "category": "writing", "turns": ["Write a poem.", "Shorter."]}' > data/mt_bench/question.jsonl
bench=$(awk '/<!-- benchmarks/ { on = 1; next } /<!-- \/benchmarks/ { on = 0 } on' "$readme")
n_run=0
while IFS= read -r line; do
  case "$line" in
    ./ppa*) run_line benchmarks "$line"; n_run=$((n_run + 1)) ;;
    '#'*|'```'*|'') ;;
    *) bad "benchmarks: a line this test does not know how to run: '$line'" ;;
  esac
done <<< "$bench"
expect "the benchmark block writes both files (2 ppa lines run)" test "$n_run" -eq 2
expect "... AlpacaEval's array, generator the model's folder name" /usr/bin/python3 -c '
import json; a = json.load(open("aligned_alpaca.json"))
assert [(o["instruction"], o["generator"], type(o["output"])) for o in a] == [("Name a fruit.", "aligned", str), ("Say hi.", "aligned", str)]'
expect "... FastChat's answer line, two turns" /usr/bin/python3 -c '
import json; a = [json.loads(l) for l in open("data/mt_bench/model_answer/aligned.jsonl")]
assert len(a) == 1 and a[0]["question_id"] == 81 and a[0]["model_id"] == "aligned" and len(a[0]["choices"][0]["turns"]) == 2'

# ---- make targets the README names: make -n (the demo targets run for real in test_demo.sh)
# the targets: lines of code blocks that start with make, and `make ...` spans in the text
targets=$(awk '/^```/ { code = !code; next } code && /^make( |$)/ { print ($2 == "" || $2 ~ /^#/ ? "(all)" : $2) }
  !code { while (match($0, /`make( [a-z][a-z-]*)?`/)) { t = substr($0, RSTART + 1, RLENGTH - 2); sub(/^make ?/, "", t);
    print (t == "" ? "(all)" : t); $0 = substr($0, RSTART + RLENGTH) } }' "$readme" | sed 's/^$/(all)/' | sort -u)
expect "the README names make demo and make test" sh -c "echo '$targets' | grep -qx demo && echo '$targets' | grep -qx test"
for t in $targets; do
  [ "$t" = "(all)" ] && t=""
  (cd "$root" && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -n ${t:+"$t"} > /dev/null 2> "$tmp/make.err")
  st=$?; expect "make -n ${t:-(all)}: the target exists and its recipe parses ($(tail -1 "$tmp/make.err"))" test $st -eq 0
done
report
