#!/usr/bin/env bash
# Nothing a user gives is destroyed: an output that resolves to an input is
# refused before any work (the same file by device and inode: links and ".."
# count), one run writes an output folder at a time (its lock names the
# holder; a dead holder's lock is taken over), a checkpoint refuses a resume
# with other starting weights or another reference, a write that fails stops
# the run naming the file, and a special file in place of a model, tokenizer,
# config or checkpoint file is refused without blocking.
# Usage: tests/test_files.sh PPA_BINARY. Prints "test_files: N passed, N failed".
ppa=$(realpath "${1:-./ppa}")
NAME=test_files
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1

tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
"$ppa" init --config config.json --tokenizer tokenizer.json --out m2 --seed 8 --init-std 0.3 > /dev/null
letter_lists > D.jsonl
head -8 D.jsonl > E.jsonl
cp D.jsonl D.orig && cp E.jsonl E.orig && cp m/model.safetensors w.orig
T=(--template none --list-size 3 --batch-size 2 --lr 0.01 --max-steps 2)
intact() { cmp -s D.jsonl D.orig && cmp -s E.jsonl E.orig && cmp -s m/model.safetensors w.orig; }

# -- outputs that are inputs: refused before any work, both options named, nothing touched
refused() { # refused DESCRIPTION MESSAGE COMMAND...: exit 2, MESSAGE on stderr, the inputs intact
  local d=$1 msg=$2; shift 2
  "$@" > out.txt 2> err.txt
  local rc=$?
  expect "$d: exit 2" test $rc -eq 2
  expect "$d: says why" grep -qF -- "$msg" err.txt
  expect "$d: the inputs are intact" intact
}
refused "train --log = --data" "--log D.jsonl is the same file as --data D.jsonl" \
  "$ppa" train --model m "${T[@]}" --data D.jsonl --out o1 --log D.jsonl
expect "train --log = --data: no run folder content" test ! -e o1/train_log.jsonl -a ! -e o1/reference.cache
refused "train --log = the model's weights" "--log m/model.safetensors is the file model.safetensors of --model m" \
  "$ppa" train --model m "${T[@]}" --data D.jsonl --out o1 --log m/model.safetensors
refused "train --log = --eval-data, spelled with .." "--log m/../E.jsonl is the same file as --eval-data E.jsonl" \
  "$ppa" train --model m "${T[@]}" --data D.jsonl --eval-data E.jsonl --out o1 --log m/../E.jsonl
ln -s D.jsonl link.jsonl
refused "train --log = a link to --data" "--log link.jsonl is the same file as --data D.jsonl" \
  "$ppa" train --model m "${T[@]}" --data D.jsonl --out o1 --log link.jsonl
ln D.jsonl hard.jsonl
refused "train --ref-cache = a hard link to --data" "--ref-cache hard.jsonl is the same file as --data D.jsonl" \
  "$ppa" train --model m "${T[@]}" --data D.jsonl --out o1 --ref-cache hard.jsonl
rm hard.jsonl
refused "train --out = --model" "--out m is the same folder as --model m" \
  "$ppa" train --model m "${T[@]}" --data D.jsonl --out m
refused "train --out = --ref" "--out ./m2/../m is the same folder as --model m" \
  "$ppa" train --model m "${T[@]}" --ref m2 --data D.jsonl --out ./m2/../m
mkdir -p o2 && cp D.jsonl o2/train_log.jsonl
refused "train: --data where --out writes its log" "--out o2 writes train_log.jsonl, which is --data o2/train_log.jsonl" \
  "$ppa" train --model m "${T[@]}" --data o2/train_log.jsonl --out o2
expect "train: that data intact" cmp -s o2/train_log.jsonl D.orig
refused "grad --out = the model's weights" "--out m/model.safetensors is the file model.safetensors of --model m" \
  "$ppa" grad --model m --template none --data D.jsonl --objective ppa --beta 0.1 --out m/model.safetensors
refused "sft --out = --model" "--out m is the same folder as --model m" \
  "$ppa" sft --model m --template none --data D.jsonl --out m --max-steps 1
refused "score --out = --data" "--out D.jsonl is the same file as --data D.jsonl" \
  "$ppa" score --model m --template none --data D.jsonl --out D.jsonl
refused "judge --out = --data" "--out ./D.jsonl is the same file as --data D.jsonl" \
  "$ppa" judge --judge afinn --npm-cache "$tmp" --data D.jsonl --out ./D.jsonl
