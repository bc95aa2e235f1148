#!/usr/bin/env bash
# test_demo.sh: the demo's pipeline (scripts/demo.sh --tiny: two seeds, PPA and DPO all pairs, every stage at its
# smallest size) runs end to end, gives the same bytes with one job and with two at once, writes the table, the
# paired differences and valid JSON, has dense labels, and stops with the failing job's name when a job fails.
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
bash "$root/scripts/demo.sh" --tiny --jobs 2 --out "$tmp/b" > "$tmp/b.out" 2> "$tmp/b.err"
expect "the tiny demo runs with two jobs at once" test $? -eq 0 || tail -5 "$tmp/b.err"
for f in results.csv per_prompt.txt train_s42.jsonl train_s43.jsonl test_s43.jsonl eval_text_ppa_s43.jsonl; do
  expect "$f: the same bytes with one job and with two" cmp -s "$tmp/a/$f" "$tmp/b/$f"
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
bash "$root/scripts/demo.sh" --tiny --seeds 42 --methods "ppa no_such_objective" --out "$tmp/c" > /dev/null 2> "$tmp/c.err"
expect "a failing job stops the demo" test $? -ne 0
expect "and names the job" grep -q "job align_no_such_objective_s42 failed" "$tmp/c.err"
echo "test_demo: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
