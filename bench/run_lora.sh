#!/usr/bin/env bash
# LoRA training step: ppa bench step --lora-r against ppa's full bf16 step and against a PyTorch LoRA step
# (bench/bench_step_torch.py --lora-r: the adapter written by hand with PEFT's semantics, see its docstring), same
# shapes, same thread count, one process at a time, AdamW inside every timed step (--adamw on both sides):
#   a. ppa full bf16 step:          ppa bench step --mode shared --precision bf16 --adamw
#   b. ppa LoRA bf16 step:          the same with --lora-r $LORA_R (alpha 2r; only A and B train, the base frozen)
#   c. PyTorch LoRA at its best settings: bf16 autocast and fp32, each at the micro-batch sizes of TORCH_MB (one
#      pass when >= K); the faster precision's fastest run is "PyTorch's best".
# It prints a table, which kernels each program ran, and the ratios: ppa's LoRA step against its full bf16 step, and
# ppa LoRA against PyTorch's best LoRA. Default shapes: Qwen2-0.5B (bench/configs/qwen2_0_5b.json), K=8, P=R=256,
# ppa in shared-prompt mode (PyTorch runs the K sequences as one [K, P+R] batch, as in bench/run_step.sh).
# Optionally (BIG="mistral llama") the 7B/8B memory rows: ppa only, bf16 folders, gradient checkpointing, LoRA,
# AdamW, one step; peak resident memory from /usr/bin/time -f %M next to ppa's own peak. No PyTorch there: its float32
# master weights alone are 28-32 GB (7.2-8.0B parameters x 4 bytes; autocast keeps float32 parameters), more than the
# benchmark machine has.
#
# Usage: bench/run_lora.sh [PPA_BINARY]
#   env CONFIGS="qwen2_0_5b" (names in bench/configs), STEPS=2 (timed steps after 1 warm-up), THREADS=2,
#       K=8 PROMPT_LEN=256 RESPONSE_LEN=256, LORA_R=16, TORCH_PRECISIONS="bf16 fp32", TORCH_MB="2 4 8"
#       (micro-batch sizes tried for PyTorch, smallest first; a size whose peak memory, extrapolated from the sizes
#       already run, exceeds 85% of MemAvailable is skipped, so a full batch that does not fit is never started),
#       CORETYPE=<OPENBLAS_CORETYPE for PyTorch; default from /proc/cpuinfo as in run_step.sh; empty: unset>,
#       OUT=<file for the JSON lines>, BIG="mistral llama" (default none), BIG_DIR=/tmp/lorabench (the folders
#       mistral_7b and llama3_1_8b written by `ppa init --config bench/configs/<name>.json --out DIR --save-dtype bf16`),
#       BIG_STEPS=1
# Smoke test: CONFIGS=llama_50m K=4 PROMPT_LEN=16 RESPONSE_LEN=16 STEPS=1 TORCH_MB="2 4" bench/run_lora.sh
set -euo pipefail
ppa=${1:-./ppa}
configs=${CONFIGS:-qwen2_0_5b}
steps=${STEPS:-2}
threads=${THREADS:-2}
k=${K:-8}
p=${PROMPT_LEN:-256}
r=${RESPONSE_LEN:-256}
lora_r=${LORA_R:-16}
torch_precs=${TORCH_PRECISIONS:-bf16 fp32}
torch_mbs=${TORCH_MB:-2 4 8}
big=${BIG:-}
big_dir=${BIG_DIR:-/tmp/lorabench}
big_steps=${BIG_STEPS:-1}
py=/usr/bin/python3
cd "$(dirname "$0")/.."
. bench/lib.sh
if ! $py -c "import torch" 2>/dev/null; then
  echo "bench: python3-torch is missing: PPA_WITH_TORCH=1 bash scripts/install-deps.sh" >&2
  exit 1
fi

# ppa picks its own OpenBLAS kernels (a workplace OPENBLAS_CORETYPE, e.g. Haswell, would slow its float32 products);
# PyTorch gets its best settings of bench/run_step.sh (measurements in bench_step_torch.py's docstring): the avx512
# OpenBLAS kernels set explicitly (OpenBLAS 0.3.21 falls back to Prescott on some avx512 CPUs), passive OpenMP waiting
# next to OpenBLAS's threads, glibc malloc keeping freed memory.
unset OPENBLAS_CORETYPE
torch_settings
[ -n "$coretype" ] && torch_env+=(OPENBLAS_CORETYPE="$coretype")

have_ppa=1
if ! "$ppa" bench step --help >/dev/null 2>&1; then
  have_ppa=0
  echo "bench: '$ppa bench step --help' fails (not built?): timing PyTorch only" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/all.jsonl"
