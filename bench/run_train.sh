#!/usr/bin/env bash
# `ppa train` against the engine alone (`ppa bench step`, shared-prompt mode) on the same shapes: what data
# handling, the loss, the log and the optimizer cost on top of forward + backward (issue target: train keeps
# >= 90% of the engine's throughput), and the peak memory of a training step with the reference cached.
#
# Pre-tokenized lists of K responses of R tokens to a prompt of P tokens (random ids, random labels), a model
# folder with random weights from a bench config; the reference cache is computed first by `ppa score` (not
# timed). Time per list: ppa train's fastest optimizer step after the first (from its own log, elapsed_s) over
# its lists, and bench step's median step; both are run REPEAT times, alternating, and the best of each is kept
# (on a shared machine other work only ever slows a run down).
#
# Usage: bench/run_train.sh [PPA_BINARY]
#   env CONFIGS="llama_50m qwen2_0_5b", K=8, P=256, R=256, THREADS=2, REPEAT=2,
#       STEPS_llama_50m=4 ACCUM_llama_50m=2 STEPS_qwen2_0_5b=2 ACCUM_qwen2_0_5b=1 (optimizer steps of ACCUM lists),
#       OUT=<file for the JSON lines>
set -euo pipefail
ppa=$(realpath "${1:-./ppa}")
configs=${CONFIGS:-llama_50m qwen2_0_5b}
k=${K:-8} p=${P:-256} r=${R:-256} threads=${THREADS:-2} repeat=${REPEAT:-2}
cd "$(dirname "$0")/.."
. bench/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "train benchmark: ppa train vs ppa bench step (shared prompt), K=$k P=$p R=$r, $threads threads," \
  "$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
for cfg in $configs; do
  sv=STEPS_$cfg av=ACCUM_$cfg
  steps=${!sv:-$([ "$cfg" = qwen2_0_5b ] && echo 2 || echo 4)}
  accum=${!av:-$([ "$cfg" = qwen2_0_5b ] && echo 1 || echo 2)}
  lists=$((steps * accum))
  vocab=$(sed -nE 's/.*"vocab_size": *([0-9]+).*/\1/p' "bench/configs/$cfg.json")
  echo "  $cfg: model folder, $lists lists ..." >&2
  "$ppa" init --config "bench/configs/$cfg.json" --out "$tmp/$cfg" --seed 1 > /dev/null
  random_lists "$lists" "$k" "$p" "$r" "$vocab" > "$tmp/$cfg.jsonl"
  echo "  $cfg: ppa score (reference cache, not timed) ..." >&2
  "$ppa" score --model "$tmp/$cfg" --data "$tmp/$cfg.jsonl" --out "$tmp/$cfg.cache" --threads "$threads" 2> /dev/null
  : > "$tmp/step.json"; : > "$tmp/logs"; : > "$tmp/rss"
  for i in $(seq "$repeat"); do
    echo "  $cfg: ppa bench step ($i/$repeat) ..." >&2
    "$ppa" bench step --config "bench/configs/$cfg.json" --k "$k" --prompt-len "$p" --response-len "$r" --mode shared \
      --steps 3 --threads "$threads" --json | grep '^{' >> "$tmp/step.json"
    echo "  $cfg: ppa train, $steps steps of $accum lists ($i/$repeat) ..." >&2
    rm -rf "$tmp/$cfg.out"
    /usr/bin/time -f '%M' -a -o "$tmp/rss" "$ppa" train --model "$tmp/$cfg" --data "$tmp/$cfg.jsonl" --out "$tmp/$cfg.out" \
      --ref-cache "$tmp/$cfg.cache" --objective ppa --list-size "$k" --batch-size "$accum" --micro-batch 1 \
      --max-steps "$steps" --lr 1e-6 --threads "$threads" 2> "$tmp/train.err" || { cat "$tmp/train.err" >&2; exit 1; }
    cp "$tmp/$cfg.out/train_log.jsonl" "$tmp/log.$i"; echo "$tmp/log.$i" >> "$tmp/logs"
  done
  /usr/bin/python3 - "$cfg" "$tmp/step.json" "$tmp/logs" "$tmp/rss" "$accum" "$k" "$p" "$r" >> "$tmp/all.jsonl" <<'PY'
import json, sys
cfg, step_f, logs_f, rss_f, accum, k, p, r = sys.argv[1:]
engine = min(json.loads(l)["ms"] for l in open(step_f) if l.strip())
peak_step = max(json.loads(l)["peak_rss_mb"] for l in open(step_f) if l.strip())
best = None
for f in open(logs_f).read().split():
    log = [x for x in map(json.loads, open(f)) if "step" in x]  # the step lines, not the summary
    for a, b in zip(log, log[1:]):  # every step after the first (which carries the warm-up)
        ms = 1000 * (b["elapsed_s"] - a["elapsed_s"]) / b["lists"]
        best = ms if best is None else min(best, ms)
rss = max(int(x) for x in open(rss_f).read().split())
print(json.dumps({"config": cfg, "k": int(k), "prompt_len": int(p), "response_len": int(r), "lists_per_step": int(accum),
                  "bench_step_ms": engine, "train_ms_per_list": best, "train_vs_engine": engine / best,
                  "train_peak_rss_mb": rss / 1024, "bench_step_peak_rss_mb": peak_step}))
PY
  rm -rf "$tmp/$cfg" "$tmp/$cfg.out" "$tmp/$cfg.cache"
done
[ -n "${OUT:-}" ] && cp "$tmp/all.jsonl" "$OUT"
/usr/bin/python3 - "$tmp/all.jsonl" <<'PY'
import json, sys
print(f"{'config':<12}{'K':>3}{'P':>5}{'R':>5}{'lists/step':>11}{'engine ms/list':>16}{'train ms/list':>15}"
      f"{'train/engine':>13}{'train peak MB':>15}")
for l in open(sys.argv[1]):
    x = json.loads(l)
    print(f"{x['config']:<12}{x['k']:>3}{x['prompt_len']:>5}{x['response_len']:>5}{x['lists_per_step']:>11}"
          f"{x['bench_step_ms']:>16.1f}{x['train_ms_per_list']:>15.1f}{100 * x['train_vs_engine']:>12.1f}%"
          f"{x['train_peak_rss_mb']:>15.0f}")
print("train/engine: the engine's forward + backward time per list over ppa train's time per list (data, loss,"
      " log, clipping and AdamW included); >= 90% is the target.")
PY
