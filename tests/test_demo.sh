#!/usr/bin/env bash
# test_demo.sh: the demo's pipeline (scripts/demo.sh --tiny: two seeds, PPA and DPO all pairs, every stage at its
# smallest size) runs end to end, gives the same bytes with one job and with two at once, writes the table, the
# paired differences and valid JSON, has dense labels, and stops with the failing job's name when a job fails; the
# ablations (--ablations) and Figure 2 run at the same size, and flips.js counts a hand-worked list.
# Usage: tests/test_demo.sh ./ppa   (needs cache/ from make fixtures, and node)
set -uo pipefail
export PPA; PPA=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # the binary the demo runs
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d /tmp/ppa_demo_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
expect() { # expect WHAT COMMAND...
  if "${@:2}"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL test_demo: $1"; fi
}
bash "$root/scripts/demo.sh" --tiny --jobs 1 --out "$tmp/a" > "$tmp/a.out" 2> "$tmp/a.err"
expect "the tiny demo runs with one job" test $? -eq 0 || tail -5 "$tmp/a.err"
# the second run takes the README's path: `make demo-quick` through the Makefile (its dependencies, fixtures and
# build steps, then scripts/demo.sh with no --out: its own default folder), at the smallest size (DEMO_ARGS adds
# --tiny), in a copy of the repository (the files git would commit, mtimes kept, with this build and cache/) so the
# checkout's demo-out/ is left alone
copy="$tmp/repo"
mkdir -p "$copy"
(cd "$root" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp -p --parents -t "$copy") &&
  cp -a "$root/build" "$root/ppa" "$copy/" && ln -s "$root/cache" "$copy/cache"
expect "a copy of the repository for make demo-quick" test $? -eq 0
env -u PPA -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -C "$copy" --no-print-directory demo-quick DEMO_ARGS="--tiny --jobs 2" \
  > "$tmp/b.out" 2> "$tmp/b.err"
expect "make demo-quick DEMO_ARGS='--tiny --jobs 2' runs through the Makefile" test $? -eq 0 || tail -5 "$tmp/b.err"
expect "it wrote demo.sh's default folder demo-out/tiny" test -s "$copy/demo-out/tiny/results.csv"
ln -s "$copy/demo-out/tiny" "$tmp/b"
expect "the align stage's line counts its runs to the last" grep -q '\] align: 4/4 runs done, 0 running; ETA 0:00:00' "$tmp/b.err"
expect "no stage line says ETA 0:00:00 while runs remain" sh -c "! grep -hE '\] [a-z]+: [0-9]+/[0-9]+ runs done' \
  '$tmp/a.err' '$tmp/b.err' | grep -vE ' ([0-9]+)/\1 runs done' | grep -q 'ETA 0:00:00'"
for f in results.csv per_prompt.txt train_s42.jsonl train_s43.jsonl test_s43.jsonl eval_text_ppa_s43.jsonl; do
  expect "$f: the same bytes with one job and with two (make demo-quick)" cmp -s "$tmp/a/$f" "$tmp/b/$f"
done
expect "results.csv: a header, two SFT rows, two methods x two seeds" test "$(wc -l < "$tmp/a/results.csv")" -eq 7
expect "the table has PPA's row" grep -q "^PPA (NeuralNDCG)" "$tmp/a/table.txt"
expect "the paired difference of DPO all pairs from PPA, by both held-out judges" \
  grep -Eq '^DPO all pairs +[-+][0-9.]+ \[ *[-+][0-9.]+, *[-+][0-9.]+\] .* [-+][0-9.]+ \[' "$tmp/a/table.txt"
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  if (r.rows.length !== 6 || r.paired_difference_from_ppa.length !== 2 || !/products/.test(r.kernels)) process.exit(1);' \
  "$tmp/a/results.json"
