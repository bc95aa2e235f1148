#!/usr/bin/env bash
# CLI behaviour of `ppa train`, `ppa score` and `ppa eval` on a tiny Llama:
# outputs and logs, exact resume, determinism, the reference cache and its
# refusals, malformed data, YAML recipes, every objective, bf16 saves.
# Usage: tests/test_train_cli.sh PPA_BINARY. Prints "test_train_cli: N passed, N failed".
ppa=$(realpath "${1:-./ppa}")
NAME=test_train_cli
. "$(dirname "$0")/lib.sh"
# the log without its timing fields (the only ones that differ between identical runs)
untimed() { grep -v '^{"summary"' "$@" | sed -E 's/, "tokens_per_s": [^,}]*, "elapsed_s": [^,}]*//'; } # the summary holds timings
steps() { grep '^{"step"' "$@"; } # the step and held-out lines, without the closing summary
json_num() { grep -o "\"$1\": [-0-9.e+]*" "$2" | head -1 | sed "s/.*: //"; }

tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" --seed 7 --init-std 0.3 > /dev/null

letter_lists > "$tmp/lists.jsonl"
common=(--model "$tmp/m" --data "$tmp/lists.jsonl" --template none --beta 0.5 --list-size 4 --batch-size 4 --micro-batch 2
        --lr 0.02 --warmup-ratio 0.2 --max-steps 6 --seed 3)

# -- a run: model folder, checkpoint, log
"$ppa" train "${common[@]}" --out "$tmp/a" --objective ppa --save-every 3 > "$tmp/out" 2> "$tmp/err"
st=$?; expect "ppa train exits 0 ($(tail -3 "$tmp/err"))" test $st -eq 0
expect "writes a model folder" test -s "$tmp/a/model.safetensors" -a -s "$tmp/a/config.json" -a -s "$tmp/a/tokenizer.json"
"$ppa" inspect "$tmp/a" > "$tmp/out" 2>&1
expect "the model folder checks out" grep -q "the tensors match config.json" "$tmp/out"
expect "a checkpoint with the training state" test -s "$tmp/a/checkpoint-3/optimizer.safetensors" -a -s "$tmp/a/checkpoint-3/ppa_state.json" -a -s "$tmp/a/checkpoint-3/model.safetensors"
expect "no checkpoint at the last step (the model is)" test ! -e "$tmp/a/checkpoint-6"
expect "one log line per step" test "$(steps "$tmp/a/train_log.jsonl" | wc -l)" -eq 6
for key in step loss lr grad_norm tokens_per_s reward margin accuracy ndcg objectives; do
  expect "the log has \"$key\"" grep -q "\"$key\": " "$tmp/a/train_log.jsonl"
done
expect "the log has every objective's value" test "$(head -1 "$tmp/a/train_log.jsonl" | grep -o '"[a-z_]*": [-0-9]' | wc -l)" -ge 20
expect "step 1: policy = reference, every reward 0" grep -q '^{"step": 1, .*"reward": 0, "margin": 0, "accuracy": 0' "$tmp/a/train_log.jsonl"
expect "a progress line on stderr" grep -q "step 6/6" "$tmp/err"
expect "the reference is computed once and cached" test -s "$tmp/a/reference.cache"
first=$(head -1 "$tmp/a/train_log.jsonl" > "$tmp/l1"; json_num loss "$tmp/l1")
last=$(steps "$tmp/a/train_log.jsonl" | tail -1 > "$tmp/l6"; json_num loss "$tmp/l6")
expect "PPA's loss falls ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(a != "" && b != "" && b < a) }'