refused "logprobs >> its own data" "standard output is the same file as --data D.jsonl" \
  sh -c "'$ppa' logprobs --model m --template none --data D.jsonl >> D.jsonl"
echo '{"scores": [1, 2], "labels": [1, 0]}' > L.jsonl && cp L.jsonl L.orig
"$ppa" loss --objective dpo --input L.jsonl >> L.jsonl 2> err.txt
expect "loss >> its own --input: refused, the input intact" sh -c "test $? -eq 2 && cmp -s L.jsonl L.orig && grep -qF 'standard output is the same file as --input L.jsonl' err.txt"
# the same names elsewhere are fine
"$ppa" train --model m "${T[@]}" --data D.jsonl --out o3 --log o3.log > /dev/null 2>&1
expect "a log beside the inputs is fine" test -s o3.log -a -s o3/config.json

# -- one writer per output folder
"$ppa" train --model m "${T[@]}" --max-steps 400 --data D.jsonl --out o4 > /dev/null 2> first.err &
first=$!
for _ in $(seq 100); do [ -s o4/.ppa.lock ] && break; sleep 0.05; done
"$ppa" train --model m "${T[@]}" --data D.jsonl --out o4 > /dev/null 2> err.txt
expect "a second run on the same --out is refused (exit 2)" test $? -eq 2
expect "and names the first one's pid" grep -qF "o4 is in use by ppa train (pid $first)" err.txt
wait $first
expect "the first run finishes" test $? -eq 0 -a -s o4/config.json
expect "with its own options beside its own log" sh -c "grep -q '\"max_steps\":400' o4/train_options.json && test \$(grep -c '^{\"step\"' o4/train_log.jsonl) -eq 400"
printf 'ppa train (pid 999999)\n' > o5.lock; mkdir o5 && mv o5.lock o5/.ppa.lock
"$ppa" train --model m "${T[@]}" --data D.jsonl --out o5 > /dev/null 2> err.txt
expect "a dead run's lock is taken over" test $? -eq 0 -a -s o5/config.json
"$ppa" sft --model m --template none --data D.jsonl --out s1 --max-steps 400 > /dev/null 2>&1 &
first=$!
for _ in $(seq 100); do [ -s s1/.ppa.lock ] && break; sleep 0.05; done
"$ppa" sft --model m --template none --data D.jsonl --out s1 --max-steps 1 > /dev/null 2> err.txt
expect "sft: a second run on the same --out is refused" grep -qF "s1 is in use by ppa sft (pid $first)" err.txt
wait $first
expect "sft: the first run finishes" test $? -eq 0 -a -s s1/config.json
"$ppa" sft --model m --template none --data D.jsonl --out s1 --max-steps 1 > /dev/null 2> err.txt
expect "sft: a folder holding a model is refused before any work" grep -qF "s1 already holds a model" err.txt

# -- a checkpoint knows its run
C=(--template none --list-size 3 --batch-size 2 --lr 0.01 --max-steps 4 --save-every 1 --data D.jsonl)
"$ppa" train --model m "${C[@]}" --out c > /dev/null 2>&1
rm c/config.json c/model.safetensors # the run as if stopped after its last checkpoint
"$ppa" train --model m2 "${C[@]}" --out c --ref-cache c2.cache --resume c/checkpoint-3 > /dev/null 2> err.txt
expect "resume with another --model: refused (exit 2)" test $? -eq 2
expect "resume with another --model: says so" grep -q "started from other weights than this --model" err.txt
"$ppa" train --model m --ref m2 "${C[@]}" --out c --ref-cache c3.cache --resume c/checkpoint-3 > /dev/null 2> err.txt
expect "resume with another reference: refused" grep -q "has another reference model" err.txt
"$ppa" train --model m "${C[@]}" --out c --resume c/checkpoint-1 > /dev/null 2> err.txt
expect "resume that would write a later checkpoint again: refused before any step" \
  grep -qF "already holds checkpoint-2, which this run resumed at step 1 would write again" err.txt
