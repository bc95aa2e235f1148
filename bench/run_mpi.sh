#!/usr/bin/env bash
# Data parallelism on one machine: `ppa train` as 1 rank x 1 thread, 2 ranks x 1 thread (mpirun -np 2) and
# 1 rank x 2 threads, the same lists and options, one run at a time; the throughput of each (lists/s from the
# training log's elapsed_s, every optimizer step after the first), the share of a step spent in the all-reduce and
# the bytes it moves (the log's comm_s and comm_bytes; the time a rank waits for the other before each collective,
# wait_s, is counted apart: it measures imbalance, not the transfer), and with --zero 1 the AdamW state per rank against one
# process's. Pre-tokenized random lists (K responses of R tokens to a P-token prompt) on a random model folder; the
# reference cache is computed first by `ppa score` (not timed).
#
# Usage: bench/run_mpi.sh [PPA_BINARY]
#   env CONFIG=llama_50m, K=8, P=256, R=256, LISTS_PER_STEP=16, STEPS=3 (optimizer steps; the first is not timed),
#       OUT=<file for the JSON lines>
set -euo pipefail
ppa=$(realpath "${1:-./ppa}")
cfg=${CONFIG:-llama_50m}
k=${K:-8} p=${P:-256} r=${R:-256} per=${LISTS_PER_STEP:-16} steps=${STEPS:-3}
cd "$(dirname "$0")/.."
. bench/lib.sh
command -v mpirun > /dev/null || { echo "bench: mpirun missing (openmpi-bin)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OPENBLAS_CORETYPE # ppa picks its own kernels
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lists=$((per * steps))
vocab=$(sed -nE 's/.*"vocab_size": *([0-9]+).*/\1/p' "bench/configs/$cfg.json")
echo "mpi benchmark: ppa train, $cfg, K=$k P=$p R=$r, $per lists per optimizer step, $steps steps," \
  "$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(mpirun --version | head -1)"
"$ppa" init --config "bench/configs/$cfg.json" --out "$tmp/model" --seed 1 > /dev/null
random_lists "$lists" "$k" "$p" "$r" "$vocab" > "$tmp/data.jsonl"
"$ppa" score --model "$tmp/model" --data "$tmp/data.jsonl" --out "$tmp/ref.cache" 2> /dev/null
common=(--model "$tmp/model" --data "$tmp/data.jsonl" --ref-cache "$tmp/ref.cache" --list-size "$k" --batch-size "$per"
        --micro-batch 1 --max-steps "$steps" --lr 1e-6)
: > "$tmp/all.jsonl"
# run NAME RANKS THREADS [extra options]
run() {
  local name=$1 ranks=$2 threads=$3
  shift 3
  echo "  $name ..." >&2
  rm -rf "$tmp/out"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=(mpirun -np "$ranks" --bind-to core)
  /usr/bin/time -f '%M' -o "$tmp/rss" "${launch[@]}" "$ppa" train "${common[@]}" --threads "$threads" --out "$tmp/out" "$@" \
    2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  /usr/bin/python3 - "$name" "$ranks" "$threads" "$tmp/out/train_log.jsonl" "$tmp/rss" "$tmp/err" >> "$tmp/all.jsonl" <<'PY'
import json, re, sys
name, ranks, threads, log_f, rss_f, err_f = sys.argv[1:]
log = [x for x in map(json.loads, open(log_f)) if "step" in x]  # the step lines, not the summary
timed = log[1:]
sec = log[-1]["elapsed_s"] - log[0]["elapsed_s"]
n = sum(x["lists"] for x in timed)
comm = sum(x.get("comm_s", 0) for x in timed)
wait = sum(x.get("wait_s", 0) for x in timed)
m = re.search(r"AdamW state ([0-9.]+) MB per rank", open(err_f).read())
print(json.dumps({"name": name, "ranks": int(ranks), "threads": int(threads), "lists_per_s": n / sec,
                  "s_per_step": sec / len(timed), "comm_share": comm / sec, "wait_share": wait / sec,
                  "comm_bytes_per_step": sum(x.get("comm_bytes", 0) for x in timed) / len(timed),
                  "adamw_mb_per_rank": float(m.group(1)) if m else None, "peak_rss_mb": int(open(rss_f).read()) / 1024}))
PY
}
run "1 rank x 1 thread" 1 1
run "2 ranks x 1 thread" 2 1
run "2 ranks x 1 thread, --zero 1" 2 1 --zero 1
run "1 rank x 2 threads" 1 2
[ -n "${OUT:-}" ] && cp "$tmp/all.jsonl" "$OUT"
/usr/bin/python3 - "$tmp/all.jsonl" "$cfg" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = rows[0]["lists_per_s"]
print(f"{'run':<32}{'lists/s':>9}{'vs 1x1':>8}{'s/step':>9}{'all-reduce share':>18}{'wait share':>12}{'MB moved/step':>15}{'AdamW MB/rank':>15}{'peak MB':>9}")
for x in rows:
    mb = x["comm_bytes_per_step"] / 1e6
    ad = f"{x['adamw_mb_per_rank']:.0f}" if x["adamw_mb_per_rank"] is not None else "-"
    print(f"{x['name']:<32}{x['lists_per_s']:>9.3f}{x['lists_per_s'] / base:>7.2f}x{x['s_per_step']:>9.2f}"
          f"{100 * x['comm_share']:>17.1f}%{100 * x.get('wait_share', 0):>11.1f}%{mb:>15.1f}{ad:>15}{x['peak_rss_mb']:>9.0f}")
two, one2 = rows[1]["lists_per_s"], rows[3]["lists_per_s"]
print(f"2 ranks x 1 thread: {two / base:.2f}x 1 rank x 1 thread, {two / one2:.2f}x 1 rank x 2 threads")
PY
