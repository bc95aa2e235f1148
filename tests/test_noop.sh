#!/usr/bin/env bash
# Runs that would learn nothing (docs/training.md): `ppa train`, `ppa reward` and `ppa sft` refuse, with status 2
# and before the out folder, the models or the reference, data that gives no full optimizer step at the default
# batch size, a plan without a step, and a plan whose every step has learning rate 0; what the user asked for
# explicitly (a batch larger than the data) goes on with a note (a state edited to a finished run is refused); the last line counts the
# steps that changed the weights, against the log's lr values. Usage: tests/test_noop.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_noop
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; }
not() { ! "$@"; }
expect_status() { if [ "$3" -eq "$2" ]; then ok; else bad "$1 (exit $3, wanted $2)"; fi; } # DESCRIPTION WANT GOT
# refused DESCRIPTION OUT: the run exited 2 before any work: no --out folder, no reference computed
refused() {
  expect_status "$1: exit 2" 2 "$status"
  expect "$1: no --out folder (no reference cache, no options file)" test ! -e "$2"
  expect "$1: no reference scored" not grep -q "reference log-probs" "$tmp/err"
}
# changed FILE: the number N of "wrote ...: S steps, N changed the weights" in FILE
changed() { sed -nE 's/.*wrote .*, ([0-9]+) changed the weights.*/\1/p' "$1"; }

cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null 2>&1
letter_lists > lists.jsonl # 24 rows, 21 lists after filtering (3 have all labels equal)
head -6 lists.jsonl > six.jsonl # 6 lists
T=(--model m --template none --list-size 4)

# -- the user's case: 21 lists, the paper's defaults (128 lists a step, warm-up ratio 0.1)
"$ppa" train "${T[@]}" --data lists.jsonl --out o_default > /dev/null 2> err; status=$?
refused "21 lists at the default batch size" o_default
expect "... naming the numbers and the option" has err "21 lists give no full optimizer step of 128 lists (--batch-size"
expect "... suggesting a batch that trains (21 makes one warm-up step at lr 0)" has err "use --batch-size 20 or fewer"
"$ppa" train "${T[@]}" --data lists.jsonl --epochs 2 --out o_default > /dev/null 2> err; status=$?
refused "the same over 2 epochs" o_default
expect "... where 21 a step trains" has err "use --batch-size 21 or fewer, or more data"
"$ppa" reward "${T[@]}" --data lists.jsonl --out r_default > /dev/null 2> err; status=$?
refused "reward: 21 lists at the default batch size" r_default
expect "... naming the numbers" has err "reward: 21 lists give no full optimizer step of 128 lists"

# -- several MPI ranks decide alike (from the data, the options and the checkpoint, which every rank reads)
if command -v mpirun > /dev/null; then
  env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    timeout 300 mpirun -np 2 --oversubscribe "$ppa" train "${T[@]}" --data lists.jsonl --out o_mpi > /dev/null 2> err
  status=$?
  refused "2 ranks: 21 lists at the default batch size" o_mpi
  expect "... the ranks saying why" grep -q 'ppa\[rank [01]\]: train: 21 lists give no full optimizer step' err
else
  echo "SKIP $NAME: mpirun is missing: the 2-rank refusal is not checked"
fi

# -- no step at all: data that gives no list after filtering (--max-steps 0 means "from the epochs", --epochs >= 1)
echo '{"prompt": "p", "responses": ["a", "b"], "scores": [1, 1]}' > equal.jsonl
"$ppa" train "${T[@]}" --data equal.jsonl --batch-size 1 --out o_none > /dev/null 2> err; status=$?
refused "no list left after filtering" o_none
expect "... saying why" has err "gives no list"

# -- every step at learning rate 0: one step, and warm-up starts at 0
"$ppa" train "${T[@]}" --data lists.jsonl --batch-size 21 --out o_lr0 > /dev/null 2> err; status=$?
refused "one step of 21 lists, warm-up 0.1" o_lr0
expect "... naming the numbers" has err "every optimizer step would have learning rate 0, so no weight would change: 1 step, and --warmup-ratio 0.1 of 1 step rounds up to 1 warm-up step"
expect "... the lr" has err "--lr 5e-07 x step / 1"
expect "... and the options" has err "use --warmup-ratio 0, or more steps (more --epochs, or a smaller --batch-size)"
"$ppa" train "${T[@]}" --data lists.jsonl --batch-size 4 --max-steps 1 --out o_lr0 > /dev/null 2> err; status=$?
refused "--max-steps 1 with warm-up" o_lr0
expect "... naming --max-steps" has err "(a larger --max-steps)"
"$ppa" reward "${T[@]}" --data lists.jsonl --batch-size 4 --max-steps 1 --out r_lr0 > /dev/null 2> err; status=$?
refused "reward: --max-steps 1 with warm-up" r_lr0