"$ppa" train --model m "${C[@]}" --out c --resume c/checkpoint-3 > /dev/null 2> err.txt
expect "resume with the run's own files: fine" test $? -eq 0 -a -s c/config.json
# a state edited to drop the run's identity is refused (ppa_state.json covers itself)
cp -r c/checkpoint-3 old && rm c/config.json c/model.safetensors
sed -i -E '/^\s+"(model|reference)":/d' old/ppa_state.json
if grep -qE '"(model|reference)":' old/ppa_state.json; then bad "the test's edit of ppa_state.json did not apply"; fi
"$ppa" train --model m "${C[@]}" --out c --resume old > /dev/null 2> err.txt
expect "a state without the run's identity: refused by its checksum" grep -q "ppa_state.json does not match its checksum" err.txt

# -- a write that fails stops the run
"$ppa" train --model m "${T[@]}" --data D.jsonl --out f1 --log /dev/full > /dev/null 2> err.txt
expect "train --log /dev/full: exit 1 (a runtime failure)" test $? -eq 1
expect "train --log /dev/full: names the file and why" grep -q "step 1: cannot write the log /dev/full: No space left" err.txt
expect "train --log /dev/full: no model, no claim of a log" sh -c "test ! -e f1/config.json && ! grep -q 'wrote f1' err.txt"
"$ppa" sft --model m --template none --data D.jsonl --out f2 --max-steps 2 > /dev/full 2> err.txt
expect "sft > /dev/full: exit non-zero, the log named" sh -c "test $? -ne 0 && grep -q 'cannot write the log (standard output)' err.txt"
"$ppa" logprobs --model m --template none --data D.jsonl > /dev/full 2> err.txt
expect "logprobs > /dev/full: exit non-zero" test $? -ne 0

# -- special files in place of model, tokenizer, config and checkpoint files: refused at once
for f in config.json tokenizer.json tokenizer_config.json model.safetensors; do
  rm -rf mf && cp -r m mf && rm -f "mf/$f" && mkfifo "mf/$f"
  timeout 20 "$ppa" logprobs --model mf --template none --data D.jsonl > /dev/null 2> err.txt
  rc=$?
  expect "a FIFO as $f: logprobs refuses it without blocking (exit $rc)" test $rc -eq 2
  expect "a FIFO as $f: named" grep -qF "mf/$f: is a FIFO, not a regular file" err.txt
  timeout 20 "$ppa" train --model mf "${T[@]}" --data D.jsonl --out fo > /dev/null 2> err.txt
  expect "a FIFO as $f: train refuses it without blocking" test $? -eq 2
done
# the model's own chat template is read when --template is not given: its files too
cp m/tokenizer_config.json tc.orig
printf '{"chat_template": "{%% for m in messages %%}{{ m.content }}{%% endfor %%}"}' > m/tokenizer_config.json
for f in tokenizer_config.json chat_template.jinja; do
  rm -rf mf && cp -r m mf && rm -f "mf/$f" && mkfifo "mf/$f"
  timeout 20 "$ppa" logprobs --model mf --data D.jsonl > /dev/null 2> err.txt
  rc=$?
  expect "a FIFO as $f, the template read: refused without blocking (exit $rc)" test $rc -eq 2
  expect "a FIFO as $f, the template read: named" grep -qF "mf/$f: is a FIFO, not a regular file" err.txt
done
cp tc.orig m/tokenizer_config.json
rm -rf mf && cp -r m mf && rm mf/config.json && ln -s /dev/zero mf/config.json
timeout 20 "$ppa" inspect mf > /dev/null 2> err.txt
expect "a device as config.json: inspect refuses it" sh -c "test $? -eq 2 && grep -qF 'is a character device, not a regular file' err.txt"
cp -r c/checkpoint-3 ck && rm ck/ppa_state.json && mkfifo ck/ppa_state.json
timeout 20 "$ppa" train --model m "${C[@]}" --out c5 --resume ck > /dev/null 2> err.txt
expect "a FIFO as a checkpoint's state: refused without blocking" sh -c "test $? -eq 2 && grep -qF 'ppa_state.json: is a FIFO' err.txt"
mkfifo fifo.yaml
timeout 20 "$ppa" train --config fifo.yaml --model m --data D.jsonl --out c6 > /dev/null 2> err.txt
expect "a FIFO as a recipe: refused without blocking" sh -c "test $? -eq 2 && grep -qF 'fifo.yaml: is a FIFO' err.txt"
mkfifo data.fifo
timeout 20 "$ppa" train --model m "${T[@]}" --data data.fifo --out c7 > /dev/null 2> err.txt
expect "a FIFO as train's data (read twice): refused" sh -c "test $? -eq 2 && grep -qF 'data.fifo: is a FIFO' err.txt"

report
