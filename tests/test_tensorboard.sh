#!/usr/bin/env bash
# --report-to tensorboard (docs/training.md "TensorBoard and W&B") and the model card (README.md) every training
# command writes. The events file is decoded independently of ppa (tests/ref/tfevents_read.py: python3-crcmod's
# CRC-32C, python3-protobuf with tensorflow.Event's schema) and compared with train_log.jsonl value by value
# (float32); a corrupted or truncated file is refused by that decoder; two identical runs under SOURCE_DATE_EPOCH
# write the same events but for the timing fields; a resumed run's file matches an unbroken run's; sft's stdout
# log is reported too. The card's front matter is YAML (python3-yaml) naming the base model, the data and ppa, its
# metrics are the log's last values, its command line is the run's, and the base's own card is not copied.
# Usage: tests/test_tensorboard.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_tensorboard
. "$(dirname "$0")/lib.sh"
read_ev="/usr/bin/python3 $(realpath "$(dirname "$0")")/ref/tfevents_read.py"
cd "$tmp" || exit 1
if ! /usr/bin/python3 -c 'import crcmod.predefined, google.protobuf, yaml' 2> /dev/null; then
  echo "FAIL $NAME: needs python3-crcmod, python3-protobuf and python3-yaml (scripts/install-deps.sh)" >&2
  exit 1
fi
has() { grep -qF -- "$2" "$1"; }
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
letter_lists > lists.jsonl
head -6 lists.jsonl > held.jsonl
EV=runs/events.out.tfevents.ppa
plain=(--model ../m --data ../lists.jsonl --template none --batch-size 4 --lr 0.01 --eval-data ../held.jsonl
       --eval-every 2 --save-every 3 --log-lambdas)
args=("${plain[@]}" --report-to tensorboard)
# two identical runs in two folders, the same relative paths: r1/out and r2/out
for r in r1 r2; do
  mkdir $r && (cd $r && SOURCE_DATE_EPOCH=1700000000 "$ppa" train "${args[@]}" --out out > /dev/null 2> err); st=$?
  expect "train --report-to tensorboard ($r; exit $st: $(tail -1 $r/err 2> /dev/null))" test $st -eq 0 -a -s $r/out/$EV
done
$read_ev r1/out/$EV --compare r1/out/train_log.jsonl > cmp 2> cmp.err; st=$?
expect "every step's and every eval line's numbers, decoded independently (exit $st: $(cat cmp.err))" test $st -eq 0
expect "... 6 steps and 3 held-out evaluations: 9 events" has cmp "compared 9 events"
$read_ev r1/out/$EV > dump
expect "the first event: file_version brain.Event:2" sh -c "head -1 dump | grep -qF '\"file_version\": \"brain.Event:2\"'"
expect "wall_time is SOURCE_DATE_EPOCH in every event" test "$(grep -c '"wall_time": 1700000000.0' dump)" -eq 10
expect "a nested object's numbers: train/objectives/NAME" has dump '"train/objectives/neural_ndcg"'
expect "held-out numbers: eval/NAME" has dump '"eval/ndcg"'
expect "lambdas (lists) are no scalars" sh -c "! grep -q 'lambdas' dump"
# the comparison can fail: one value of the log changed by one part in 10^4 (float32 resolves 6e-8)
/usr/bin/python3 -c 'import json, sys
for i, l in enumerate(open(sys.argv[1])):
    j = json.loads(l)
    if i == 1: j["loss"] *= 1.0001
    print(json.dumps(j))' r1/out/train_log.jsonl > changed.jsonl