# -- a normal run: 3 steps, warm-up 1 (0.2 x 3 rounded up): step 1 has lr 0
"$ppa" train "${T[@]}" --data six.jsonl --batch-size 2 --lr 0.01 --warmup-ratio 0.2 --max-steps 3 --save-every 2 \
  --out o_run > /dev/null 2> err; status=$?
expect_status "3 steps train" 0 "$status"
expect "the last line counts the steps" has err "wrote o_run: 3 steps, 2 changed the weights (step 1 had lr 0); log o_run/train_log.jsonl"
moved=$(grep -cE '"lr": (0\.|[1-9])' o_run/train_log.jsonl) # lr above 0 (the grad norms of this run are all above 0)
expect "... as many as the log's steps with lr > 0 ($moved)" test "$(changed err)" = "$moved"
expect "... and no warning" not grep -q "warning" err

# -- explicitly asked for: a batch larger than the data (a note), a finished run resumed (a note, the same weights)
"$ppa" train "${T[@]}" --data six.jsonl --batch-size 8 --epochs 2 --lr 0.01 --out o_big > /dev/null 2> err; status=$?
expect_status "--batch-size 8 given, 6 lists: trains" 0 "$status"
expect "... with a note" has err "note: 6 lists are fewer than one optimizer step of 8 (--batch-size 8, as given): every step takes all 6"
expect "... 2 steps of 6 lists" has err "2 steps of 8 lists"
expect "... counted" has err "wrote o_big: 2 steps, 1 changed the weights (step 1 had lr 0)"
# a finished run's checkpoint: ppa writes none (no checkpoint at the last step), and a state edited to look finished
# is refused by its own checksum (docs/safety.md), so "no step left" is never reached by a resume
mkdir o_end && cp -r o_run/checkpoint-2 o_end/
sed -i -E 's/("step":[[:space:]]*)2,/\13,/; s/("epoch":[[:space:]]*)0,/\11,/; s/("cursor":[[:space:]]*)4,/\10,/' o_end/checkpoint-2/ppa_state.json
"$ppa" train "${T[@]}" --data six.jsonl --batch-size 2 --lr 0.01 --warmup-ratio 0.2 --max-steps 3 --save-every 2 \
  --out o_end --resume o_end/checkpoint-2 > /dev/null 2> err; status=$?
expect_status "a state edited to a finished run: refused" 2 "$status"
expect "... by its checksum" has err "ppa_state.json does not match its checksum (state_checksum)"
expect "... before any output" test ! -e o_end/model.safetensors

# -- sft: rows, its own defaults (8 rows a step, no warm-up)
printf '{"text": "abc abc"}\n{"text": "hello"}\n{"prompt": "x", "responses": ["yy"]}\n' > rows.jsonl
"$ppa" sft --model m --template none --data rows.jsonl --out s_default > /dev/null 2> err; status=$?
refused "sft: 3 rows at the default batch size" s_default
expect "... naming the numbers" has err "sft: 3 rows give no full optimizer step of 8 rows (--batch-size, the default): use --batch-size 3 or fewer"
"$ppa" sft --model m --template none --data rows.jsonl --batch-size 3 --warmup-ratio 0.5 --out s_lr0 > /dev/null 2> err; status=$?
refused "sft: one step, warm-up" s_lr0
expect "... naming the numbers" has err "sft: every optimizer step would have learning rate 0"
"$ppa" sft --model m --template none --data rows.jsonl --batch-size 1 --warmup-ratio 0.5 --lr 0.01 --out s_run > out 2> err; status=$?
expect_status "sft: 3 steps, warm-up 2" 0 "$status"
moved=$(grep -cE '"lr": (0\.|[1-9])' out)
expect "sft counts the steps that changed the weights ($moved in its log)" test "$(changed err)" = "$moved" -a "$moved" = 2
expect "... naming the one that did not" has err "wrote s_run: 3 steps, 2 changed the weights (step 1 had lr 0)"

report