# -- determinism and exact resume
"$ppa" train "${common[@]}" --out "$tmp/a2" --objective ppa --save-every 3 > /dev/null 2>&1
expect "the same run twice: byte-identical weights" cmp -s "$tmp/a/model.safetensors" "$tmp/a2/model.safetensors"
expect "the same run twice: identical log lines" cmp -s <(untimed "$tmp/a/train_log.jsonl") <(untimed "$tmp/a2/train_log.jsonl")
mkdir "$tmp/b" && cp -r "$tmp/a/checkpoint-3" "$tmp/b/"
"$ppa" train "${common[@]}" --out "$tmp/b" --objective ppa --save-every 3 --resume "$tmp/b/checkpoint-3" > /dev/null 2> "$tmp/err"
st=$?; expect "resume exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
expect "resume says where it continues" grep -q "resuming at step 3" "$tmp/err"
expect "3 steps + resume + 3 steps = 6 steps: byte-identical weights" cmp -s "$tmp/a/model.safetensors" "$tmp/b/model.safetensors"
expect "... and the same log lines" cmp -s <(untimed "$tmp/a/train_log.jsonl" | tail -3) <(untimed "$tmp/b/train_log.jsonl")
"$ppa" train "${common[@]}" --out "$tmp/b" --objective ppa --lr 0.03 --resume "$tmp/b/checkpoint-3" > /dev/null 2> "$tmp/err"
expect "resume with other options is refused" test $? -eq 2
expect "... naming the option" grep -q "lr" "$tmp/err"
# a hand-edited state (ppa_state.json covers itself: state_checksum): any edit is refused on load, naming the file;
# an older format (1, whose state had no checksum of its own) and an unknown one are refused
mkdir "$tmp/cur" && cp -r "$tmp/a/checkpoint-3" "$tmp/cur/"
cp "$tmp/cur/checkpoint-3/ppa_state.json" "$tmp/state.orig"
edit_state() { # SED-EXPRESSION DESCRIPTION WANT-IN-ERR
  cp "$tmp/state.orig" "$tmp/cur/checkpoint-3/ppa_state.json"
  sed -i -E "$1" "$tmp/cur/checkpoint-3/ppa_state.json"
  cmp -s "$tmp/state.orig" "$tmp/cur/checkpoint-3/ppa_state.json" && { bad "$2: the edit changed nothing"; return; }
  "$ppa" train "${common[@]}" --out "$tmp/cur" --objective ppa --resume "$tmp/cur/checkpoint-3" > /dev/null 2> "$tmp/err"
  local st=$?
  expect "$2: refused (exit 2)" test $st -eq 2
  expect "... $3" grep -qF "$3" "$tmp/err"
}
changed="ppa_state.json does not match its checksum (state_checksum): the checkpoint was changed after ppa wrote it"
edit_state 's/("cursor":[[:space:]]*)[-0-9]+/\1-5/' "a data cursor of -5" "$changed"
edit_state 's/("cursor":[[:space:]]*)[-0-9]+/\11000/' "a data cursor of 1000" "$changed"
edit_state 's/("step":[[:space:]]*)[0-9]+/\12/' "step 3 edited to 2" "$changed"
edit_state '/"checksums"/,/}/{/"checksums"/!{/}/!d}}' "an emptied checksums list" "$changed"
edit_state 's/("format":[[:space:]]*)[0-9]+/\11/' "format 1 (an older ppa's)" "format 1 is not one this ppa reads (format 2): a checkpoint of an older ppa"
edit_state 's/("format":[[:space:]]*)[0-9]+/\17/' "format 7" "format 7 is not one this ppa reads (format 2)"
cp "$tmp/state.orig" "$tmp/cur/checkpoint-3/ppa_state.json"
"$ppa" train "${common[@]}" --out "$tmp/a" --objective ppa > /dev/null 2> "$tmp/err"
expect "an --out holding a model is refused without --resume" test $? -eq 2
expect "... saying what to do" grep -q -- "--resume" "$tmp/err"

# -- the reference cache: ppa score, reuse, refusals
"$ppa" score --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --out "$tmp/ref.cache" > /dev/null 2> "$tmp/err"
expect "ppa score exits 0" test $? -eq 0
expect "ppa score writes the cache" test -s "$tmp/ref.cache"
"$ppa" train "${common[@]}" --out "$tmp/c" --objective ppa --save-every 3 --ref-cache "$tmp/ref.cache" > /dev/null 2> "$tmp/err"
expect "train with a ppa score cache exits 0" test $? -eq 0
expect "a scored cache and a computed one: identical runs" cmp -s "$tmp/a/model.safetensors" "$tmp/c/model.safetensors"
expect "the cache is not written again" test ! -e "$tmp/c/reference.cache"
head -20 "$tmp/lists.jsonl" > "$tmp/fewer.jsonl"
"$ppa" train "${common[@]}" --data "$tmp/fewer.jsonl" --out "$tmp/d" --ref-cache "$tmp/ref.cache" > /dev/null 2> "$tmp/err"
expect "a cache of other data is refused" test $? -eq 2
expect "... with the reason" grep -q "does not belong to this run" "$tmp/err"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m2" --seed 8 --init-std 0.3 > /dev/null
"$ppa" train "${common[@]}" --ref "$tmp/m2" --out "$tmp/d2" --ref-cache "$tmp/ref.cache" > /dev/null 2> "$tmp/err"
expect "a cache of another reference model is refused" test $? -eq 2
expect "... with the reason" grep -q "weights" "$tmp/err"
"$ppa" score --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --out "$tmp/ref.cache" > /dev/null 2> "$tmp/err"
expect "ppa score never overwrites a cache" test $? -eq 2

