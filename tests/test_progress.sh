#!/usr/bin/env bash
# Progress lines of the long commands (src/core/progress.h, docs/progress.md) with stderr in a file, as in a batch
# job: generate, score, logprobs, eval, train, sft, judge (reward model, a lexicon from a file and from stdin) and
# winrate with a model judge each print a first line and a last one whose done equals its total, whole lines
# without \r; PPA_PROGRESS_SECONDS=0 prints a line per unit, a bad value is refused; on 2 ranks (mpirun, SKIP
# without it) only rank 0 prints. On a terminal (a pty from
# util-linux's `script`, SKIP without it) the line is rewritten in place with \r.
# Usage: tests/test_progress.sh PPA_BINARY. Prints "test_progress_cli: N passed, N failed".
ppa=$(realpath "${1:-./ppa}")
NAME=test_progress_cli
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; }

tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" --seed 5 --init-std 0.3 > /dev/null 2>&1
python3 - "$tmp" <<'P'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
json.dump(dict(c, architectures=["LlamaForSequenceClassification"], id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0},
               pad_token_id=257), open(d + "/rm.json", "w"))
P
"$ppa" init --config "$tmp/rm.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/rm" --seed 2 > /dev/null 2>&1
expect "a tiny model and a tiny reward model" test -s "$tmp/m/model.safetensors" -a -s "$tmp/rm/model.safetensors"
letter_lists > "$tmp/lists.jsonl"
for i in 1 2 3 4 5 6; do echo "{\"prompt\": \"p$i\"}"; done > "$tmp/p.jsonl"

# lines FILE PREFIX: the progress lines of FILE: PREFIX, then DONE/TOTAL
lines() { grep -E -- "^$2[0-9]+/[0-9]+" "$1"; }
# done_total LINE: "DONE TOTAL", the first N/M after the prefix
done_total() { sed -E 's#^[^0-9]*([0-9]+)/([0-9]+).*#\1 \2#' <<< "$1"; }
# check_lines WHAT FILE PREFIX MIN: at least MIN lines; the first has done <= total, the last done == total and ETA 0;
# none holds a carriage return
check_lines() {
  local what=$1 file=$2 prefix=$3 min=$4 n first last
  n=$(lines "$file" "$prefix" | wc -l)
  expect "$what: $min or more progress lines off a terminal (got $n)" test "$n" -ge "$min"
  first=$(lines "$file" "$prefix" | head -1) last=$(lines "$file" "$prefix" | tail -1)
  set -- $(done_total "$first")
  expect "$what: the first line counts done of total ($first)" awk -v d="${1:-}" -v t="${2:-}" \
    'BEGIN { exit !(d != "" && t != "" && d + 0 >= 1 && d + 0 <= t + 0) }'
  set -- $(done_total "$last")
  expect "$what: the last line has done == total ($last)" test -n "${1:-}" -a "${1:-}" = "${2:-}"
  expect "$what: the last line's ETA is 0" has <(echo "$last") "ETA 0:00:00"
  expect "$what: whole lines, no carriage return" test "$(tr -cd '\r' < "$file" | wc -c)" -eq 0
}

export PPA_PROGRESS_SECONDS=0 # a line per unit
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --template none -n 2 --max-new-tokens 8 --temperature 1 \
  --out "$tmp/g.jsonl" 2> "$tmp/gen.err"
expect "generate exits 0" test $? -eq 0
# 6 prompts x 2 responses x 8 tokens: the budget; a line per round of sampling (8 at most) and the prompts written
check_lines generate "$tmp/gen.err" "ppa generate: " 3
expect "generate: the last line has every prompt written" has <(lines "$tmp/gen.err" "ppa generate: " | tail -1) \
  "96/96 tokens of the budget, 6/6 prompts written"

"$ppa" score --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --out "$tmp/ref.cache" --batch-tokens 100 2> "$tmp/score.err"
expect "score exits 0" test $? -eq 0
check_lines score "$tmp/score.err" "ppa score: reference log-probs " 3
"$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --batch-tokens 100 > /dev/null 2> "$tmp/lp.err"
expect "logprobs exits 0" test $? -eq 0
check_lines logprobs "$tmp/lp.err" "ppa logprobs: log-probs " 3
expect "logprobs: rows and tokens of all of them" has "$tmp/lp.err" "ppa logprobs: log-probs 24/24 rows"
"$ppa" eval --model "$tmp/m" --ref "$tmp/m" --data "$tmp/lists.jsonl" --template none --batch-tokens 100 > /dev/null 2> "$tmp/eval.err"
expect "eval exits 0" test $? -eq 0
check_lines "eval (policy)" "$tmp/eval.err" "ppa eval: policy log-probs " 3
check_lines "eval (reference)" "$tmp/eval.err" "ppa eval: reference log-probs " 3
"$ppa" train --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --list-size 4 --batch-size 4 --micro-batch 4 \
  --max-steps 3 --lr 0.01 --warmup-ratio 0 --seed 3 --out "$tmp/t" > /dev/null 2> "$tmp/train.err"
expect "train exits 0" test $? -eq 0
check_lines train "$tmp/train.err" "ppa train: step " 3
for i in 1 2 3 4 5 6 7 8; do echo "{\"text\": \"line $i of some text\"}"; done > "$tmp/sft.jsonl"
"$ppa" sft --model "$tmp/m" --data "$tmp/sft.jsonl" --template none --batch-size 2 --micro-batch 2 --max-steps 3 \
  --lr 0.01 --out "$tmp/s" > /dev/null 2> "$tmp/sft.err"
