#!/usr/bin/env bash
# Labelling throughput of `ppa judge --reward-model`: lists of K responses scored with the prompt computed once per
# list ("shared") against the same responses scored as separate prompt + response sequences ("separate": each
# response its own row), on random reward-model folders (`ppa init`) and pre-tokenized rows of random ids, K = 8,
# P = R = 256. tokens/s counts K (P + R) tokens per list in both modes (the work a user asks for), so the ratio is the
# speed-up of sharing the prompt; the time is the scoring's, as `ppa judge` reports it (the model load, the same in
# both modes, is left out; the wall time of the whole command is shown too). Peak memory from /usr/bin/time. One
# process at a time (2 cores).
#
# Usage: bench/run_reward.sh [PPA_BINARY]
#   env CONFIGS="qwen2_0_5b_rm" (add llama3_8b_rm for the Llama-3-8B shapes: its bf16 folder is 16 GB and takes about
#       8 minutes to write), LISTS=4 (lists per run; LISTS_8B=1 for llama3_8b_rm), PRECISIONS="fp32 bf16" (the 8B
#       model runs in bf16 only: 32 GB of float32 weights do not fit), THREADS=2, OUT=<file for the JSON lines>,
#       WORK=<folder for the model folders, kept between runs; default a temporary one>
set -euo pipefail
ppa=$(realpath "${1:-./ppa}")
configs=${CONFIGS:-qwen2_0_5b_rm}
lists=${LISTS:-4}
threads=${THREADS:-2}
K=8 P=256 R=256
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
work=${WORK:-$tmp}
out=${OUT:-/dev/null}
# ppa picks its own OpenBLAS kernels; a workplace OPENBLAS_CORETYPE would slow the float32 side only
unset OPENBLAS_CORETYPE

# rows N K SHARED: N lists of K responses of random ids below 30000, seeded; SHARED=0 writes each response as its
# own row (the same prompt and response ids)
rows() {
  /usr/bin/python3 - "$@" <<'P'
import json, random, sys
n, k, p, r, shared = map(int, sys.argv[1:6])
rng = random.Random(7)
for i in range(n):
    prompt = [rng.randrange(30000) for _ in range(p)]
    resp = [[rng.randrange(30000) for _ in range(r)] for _ in range(k)]
    if shared:
        print(json.dumps({"prompt_ids": prompt, "response_ids": resp}))
    else:
        for y in resp:
            print(json.dumps({"prompt_ids": prompt, "response_ids": [y]}))
P
}

printf '%-14s %-5s %-9s %6s %10s %10s %9s %8s\n' config prec mode lists "scoring s" "wall s" "tokens/s" "peak MB"
for cfg in $configs; do
  n=$lists
  [ "$cfg" = llama3_8b_rm ] && n=${LISTS_8B:-1}
  dir=$work/$cfg
  if [ ! -f "$dir/config.json" ]; then
    "$ppa" init --config "bench/configs/$cfg.json" --out "$dir" --save-dtype bf16 --seed 1 > /dev/null
  fi
  rows "$n" $K $P $R 1 > "$tmp/shared.jsonl"
  rows "$n" $K $P $R 0 > "$tmp/separate.jsonl"
  precs=${PRECISIONS:-fp32 bf16}
  [ "$cfg" = llama3_8b_rm ] && precs=bf16
  for prec in $precs; do
    declare -A secs=()
    for mode in shared separate; do
      /usr/bin/time -f '%e %M' -o "$tmp/time" "$ppa" judge --reward-model "$dir" --data "$tmp/$mode.jsonl" \
        --precision "$prec" --threads "$threads" --out "$tmp/$mode.out" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
      read -r wall kb < "$tmp/time"
      s=$(sed -n 's/.* in \([0-9.]*\) s, .*/\1/p' "$tmp/err")
      [ -n "$s" ] || { echo "bench: no scoring time in ppa judge's summary:" >&2; cat "$tmp/err" >&2; exit 1; }
      secs[$mode]=$s
      tok=$((n * K * (P + R)))
      tps=$(awk -v t="$tok" -v s="$s" 'BEGIN { printf "%.1f", t / s }')
      printf '%-14s %-5s %-9s %6d %10.2f %10.2f %9s %8d\n' "$cfg" "$prec" "$mode" "$n" "$s" "$wall" "$tps" $((kb / 1024))
      printf '{"config": "%s", "precision": "%s", "mode": "%s", "lists": %d, "k": %d, "prompt_len": %d, "response_len": %d, "scoring_seconds": %s, "wall_seconds": %s, "tokens_per_s": %s, "peak_rss_mb": %d, "threads": %d}\n' \
        "$cfg" "$prec" "$mode" "$n" $K $P $R "$s" "$wall" "$tps" $((kb / 1024)) "$threads" >> "$out"
    done
    # the two runs must give the same scores (to float32 rounding: the batches differ)
    /usr/bin/python3 - "$tmp/shared.out" "$tmp/separate.out" <<'P'
import json, sys
a = [s for l in open(sys.argv[1]) for s in json.loads(l)["scores"]]
b = [s for l in open(sys.argv[2]) for s in json.loads(l)["scores"]]
d = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b))
assert len(a) == len(b), "different numbers of scores"
print("  shared and separate scores agree within %.1e (relative)" % d)
P
    awk -v a="${secs[separate]}" -v b="${secs[shared]}" -v c="$cfg" -v p="$prec" \
      'BEGIN { printf "  %s %s: shared prompt %.2fx the separate sequences\n", c, p, a / b }'
  done
done
