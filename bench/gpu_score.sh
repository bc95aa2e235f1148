#!/usr/bin/env bash
# The GPU scoring benchmark (issue 32): `ppa score --device cuda` beside Hugging Face transformers + PyTorch on the
# same lists, in the same run, on the Qwen2-0.5B and Llama-3.1-8B shapes (random bf16 weights, K = 8 responses of
# R = 256 tokens after a P = 256 prompt). For each shape: bench/gpu_score_hf.py writes the model folder and the
# lists (pre-tokenized rows), times transformers (bf16, sdpa, response-only logits, no gradient, BATCH lists a
# forward), then ppa scores the same rows (its own timing line: the forward alone, model load excluded, as the
# transformers side excludes it), and the two log-probs are compared. One JSON line per side and a ratio line.
# Runs on the GPU machine with a ppa built here: make gpu-carry carries it (gpu-carry/ppa, the module beside it).
# Usage: bench/gpu_score.sh [PPA] [shape ...]   (default: ./ppa; qwen2_0.5b llama3.1_8b)
# Environment: LISTS_qwen2_0.5b (64), LISTS_llama3.1_8b (16), BATCH (8 lists a transformers forward), WORK (a
# scratch folder, default /tmp/ppa-gpu-score), OUT (results also written there).
set -u
ppa=$(realpath "${1:-./ppa}")
shift || true
# a carried build (make gpu-carry: gpu-carry/ppa, its module beside it, the libraries it may lack in lib/)
[ -d "$(dirname "$ppa")/lib" ] && export LD_LIBRARY_PATH="$(dirname "$ppa")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(qwen2_0.5b llama3.1_8b)
work=${WORK:-/tmp/ppa-gpu-score}
batch=${BATCH:-8}
here=$(cd "$(dirname "$0")" && pwd)
py=$(command -v python3)
mkdir -p "$work"
log() { echo "$@"; [ -n "${OUT:-}" ] && mkdir -p "$OUT" && echo "$@" >> "$OUT/gpu-score.jsonl"; }
for s in "${shapes[@]}"; do
  var="LISTS_${s//./_}"
  n=${!var:-}
  [ -z "$n" ] && { [ "$s" = llama3.1_8b ] && n=16 || n=64; }
  dir=$work/$s rows=$work/$s.jsonl
  echo "== $s: $n lists of K 8, P = R = 256"
  if [ ! -f "$dir/config.json" ] || [ ! -f "$rows" ]; then
    "$py" "$here/gpu_score_hf.py" make "$s" "$dir" "$rows" "$n" || { echo "gpu_score: $s: no model folder"; continue; }
  fi
  hf=$("$py" "$here/gpu_score_hf.py" time "$s" "$dir" "$rows" "$batch" | tail -n 1)
  log "$hf"
  rm -f "$work/$s.cache"
  err=$("$ppa" score --model "$dir" --data "$rows" --out "$work/$s.cache" --device cuda 2>&1 >/dev/null)
  status=$?
  echo "$err" | grep -E "device:|computed in|error|ppa:" | head -n 5
  line=$(echo "$err" | grep -E "reference log-probs of [0-9]+ rows computed in" | tail -n 1)
  if [ $status -ne 0 ] || [ -z "$line" ]; then
    log "{\"side\": \"ppa\", \"shape\": \"$s\", \"error\": \"exit $status\"}"
    continue
  fi
  sec=$(echo "$line" | sed -E 's/.* computed in ([0-9.]+) s.*/\1/')
  gib=$(echo "$line" | sed -nE 's/.* ([0-9.]+) GiB held.*/\1/p')
  tps=$(echo "$line" | sed -E 's/.*\(([0-9]+) tokens\/s.*/\1/')
  log "{\"side\": \"ppa\", \"shape\": \"$s\", \"lists\": $n, \"s_per_list\": $(awk -v t="$sec" -v n="$n" 'BEGIN { printf "%.5f", t / n }'), \"tokens_per_s_computed\": $tps, \"gpu_gib_held\": ${gib:-null}}"
  hf_spl=$(echo "$hf" | sed -nE 's/.*"s_per_list": ([0-9.e-]+).*/\1/p')
  [ -n "$hf_spl" ] && log "{\"shape\": \"$s\", \"ratio_hf_over_ppa\": $(awk -v a="$hf_spl" -v t="$sec" -v n="$n" 'BEGIN { printf "%.3f", a / (t / n) }')}"
  # the two sides' log-probs: bf16 both, so they agree to bf16 rounding, not bit for bit
  "$ppa" logprobs --model "$dir" --data "$rows" --device cuda > "$work/$s.ppa.jsonl" 2> /dev/null &&
    "$py" - "$work/$s.ppa.jsonl" "$rows.hf_logps.pt" <<'EOF'
import json, sys, torch
ppa = [v for l in open(sys.argv[1]) for v in json.loads(l)["logps"]]
hf = torch.load(sys.argv[2]).tolist()
d = sorted(abs(a - b) for a, b in zip(ppa, hf))
print(f"log-probs, ppa against transformers (both bf16): {len(d)} responses, median |diff| {d[len(d) // 2]:.3g} nats, "
      f"max {d[-1]:.3g}, of magnitudes about {sum(abs(b) for b in hf) / len(hf):.0f}")
EOF
done