# -- ppa eval
"$ppa" eval --model "$tmp/a" --ref "$tmp/m" --data "$tmp/lists.jsonl" --template none --beta 0.5 > "$tmp/eval" 2> "$tmp/err"
st=$?; expect "ppa eval exits 0 ($(cat "$tmp/err"))" test $st -eq 0
for key in ranking_accuracy ndcg likelihood_ranking_accuracy rank_flips_gained rank_flips_lost lists; do
  expect "ppa eval prints \"$key\"" grep -q "\"$key\": " "$tmp/eval"
done
acc=$(json_num ranking_accuracy "$tmp/eval")
expect "the aligned model ranks the training lists above chance ($acc)" awk -v a="$acc" 'BEGIN { exit !(a != "" && a > 0.6) }'
"$ppa" eval --model "$tmp/m" --ref "$tmp/m" --data "$tmp/lists.jsonl" --template none > "$tmp/eval0"
expect "policy = reference: s = 0, no pair ranked, no flips" grep -q '"ranking_accuracy": 0, .*"rank_flips_gained": 0, "rank_flips_lost": 0' "$tmp/eval0"
expect "eval counts the rows left after filtering (21 of 24)" grep -q "\"lists\": 21," "$tmp/eval0"

# -- held-out evaluation during training: every N steps and at the end, the numbers of ppa eval
head -18 "$tmp/lists.jsonl" > "$tmp/train18.jsonl"; tail -6 "$tmp/lists.jsonl" > "$tmp/held.jsonl"
"$ppa" train "${common[@]}" --data "$tmp/train18.jsonl" --eval-data "$tmp/held.jsonl" --eval-every 4 --out "$tmp/ev" > /dev/null 2> "$tmp/err"
st=$?; expect "--eval-data trains ($(tail -1 "$tmp/err"))" test $st -eq 0
expect "held-out lines at steps 4 and 6 (the end)" test "$(grep -c '"eval": {' "$tmp/ev/train_log.jsonl")" -eq 2 -a "$(grep -c '^{"step": [46], "eval"' "$tmp/ev/train_log.jsonl")" -eq 2
expect "a held-out summary on stderr" grep -q "held-out at step 6: ranking accuracy" "$tmp/err"
"$ppa" eval --model "$tmp/ev" --ref "$tmp/m" --data "$tmp/held.jsonl" --template none --beta 0.5 > "$tmp/eval_ev" 2> /dev/null
expect "the last held-out line equals ppa eval on the final model" \
  test "$(steps "$tmp/ev/train_log.jsonl" | tail -1 | sed -E 's/^\{"step": 6, "eval": (.*)\}$/\1/')" = "$(cat "$tmp/eval_ev")"

# -- data problems: named, counted, refused
{ head -2 "$tmp/lists.jsonl"; echo '{"prompt": "x", "responses": ["a", "b"], "scores": [1]}'; tail -3 "$tmp/lists.jsonl"; } > "$tmp/bad.jsonl"
"$ppa" train "${common[@]}" --data "$tmp/bad.jsonl" --out "$tmp/e" > /dev/null 2> "$tmp/err"
expect "a malformed line stops the run with status 2" test $? -eq 2
expect "... naming FILE:LINE and the field" grep -q "bad.jsonl:3: .*scores" "$tmp/err"
{ cat "$tmp/bad.jsonl"; echo 'not json'; echo '{"prompt": "y", "responses": ["a", "b", "c"], "scores": [1, 1, 1]}'; } > "$tmp/bad2.jsonl"
"$ppa" train "${common[@]}" --data "$tmp/bad2.jsonl" --out "$tmp/e" --skip-invalid --max-steps 1 --warmup-ratio 0 > /dev/null 2> "$tmp/err"
expect "--skip-invalid goes on" test $? -eq 0
expect "... reports each line" grep -q "bad2.jsonl:7: skipped: invalid JSON" "$tmp/err"
expect "... and counts them" grep -q "skipped 2 invalid rows" "$tmp/err"
expect "rows whose labels are all equal are dropped and counted" grep -q "dropped 1 rows (1 with all labels equal" "$tmp/err"

