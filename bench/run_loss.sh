#!/usr/bin/env bash
# ppa bench loss against batched float32 PyTorch, in the same run, same data
# distribution and thread count; prints one row per objective with the ratio.
# Usage: bench/run_loss.sh [PPA_BINARY]   (env LISTS, SIZE, THREADS, REPEAT)
set -euo pipefail
ppa=${1:-./ppa}
lists=${LISTS:-10000}
size=${SIZE:-8}
threads=${THREADS:-2}
repeat=${REPEAT:-5}
py=/usr/bin/python3
cd "$(dirname "$0")/.."
if ! $py -c "import torch" 2>/dev/null; then
  echo "bench: python3-torch is missing: PPA_WITH_TORCH=1 bash scripts/install-deps.sh" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--lists "$lists" --size "$size" --threads "$threads" --repeat "$repeat" --json)
"$ppa" bench loss "${common[@]}" > "$tmp/ppa.json"
"$ppa" bench loss "${common[@]}" --objective neural_ndcg --sinkhorn-tol 0 > "$tmp/ppa50.json"
$py bench/bench_loss_torch.py "${common[@]}" --objective all > "$tmp/torch.json"
$py bench/bench_loss_torch.py "${common[@]}" --objective neural_ndcg --sinkhorn-tol 0 > "$tmp/torch50.json"
echo "loss benchmark: $lists lists of $size, $threads threads, median of $repeat, $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
$py - "$tmp" <<'PY'
import json, sys, os
d = sys.argv[1]
def load(name):
    return {r["objective"]: r for r in map(json.loads, open(os.path.join(d, name)))}
rows = [(load("ppa.json"), load("torch.json"), ""), (load("ppa50.json"), load("torch50.json"), " (50 iter)")]
print(f"{'objective':<24}{'ppa ms':>10}{'torch ms':>12}{'speed-up':>10}")
for p, t, tag in rows:
    for name, r in p.items():
        if name in t:
            print(f"{name + tag:<24}{r['ms']:>10.2f}{t[name]['ms']:>12.2f}{t[name]['ms'] / r['ms']:>9.1f}x")
PY