# collect CONFIG PRECISION [EXTRA_JSON]: the JSON line of $tmp/out into $tmp/all.jsonl, the config name first, the
# precision added when the program does not report it, EXTRA_JSON's keys added
collect() {
  local extra='{}'
  [ $# -ge 3 ] && extra=$3
  $py -c 'import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = {"config": sys.argv[2]}
        r.update(json.loads(line))
        r.setdefault("precision", sys.argv[3])
        r.update(json.loads(sys.argv[4]))
        print(json.dumps(r))' "$tmp/out" "$1" "$2" "$extra" >> "$tmp/all.jsonl"
}
# last_field KEY: KEY of the last JSON line collected
last_field() {
  $py -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' \
    "$tmp/all.jsonl" "$1"
}
mem_avail_mb() { awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo; }

echo "LoRA step benchmark: forward + backward + AdamW, $threads threads, median of $steps after 1 warm-up," \
  "K=$k P=$p R=$r, LoRA r=$lora_r (alpha $((2 * lora_r))), PyTorch OPENBLAS_CORETYPE=${coretype:-unset}," \
  "ppa's own kernels, $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(nproc) CPUs"
for cfg in $configs; do
  [ -f "bench/configs/$cfg.json" ] || { echo "bench: no bench/configs/$cfg.json" >&2; exit 2; }
  args=(--config "bench/configs/$cfg.json" --k "$k" --prompt-len "$p" --response-len "$r" --threads "$threads"
    --steps "$steps" --adamw --json)
  if [ $have_ppa = 1 ]; then
    for lr in 0 "$lora_r"; do
      what="ppa bf16 shared+adamw"; lora_args=()
      [ "$lr" != 0 ] && { what="$what LoRA r=$lr"; lora_args=(--lora-r "$lr"); }
      echo "  $cfg: $what ..." >&2
      if "$ppa" bench step "${args[@]}" --mode shared --precision bf16 "${lora_args[@]}" \
          > "$tmp/out" 2> "$tmp/err"; then
        cat "$tmp/err" >&2
        collect "$cfg" bf16
      else
        echo "bench: $what failed on $cfg: $(grep -v warning "$tmp/err" | head -n1)" >&2
      fi
    done
  fi
  for prec in $torch_precs; do
    # micro-batch sizes, >= K meaning one pass, smallest first, each once
    mbs=$(for m in $torch_mbs; do [ "$m" -ge "$k" ] && echo "$k" || echo "$m"; done | sort -n -u)
    pts=() # "mb peak_mb" of the runs so far, to extrapolate the next size's peak
    for m in $mbs; do
      if [ ${#pts[@]} -gt 0 ]; then
        avail=$(mem_avail_mb)
        need=$($py -c 'import sys
pts = [tuple(map(float, s.split())) for s in sys.argv[2:]]
m = float(sys.argv[1])
if len(pts) == 1:   # proportional to the micro-batch: an upper bound (the weights do not grow)
    print(int(pts[0][1] * m / pts[0][0]))
else:               # linear through the last two sizes
    (m1, p1), (m2, p2) = pts[-2:]
    print(int(p2 + (p2 - p1) / (m2 - m1) * (m - m2)))' "$m" "${pts[@]}")
        if [ "$need" -gt $((avail * 85 / 100)) ]; then
          echo "bench: torch $prec LoRA micro-batch $m skipped: ~$need MB expected (extrapolated)," \
            "$avail MB available" >&2
          break
        fi
      fi
      echo "  $cfg: torch $prec LoRA r=$lora_r micro-batch $m ..." >&2
      if env "${torch_env[@]}" $py bench/bench_step_torch.py "${args[@]}" --lora-r "$lora_r" --precision "$prec" \
          --micro-batch "$m" > "$tmp/out" 2> "$tmp/err"; then
        collect "$cfg" "$prec"
        pts+=("$m $(last_field peak_rss_mb)")
      else
        echo "bench: torch $prec LoRA micro-batch $m failed on $cfg (exit $?): $(tail -n1 "$tmp/err")" >&2
        break
      fi
    done
  done
done

# 7B/8B memory rows: ppa only (see the top of this file), the real folders (bf16), checkpointing, one step
for b in $big; do
  case $b in
    mistral) name=mistral_7b ;;
    llama) name=llama3_1_8b ;;
    *) echo "bench: unknown BIG model '$b' (mistral, llama)" >&2; continue ;;
  esac
  dir=$big_dir/$name
  if [ ! -f "$dir/config.json" ]; then
    echo "bench: $dir has no model: $ppa init --config bench/configs/$name.json --out $dir --save-dtype bf16" >&2
    continue
  fi
  if [ $have_ppa = 0 ]; then continue; fi
  echo "  $name: ppa bf16 shared+adamw+gc LoRA r=$lora_r, $big_steps step(s) ..." >&2
  if /usr/bin/time -f %M -o "$tmp/time" "$ppa" bench step --model "$dir" --precision bf16 --gradient-checkpointing \
      --lora-r "$lora_r" --adamw --steps "$big_steps" --mode shared --k "$k" --prompt-len "$p" --response-len "$r" \
      --threads "$threads" --json > "$tmp/out" 2> "$tmp/err"; then
    cat "$tmp/err" >&2
    collect "$name" bf16 "{\"max_rss_mb\": $(($(tail -n1 "$tmp/time") / 1024)), \"big\": true}"
  else
    echo "bench: ppa failed on $dir: $(grep -v warning "$tmp/err" | head -n1)" \
      "(max RSS $(($(tail -n1 "$tmp/time") / 1024)) MB)" >&2
  fi
done

[ -n "${OUT:-}" ] && cp "$tmp/all.jsonl" "$OUT"
$py - "$tmp/all.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]

def name(r):
    s = r["impl"] + " " + r["precision"] + (" " + r["mode"] if r.get("mode") else "")
    s += "+adamw" if r.get("adamw") else ""
    s += "+gc" if r.get("gradient_checkpointing") else ""
    s += " LoRA r%d" % r["lora_r"] if r.get("lora_r") else " full"
    s += " mb%d" % r["micro_batch"] if r.get("micro_batch") else ""
    return s

small = [r for r in rows if not r.get("big")]
print(f"{'config':<12}{'K':>3}{'P':>5}{'R':>5}  {'impl':<40}{'ms/step':>10}{'tokens/s':>10}{'peak MB':>9}"
      f"{'trainable':>12}{'thr':>4}")
for r in small:
    print(f"{r['config']:<12}{r['k']:>3}{r['prompt_len']:>5}{r['response_len']:>5}  {name(r):<40}{r['ms']:>10.1f}"
          f"{r['tokens_per_s']:>10.1f}{r['peak_rss_mb']:>9.0f}{r['params']:>12}{r['threads']:>4}")
big = [r for r in rows if r.get("big")]
if big:
    print()
    print(f"{'model':<12}{'K':>3}{'P':>5}{'R':>5}  {'impl':<40}{'s/step':>10}{'tokens/s':>10}{'peak MB':>9}"
          f"{'max RSS MB':>12}{'trainable':>12}{'thr':>4}")
    for r in big:
        print(f"{r['config']:<12}{r['k']:>3}{r['prompt_len']:>5}{r['response_len']:>5}  {name(r):<40}"
              f"{r['ms'] / 1000:>10.2f}{r['tokens_per_s']:>10.1f}{r['peak_rss_mb']:>9.0f}{r['max_rss_mb']:>12}"
              f"{r['params']:>12}{r['threads']:>4}")
    print("peak MB: ppa's own peak resident memory; max RSS: /usr/bin/time -f %M of the whole process.")

print()
print("kernels:")
seen = set()
for r in rows:
    for key in ("gemm", "gemm_bf16"):
        v = r.get(key)
        if v and (r["impl"], key, v) not in seen:
            seen.add((r["impl"], key, v))
            print("  %-5s %-9s %s" % (r["impl"], "bf16" if key == "gemm_bf16" else "fp32/BLAS", v))

print()
shape = lambda r: (r["config"], r["k"], r["prompt_len"], r["response_len"])
for sh in dict.fromkeys(shape(r) for r in small):
    same = [r for r in small if shape(r) == sh]
    full = next((r for r in same if r["impl"] == "ppa" and not r.get("lora_r")), None)
    lora = next((r for r in same if r["impl"] == "ppa" and r.get("lora_r")), None)
    tl = [r for r in same if r["impl"] == "torch" and r.get("lora_r")]
    head = "%s K=%d P=%d R=%d:" % sh
    if full and lora:
        print("%s ppa LoRA r%d step vs ppa full bf16 step: %.2fx the speed (%.0f vs %.0f ms/step), peak %.0f vs %.0f MB"
              % (head, lora["lora_r"], full["ms"] / lora["ms"], lora["ms"], full["ms"], lora["peak_rss_mb"],
                 full["peak_rss_mb"]))
    for prec in ("bf16", "fp32"):
        t = [r for r in tl if r["precision"] == prec]
        if t:
            b = min(t, key=lambda r: r["ms"])
            print("%s PyTorch LoRA %s: fastest %s, %.0f ms/step, peak %.0f MB" % (head, prec, name(b), b["ms"],
                                                                                  b["peak_rss_mb"]))
    if tl:
        b = min(tl, key=lambda r: r["ms"])
        if lora:
            print("%s ppa LoRA r%d bf16 vs PyTorch's best LoRA (%s): %.2fx the speed (%.0f vs %.0f ms/step), "
                  "peak %.0f vs %.0f MB" % (head, lora["lora_r"], name(b), b["ms"] / lora["ms"], lora["ms"], b["ms"],
                                            lora["peak_rss_mb"], b["peak_rss_mb"]))
print("Ratios of ms/step, > 1: ppa's LoRA step is faster (tokens = K*(P+R) everywhere). Every step includes AdamW over"
      " what trains. PyTorch mbN: gradients accumulated over micro-batches of N sequences; PyTorch runs the K"
      " sequences as a [K, P+R] batch (no prompt sharing), ppa in shared-prompt mode.")
PY
