#!/usr/bin/env bash
# What the training log carries beyond the loss (docs/training.md "The log"): the mean summed log-probs of the best-
# and worst-labelled responses (policy and reference) and their margin, checked against `ppa logprobs` on the same
# rows computed independently in Python; the same values whatever the micro-batch; and the run's summary: the log's
# last line equals OUT/summary.json, its counts equal the sums of the step lines, its final and best held-out
# numbers the eval lines', one summary after a resume; reward and sft summaries.
# Usage: tests/test_train_log.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_train_log
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
letter_lists | head -8 > lists.jsonl # 8 lists of 5 responses
letter_lists | tail -6 > held.jsonl
py() { /usr/bin/python3 - "$@"; }
# step 1 of a warm-up starts at lr 0 and is logged before its update: policy = reference, every list of the step
common=(--model m --data lists.jsonl --template none --beta 0.5 --list-size 5 --batch-size 8 --seed 3)
"$ppa" train "${common[@]}" --micro-batch 2 --max-steps 2 --lr 0.01 --out a > /dev/null 2> err
expect "a two-step run ($(tail -1 err))" test -s a/train_log.jsonl
"$ppa" logprobs --model m --template none --data lists.jsonl > lp.jsonl 2> err
expect "ppa logprobs on the same rows ($(tail -1 err))" test -s lp.jsonl
py lists.jsonl lp.jsonl a/train_log.jsonl > check 2>&1 <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
lps = [json.loads(l)["logps"] for l in open(sys.argv[2])]
step = json.loads(open(sys.argv[3]).readline())
best, worst = [], []
for r, lp in zip(rows, lps):
    s = r["scores"]
    if max(s) == min(s):
        continue  # no best or worst: left out of the means
    best.append(lp[s.index(max(s))]); worst.append(lp[s.index(min(s))])  # the first of the highest / lowest label
want = {"logps_best": sum(best) / len(best), "logps_worst": sum(worst) / len(worst),
        "logps_margin": (sum(best) - sum(worst)) / len(best)}
want["ref_logps_best"], want["ref_logps_worst"] = want["logps_best"], want["logps_worst"]
want["rewards_best"] = want["rewards_worst"] = 0.0
bad = [k for k, v in want.items() if k not in step or abs(step[k] - v) > 1e-6 * max(1.0, abs(v))]
print("ok" if not bad else "differ: " + ", ".join(f"{k} log {step.get(k)} want {want[k]}" for k in bad))
PY
expect "step 1's best/worst log-probs are the means Python computes from ppa logprobs ($(cat check))" grep -qx ok check
# the same lists in micro-batches of 1 and of 4: the same values (sums over the step's lists)
"$ppa" train "${common[@]}" --micro-batch 1 --max-steps 3 --lr 0.01 --out b1 > /dev/null 2> err
"$ppa" train "${common[@]}" --micro-batch 4 --max-steps 3 --lr 0.01 --out b4 > /dev/null 2> err
py b1/train_log.jsonl b4/train_log.jsonl > check 2>&1 <<'PY'
import json, sys
keys = ["logps_best", "logps_worst", "logps_margin", "ref_logps_best", "ref_logps_worst", "rewards_best", "rewards_worst"]
a = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"step"')]
b = [json.loads(l) for l in open(sys.argv[2]) if l.startswith('{"step"')]
bad = [(i, k) for i in range(len(a)) for k in keys if abs(a[i][k] - b[i][k]) > 1e-6 * max(1.0, abs(a[i][k]))]
print("ok" if len(a) == 3 == len(b) and not bad else f"differ: {bad[:3]}")
PY
expect "micro-batch 1 and 4 log the same best/worst values ($(cat check))" grep -qx ok check
# the summary: the log's last line, summary.json, the step and eval lines' sums and values
"$ppa" train "${common[@]}" --list-size 4 --batch-size 4 --micro-batch 2 --max-steps 4 --lr 0.01 --eval-data held.jsonl \
  --eval-every 2 --save-every 2 --out s > /dev/null 2> err; st=$?