# -- every objective by name, one-word changes
for obj in $("$ppa" train --list-objectives); do
  "$ppa" train "${common[@]}" --max-steps 2 --objective "$obj" --out "$tmp/o_$obj" > /dev/null 2> "$tmp/err"
  st=$?; expect "objective $obj trains ($(tail -1 "$tmp/err"))" test $st -eq 0 -a -s "$tmp/o_$obj/model.safetensors"
done
expect "simpo needs no reference" test ! -e "$tmp/o_simpo/reference.cache"
"$ppa" train "${common[@]}" --max-steps 1 --objective nope --out "$tmp/f" > /dev/null 2> "$tmp/err"
expect "an unknown objective is refused" test $? -eq 2

# -- gradient accumulation: 1 list x 4 micro-steps = 4 lists x 1 (same lists, same first update)
"$ppa" train "${common[@]}" --max-steps 2 --micro-batch 1 --out "$tmp/g1" > /dev/null 2>&1
"$ppa" train "${common[@]}" --max-steps 2 --micro-batch 4 --out "$tmp/g4" > /dev/null 2>&1
sed -n 2p "$tmp/g1/train_log.jsonl" > "$tmp/s1"; sed -n 2p "$tmp/g4/train_log.jsonl" > "$tmp/s4"
l1=$(json_num loss "$tmp/s1"); l4=$(json_num loss "$tmp/s4"); n1=$(json_num grad_norm "$tmp/s1"); n4=$(json_num grad_norm "$tmp/s4")
expect "accumulation: the same step-2 loss ($l1, $l4) and grad norm ($n1, $n4)" \
  awk -v a="$l1" -v b="$l4" -v c="$n1" -v d="$n4" 'BEGIN { e = a - b; f = c - d; exit !(b != "" && d > 0 && e * e < 1e-12 && f * f < 1e-12 * d * d) }'

# -- options: YAML recipe, bf16, lambdas
cat > "$tmp/recipe.yaml" <<'Y'
# an alignment-handbook style recipe
loss_type: neural_ndcg
beta: 0.5
tau: 1.0
list_size: 4
learning_rate: 0.02
lr_scheduler_type: cosine
warmup_ratio: 0.2
per_device_train_batch_size: 2
gradient_accumulation_steps: 2
max_steps: 6
seed: 3
Y
"$ppa" train --config "$tmp/recipe.yaml" --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --out "$tmp/y" > /dev/null 2> "$tmp/err"
st=$?; expect "a YAML recipe trains ($(tail -1 "$tmp/err"))" test $st -eq 0
expect "the recipe gives the same run as the flags" cmp -s "$tmp/a/model.safetensors" "$tmp/y/model.safetensors"
echo "learning_rte: 0.1" >> "$tmp/recipe.yaml"
"$ppa" train --config "$tmp/recipe.yaml" --model "$tmp/m" --data "$tmp/lists.jsonl" --out "$tmp/y2" > /dev/null 2> "$tmp/err"
expect "an unknown recipe key is refused" test $? -eq 2
expect "... naming FILE:LINE" grep -q "recipe.yaml:13" "$tmp/err"
"$ppa" train "${common[@]}" --max-steps 1 --warmup-ratio 0 --save-dtype bf16 --log-lambdas --out "$tmp/h" > /dev/null 2>&1
"$ppa" inspect "$tmp/h" > "$tmp/out" 2>&1
expect "--save-dtype bf16 writes BF16 tensors" grep -q "BF16" "$tmp/out"
expect "--log-lambdas logs d loss / d s per response" grep -q '"lambdas": \[\[' "$tmp/h/train_log.jsonl"
expect "ppa train --help" "$ppa" train --help > /dev/null
expect "ppa eval --help" "$ppa" eval --help > /dev/null
expect "ppa score --help" "$ppa" score --help > /dev/null

report