expect "sft exits 0" test $? -eq 0
check_lines sft "$tmp/sft.err" "ppa sft: step " 3
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/lists.jsonl" --template none --batch-tokens 100 > /dev/null 2> "$tmp/rm.err"
expect "judge --reward-model exits 0" test $? -eq 0
check_lines "judge --reward-model" "$tmp/rm.err" "ppa judge: reward model " 3
"$ppa" winrate --a "$tmp/g.jsonl" --b "$tmp/g.jsonl" --judge reward-model --reward-model "$tmp/rm" --template none \
  > /dev/null 2> "$tmp/win.err"
expect "winrate exits 0" test $? -eq 0
check_lines "winrate --judge reward-model" "$tmp/win.err" "ppa winrate: reward-model " 6

# a lexicon on made-up word lists (the layout of the npm cache): from a file, rows of a known total; from stdin, rows
npm="$tmp/npm"
mkdir -p "$npm/vader-sentiment-1.1.3"
printf 'glad\t2.0\t0.5\t[2]\ngloom\t-1.5\t0.5\t[-1]\n' > "$npm/vader-sentiment-1.1.3/vader_lexicon.txt"
printf '{"text": "glad"}\n{"text": "gloom"}\n\n{"responses": ["glad", "so glad"]}\n' > "$tmp/texts.jsonl"
"$ppa" judge --judge vader --npm-cache "$npm" --data "$tmp/texts.jsonl" > /dev/null 2> "$tmp/vader.err"
expect "judge --judge vader exits 0" test $? -eq 0
check_lines "judge --judge vader" "$tmp/vader.err" "ppa judge: vader " 3
"$ppa" judge --judge vader --npm-cache "$npm" --data - < "$tmp/texts.jsonl" > /dev/null 2> "$tmp/stdin.err"
expect "judge from stdin: a line per row, the count without a total" \
  test "$(grep '^ppa judge: vader [0-9]' "$tmp/stdin.err" | tr '\n' ';')" = "ppa judge: vader 1 rows;ppa judge: vader 2 rows;ppa judge: vader 3 rows;"

"$ppa" judge --judge vader --npm-cache "$npm" --data <(cat "$tmp/texts.jsonl") > "$tmp/pipe.jsonl" 2> "$tmp/pipe.err"
expect "judge from a pipe: every row judged (the pipe is read once)" test "$(wc -l < "$tmp/pipe.jsonl")" -eq 3
expect "judge from a pipe: the count without a total" test "$(grep -c '^ppa judge: vader [0-9]* rows$' "$tmp/pipe.err")" -eq 3

# the default interval (30 s): the first unit and the end, whatever the time taken (the lines between depend on it)
PPA_PROGRESS_SECONDS= "$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --batch-tokens 100 \
  > /dev/null 2> "$tmp/lp30.err"
check_lines "logprobs, every 30 s" "$tmp/lp30.err" "ppa logprobs: log-probs " 2
PPA_PROGRESS_SECONDS=x "$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none > /dev/null 2> "$tmp/bad.err"
expect "PPA_PROGRESS_SECONDS=x is refused with exit 2" test $? -eq 2
expect "and says why" has "$tmp/bad.err" "PPA_PROGRESS_SECONDS=x: give the seconds between progress lines"

# two ranks (Open MPI, as tests/test_mpi.sh runs them): only rank 0 prints, its share of the rows
if command -v mpirun > /dev/null; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    timeout 300 mpirun -np 2 --oversubscribe "$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none \
    --batch-tokens 100 > /dev/null 2> "$tmp/mpi.err"
  expect "logprobs on 2 ranks exits 0" test $? -eq 0
  check_lines "logprobs on 2 ranks" "$tmp/mpi.err" "ppa logprobs: log-probs " 2
  expect "on 2 ranks one rank prints: one last line, of rank 0's 12 rows" \
    test "$(grep -c '^ppa logprobs: log-probs 12/12 rows' "$tmp/mpi.err")" -eq 1
else
  echo "SKIP $NAME: no mpirun: the ranks' lines are not checked"
fi

# on a terminal: one line rewritten in place (\r), ended once at the end
if command -v script > /dev/null; then
  script -qec "stty cols 200 2> /dev/null; '$ppa' logprobs --model '$tmp/m' --data '$tmp/lists.jsonl' --template none --batch-tokens 100 > '$tmp/lp.jsonl'" \
    /dev/null > "$tmp/tty.txt" 2>&1
  expect "logprobs on a terminal exits 0" test $? -eq 0
  # the terminal turns each \n into \r\n: a rewrite is a \r not followed by \n
  rewrites=$(sed 's/\r$//' "$tmp/tty.txt" | grep -F 'ppa logprobs: log-probs' | tr '\r' '\n' | grep -c '^ppa logprobs: log-probs')
  expect "on a terminal the line is rewritten in place with \\r ($rewrites lines on one)" test "$rewrites" -ge 3
  expect "on a terminal: one line of them, ended at 24/24" \
    test "$(sed 's/\r$//' "$tmp/tty.txt" | grep -c 'ppa logprobs: log-probs')" -eq 1
  expect "on a terminal: the last state is done == total" grep -qE \
    '^ppa logprobs: log-probs 24/24 rows, ([0-9]+)/\1 tokens, ETA 0:00:00 *$' <(sed 's/\r$//' "$tmp/tty.txt" | tr '\r' '\n')
else
  echo "SKIP $NAME: no 'script' (util-linux): the terminal form is not checked"
fi
report