$read_ev r1/out/$EV --compare changed.jsonl > /dev/null 2> e0; st=$?
expect "a log value the events do not hold: found (exit $st: $(cat e0))" sh -c "test $st -eq 1 && grep -q 'train/loss' e0 && ! cmp -s changed.jsonl r1/out/train_log.jsonl"
# the decoder can fail: a changed byte in a record's data, in a length, and a cut file
size=$(stat -c %s r1/out/$EV)
corrupt() { # corrupt OFFSET OUT: a copy with the byte at OFFSET inverted
  cp r1/out/$EV "$2"
  printf "$(printf '\\%03o' $(( $(od -An -tu1 -j "$1" -N1 r1/out/$EV) ^ 255 )))" | dd of="$2" bs=1 seek="$1" conv=notrunc 2> /dev/null
}
corrupt $((size / 2)) bad1
$read_ev bad1 > /dev/null 2> e1; st=$?
expect "a changed byte in the middle: refused (exit $st: $(cat e1))" sh -c "test $st -eq 1 && grep -q 'CRC does not match' e1"
corrupt 0 bad2
$read_ev bad2 > /dev/null 2> e2; st=$?
expect "a changed length: refused (exit $st: $(cat e2))" sh -c "test $st -eq 1 && grep -q \"the length's CRC\" e2"
head -c $((size - 3)) r1/out/$EV > cut
$read_ev cut > /dev/null 2> e3; st=$?
expect "a cut file: refused (exit $st: $(cat e3))" sh -c "test $st -eq 1 && grep -q truncated e3"
# determinism: the same events, timings aside (they differ between identical runs, as in the log)
$read_ev r1/out/$EV --no-timings > nt1
$read_ev r2/out/$EV --no-timings > nt2
expect "two identical runs: the same events but for the timing fields" cmp -s nt1 nt2
expect "... which are there (tokens_per_s)" has dump '"train/tokens_per_s"'
expect "... and left out by --no-timings" sh -c "! grep -q tokens_per_s nt1"
# a resumed run: the log keeps the steps up to the checkpoint, the events file follows it
mkdir r3 && cp -r r1/out r3/out
(cd r3 && SOURCE_DATE_EPOCH=1700000000 "$ppa" train "${args[@]}" --out out --resume out/checkpoint-3 > /dev/null 2> err); st=$?
expect "the resumed run (exit $st: $(tail -1 r3/err))" test $st -eq 0
$read_ev r3/out/$EV --compare r3/out/train_log.jsonl > /dev/null 2> e4; st=$?
expect "resumed: the events match its log (exit $st: $(cat e4))" test $st -eq 0
$read_ev r3/out/$EV --no-timings > nt3
expect "resumed: the events of a run that never stopped" cmp -s nt1 nt3
# wandb: a note on importing the folder; ppa talks to no service
mkdir r4 && (cd r4 && "$ppa" train "${args[@]/tensorboard/wandb}" --out out > /dev/null 2> err); st=$?
expect "--report-to wandb (exit $st)" test $st -eq 0 -a -s r4/out/$EV
expect "... says how to import the TensorBoard folder" has r4/err "wandb sync --sync-tensorboard out/runs"
mkdir r5 && (cd r5 && "$ppa" train "${plain[@]}" --out out > /dev/null 2> err); st=$?
expect "without --report-to: no runs folder (exit $st)" sh -c "test $st -eq 0 && test ! -e r5/out/runs"
# sft: its log is standard output
for i in 1 2 3; do sed 's/"scores": \[[^]]*\]//; s/, }/}/' lists.jsonl; done > sft.jsonl
"$ppa" sft --model m --data sft.jsonl --template none --batch-size 8 --lr 0.01 --out s --report-to tensorboard > s.log 2> s.err; st=$?
expect "sft --report-to tensorboard (exit $st: $(tail -1 s.err))" test $st -eq 0
$read_ev s/$EV --compare s.log > /dev/null 2> e5; st=$?
expect "sft: the events are its stdout log's lines (exit $st: $(cat e5))" test $st -eq 0
# the model card
card=r1/out/README.md
expect "train writes README.md" test -s $card
/usr/bin/python3 - "$card" r1/out/train_log.jsonl > fm 2> fm.err <<'PY'; st=$?
import json, sys, yaml
text = open(sys.argv[1]).read()
assert text.startswith("---\n"), "no front matter"
fm = yaml.safe_load(text[4:text.index("\n---\n", 4)])
assert fm["base_model"] == "m" and fm["datasets"] == ["lists.jsonl"] and fm["library_name"] == "ppa", fm
assert "ppa" in fm["tags"] and "neural_ndcg" in fm["tags"] and "license" not in fm, fm
last = {}
for line in open(sys.argv[2]):
    j = json.loads(line)
    for k, v in (j["eval"] if "eval" in j else j).items():
        last[("eval/" if "eval" in j else "train/") + k] = v
for tag in ("train/loss", "train/grad_norm", "eval/ndcg", "eval/ranking_accuracy"):
    assert "| %s | %.6g |" % (tag, last[tag]) in text, tag
assert "tokens_per_s" not in text, "a timing in the card"
print("ok")
PY
expect "the card's YAML names base_model, datasets, library_name, tags; its metrics are the log's last (exit $st: $(tail -1 fm.err))" has fm ok
expect "the card holds the command line" has $card "ppa train --model ../m --data ../lists.jsonl --template none --batch-size 4"
expect "two identical runs write the same card" cmp -s r1/out/README.md r2/out/README.md
expect "sft writes a card too" sh -c "grep -qF 'ppa sft --model m --data sft.jsonl' s/README.md && grep -qF 'tags:' s/README.md"
# a base model with a card of its own: its license is kept, its text is not copied
mkdir mb && cp m/* mb/
printf -- '---\nlicense: apache-2.0\nlanguage: en\n---\n\n# The base model\n\nBASE CARD TEXT\n' > mb/README.md
"$ppa" train --model mb --data lists.jsonl --template none --batch-size 8 --lr 0.01 --max-steps 1 --warmup-ratio 0 --out "o 6" > /dev/null 2> e6; st=$?
mv "o 6" o6
expect "train on a base with a card (exit $st: $(tail -1 e6))" test $st -eq 0
/usr/bin/python3 -c 'import sys, yaml; t = open(sys.argv[1]).read(); fm = yaml.safe_load(t[4:t.index("\n---\n", 4)]); assert fm["license"] == "apache-2.0" and fm["base_model"] == "mb", fm' o6/README.md 2> e7
expect "the base's license is kept ($(tail -1 e7))" test ! -s e7
expect "the base's card is not copied over (nor kept under another name)" sh -c "! grep -rq 'BASE CARD TEXT' o6"
expect "the base's card is left as it was" has mb/README.md "BASE CARD TEXT"
expect "an argument with a space is quoted" has o6/README.md "--warmup-ratio 0 --out 'o 6'"
# a recipe's report_to list
printf 'model_name_or_path: m\ntrain_file: lists.jsonl\noutput_dir: o7\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 1\nmax_steps: 1\nwarmup_ratio: 0\ntemplate: none\nreport_to:\n- tensorboard\n' > recipe.yaml
"$ppa" train --config recipe.yaml > /dev/null 2> e8; st=$?
expect "a recipe's report_to: [tensorboard] writes the events file (exit $st: $(tail -1 e8))" sh -c "test $st -eq 0 && test -s o7/$EV"
report