expect "results.json: 6 rows, 2 paired differences, the kernels" test $? -eq 0
tied=$(grep -o 'labels: [0-9.]*% of pairs tied' "$tmp/a/table.txt" | grep -o '[0-9.]*%' | tr -d %)
expect "dense labels: under 10% of a list's pairs tied (got ${tied:-none}%)" awk -v t="${tied:-100}" 'BEGIN { exit !(t < 10) }'
# --gpu at the tiny size on the CPU stand-in of the CUDA module (make builds it; without it the demo stops, a
# failure here): the SFT models (head size 64) train,
# sample and score on the "GPU", the judges stay on the CPU, the prompts of a review all on one side
mock="$root/build/cuda-mock/libppa_cuda_mock.so"
{
  PPA_CUDA_LIB="$mock" bash "$root/scripts/demo.sh" --tiny --gpu --jobs 2 --out "$tmp/g" > "$tmp/g.out" 2> "$tmp/g.err"
  expect "the tiny --gpu demo runs on the stand-in" test $? -eq 0 || tail -5 "$tmp/g.err"
  expect "--gpu says where the SFT models run" grep -q 'device: the SFT models train, sample and score on CPU mock' "$tmp/g.err"
  expect "--gpu: the SFT models, their lists and alignments on the GPU path, the judges on the CPU" \
    sh -c "grep -q 'device: cuda' '$tmp/g/logs/sft_s42.log' && grep -q 'device: cuda' '$tmp/g/logs/align_ppa_s42.log' &&
      grep -q 'device: cuda' '$tmp/g/logs/lists_s42.log' && ! grep -q 'device: cuda' '$tmp/g/logs/rm_label.log'"
  node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    if (r.rows.length !== 6 || r.precision !== "bf16 products, float32 weights" || !/on the GPU/.test(r.kernels)) process.exit(1);' \
    "$tmp/g/results.json"
  expect "--gpu: results.json names bf16 products on the GPU" test $? -eq 0
  review() { grep -o '"prompt_id": "r[0-9]*_' "$1" | grep -o '[0-9]*' | sort -u; }
  both=$(comm -12 <(review "$tmp/g/prompts_test.jsonl") <(review "$tmp/g/prompts_train.jsonl"))
  expect "--gpu: 16 training and 12 held-out prompts, no review on both sides" \
    test "$(wc -l < "$tmp/g/prompts_train.jsonl")" -eq 16 -a "$(wc -l < "$tmp/g/prompts_test.jsonl")" -eq 12 -a -z "$both"
}
# the ablations (PPA without Sinkhorn, PPA on lists of 2) and Figure 2 at the same size
bash "$root/scripts/demo.sh" --tiny --ablations --jobs 2 --out "$tmp/d" > "$tmp/d.out" 2> "$tmp/d.err"
expect "the tiny ablations run" test $? -eq 0 || tail -5 "$tmp/d.err"
expect "ablations: results.csv has two SFT rows and three settings x two seeds" test "$(wc -l < "$tmp/d/results.csv")" -eq 9
expect "the ablations' PPA equals the methods' PPA (the held-out evaluations do not change training)" \
  test "$(grep '^ppa,' "$tmp/a/results.csv")" = "$(grep '^ppa,' "$tmp/d/results.csv")"
expect "ablations.txt: the Sinkhorn and list-size rows beside the paper's" \
  grep -Eq '^w/o Sinkhorn \(w/o Scale\) .* 57\.32 / 56\.20 +-5\.16$' "$tmp/d/ablations.txt"
expect "lists of 2: each the best and the worst of its row" node -e 'const fs = require("fs");
  const a = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const b = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse);
  process.exit(a.length === b.length && b.every((r, i) => r.overall_scores.length === 2 &&
    Math.max(...r.overall_scores) === Math.max(...a[i].overall_scores) &&
    Math.min(...r.overall_scores) === Math.min(...a[i].overall_scores)) ? 0 : 1);' "$tmp/d/train_s42.jsonl" "$tmp/d/train_n2_s42.jsonl"
expect "the list-size run trained on lists of 2" grep -q "list size 2" "$tmp/d/logs/align_list2_s43.log"
node -e 'const f = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const ok = ["ppa", "dpo_all_pairs", "lipo"].every((m) => f.curve[m].length >= 2 && f.curve[m][0].step === 0);
  process.exit(ok && f.by_reference_gap.length === 12 ? 0 : 1);' "$tmp/d/flips.json"
expect "flips.json: the flip curve of PPA, DPO all pairs and LiPO, and the histogram" test $? -eq 0
# flips.js on a list worked by hand: labels .9 .5 .1 (.9 again: a duplicate, counted once), reference log-probs
# -5 -3 -4, policy -2 -3 -4: pairs (1,2) X = -2 and (1,3) X = -1 are wrong under the reference and flipped; (2,3)
# X = 1 stays right
printf '{"all_responses": ["a", "b", "c", "a"], "overall_scores": [0.9, 0.5, 0.1, 0.9]}\n' > "$tmp/l.jsonl"
printf '{"logps": [-5, -3, -4, -5]}\n' > "$tmp/r.jsonl"
printf '{"logps": [-2, -3, -4, -2]}\n' > "$tmp/p.jsonl"
node "$root/scripts/demo/flips.js" "$tmp/l.jsonl" "$tmp/r.jsonl" "$tmp/p.jsonl" > "$tmp/f.txt"
expect "flips.js: the hand-worked list" test "$(grep -v ' 0 0 0 0$' "$tmp/f.txt" | tr '\n' ';')" = \
  "-2 -1 1 1 0 0;-1 0 1 1 0 0;1 2 0 0 1 0;total 2;"
bash "$root/scripts/demo.sh" --tiny --seeds 42 --methods "ppa no_such_objective" --out "$tmp/c" > /dev/null 2> "$tmp/c.err"
expect "a failing job stops the demo" test $? -ne 0
expect "and names the job" grep -q "job align_no_such_objective_s42 failed" "$tmp/c.err"
echo "test_demo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