expect "a run with held-out lists (exit $st)" test $st -eq 0
expect "stderr has the summary line" grep -q '^ppa train: summary: 4 steps, [0-9]* lists, [0-9]* tokens; this run .*; eval ndcg' err
check_summary() { # check_summary RUN STEPS_THIS_RUN
  py "$1/train_log.jsonl" "$1/summary.json" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
summ = json.load(open(sys.argv[2]))
steps = [l for l in lines if "step" in l and "eval" not in l]
evals = [l for l in lines if "eval" in l]
errs = []
if list(lines[-1]) != ["summary"] or lines[-1]["summary"] != summ: errs.append("the last line is not summary.json's object")
if sum("summary" in l for l in lines) != 1: errs.append("not exactly one summary line")
if summ["steps"] != steps[-1]["step"] or summ["steps"] != len(steps): errs.append("steps")
if summ["lists"] != sum(l["lists"] for l in steps): errs.append("lists")
if summ["tokens"] != sum(l["tokens"] for l in steps): errs.append("tokens")
if summ["train_loss"] != steps[-1]["loss"]: errs.append("train_loss")
if summ["steps_this_run"] != int(sys.argv[3]): errs.append("steps_this_run %s" % summ["steps_this_run"])
nums = lambda e: {k: v for k, v in e["eval"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
fe = dict(summ["final_eval"]); fs = fe.pop("step")
if fs != evals[-1]["step"] or fe != nums(evals[-1]): errs.append("final_eval")
best = max(evals, key=lambda e: e["eval"]["ndcg"])  # the first of the highest
be = dict(summ["best_eval"]); bs = be.pop("step")
if bs != best["step"] or be != nums(best): errs.append("best_eval")
for k in ("runtime_s", "lists_per_s", "tokens_per_s"):
    if not (isinstance(summ.get(k), (int, float)) and summ[k] >= 0): errs.append(k)
print("ok" if not errs else "; ".join(errs))
PY
}
out=$(check_summary s 4); expect "summary checks ($out)" test "$out" = ok
# a resume from step 2: one summary, over all four steps, two of them this run's
cp -r s r && rm -f r/model.safetensors r/summary.json
"$ppa" train "${common[@]}" --list-size 4 --batch-size 4 --micro-batch 2 --max-steps 4 --lr 0.01 --eval-data held.jsonl \
  --eval-every 2 --save-every 2 --out r --resume r/checkpoint-2 > /dev/null 2> err; st=$?
expect "the resumed run (exit $st: $(tail -1 err))" test $st -eq 0
out=$(check_summary r 2); expect "after a resume: one summary line, every step counted, 2 of this run ($out)" test "$out" = ok
expect "... the same log as the straight run, the summary's timings aside" cmp -s <(grep -v '^{"summary"' s/train_log.jsonl | sed -E 's/, "tokens_per_s".*//') <(grep -v '^{"summary"' r/train_log.jsonl | sed -E 's/, "tokens_per_s".*//')
# a reward model: the best and worst scores, no log-probs
"$ppa" reward --model m --data lists.jsonl --template none --list-size 5 --batch-size 8 --max-steps 2 --out rm > /dev/null 2> err
expect "reward: the best/worst scores in the log ($(tail -1 err))" sh -c 'grep -q "\"rewards_best\": " rm/train_log.jsonl && ! grep -q "logps_best" rm/train_log.jsonl'
expect "reward: a summary.json" test -s rm/summary.json
# sft: rows, not lists
printf '%s\n' '{"text": "abc abd"}' '{"text": "bca cab"}' > text.jsonl
"$ppa" sft --model m --data text.jsonl --batch-size 2 --lr 0.01 --out sft > sft.log 2> err
expect "sft: the summary is standard output's last line and summary.json" sh -c "tail -1 sft.log | grep -q '^{\"summary\": {\"steps\":1,\"rows\":2,' && test -s sft/summary.json"
report
