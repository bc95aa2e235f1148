#!/usr/bin/env bash
# ppa bench step against a PyTorch forward + backward (bench/bench_step_torch.py), same shapes, same thread count,
# PyTorch at its best settings on the benchmark machine (see the script's docstring). Each side runs in float32 and in
# bf16 (--precision bf16; PyTorch: torch.autocast on CPU); ppa bf16 is compared with ppa fp32 and with the faster of
# PyTorch's two precisions.
# Two models: a ~58M-parameter Llama (bench/configs/llama_50m.json) and the Qwen2-0.5B shapes
# (bench/configs/qwen2_0_5b.json), each at K=2 P=64 R=64 (quick) and K=8 P=256 R=256 (full).
#
# Usage: bench/run_step.sh [PPA_BINARY]
#   env SETTINGS="quick full" (or "quick"), CONFIGS="llama_50m qwen2_0_5b", STEPS=3, THREADS=2,
#       CORETYPE=<OPENBLAS_CORETYPE for both programs; default from /proc/cpuinfo, see below; empty: unset>,
#       QWEN_MICRO_BATCH=2 (torch, Qwen2-0.5B full setting only), OUT=<file for the JSON lines>
# The ppa lines are skipped, with a message, while `ppa bench step --help` fails; the ppa bf16 line alone while
# `ppa bench step --precision bf16` fails (not implemented yet).
set -euo pipefail
ppa=${1:-./ppa}
settings=${SETTINGS:-quick full}
configs=${CONFIGS:-llama_50m qwen2_0_5b}
steps=${STEPS:-3}
threads=${THREADS:-2}
py=/usr/bin/python3
cd "$(dirname "$0")/.."
. bench/lib.sh
if ! $py -c "import torch" 2>/dev/null; then
  echo "bench: python3-torch is missing: PPA_WITH_TORCH=1 bash scripts/install-deps.sh" >&2
  exit 1
fi

# PyTorch's best settings on this machine (measurements in the bench_step_torch.py docstring):
# * OpenBLAS kernels: the avx512 ones (Cooperlake = SkylakeX sgemm; what 0.3.21 auto-detects here, but on the Intel
#   development machine it falls back to Prescott, so set it explicitly); AVX2 (Haswell, Zen) is 1.3-1.6x slower.
# * OMP_WAIT_POLICY=passive: torch's OpenMP pool (2 threads) next to OpenBLAS's own 2 pthreads on 2 vCPUs; spinning
#   OpenMP workers steal the CPUs from OpenBLAS (1.3x slower at full size, 3.5x at the quick size).
# * glibc malloc keeps freed memory (no mmap for big blocks, no trim): every fresh multi-MB tensor otherwise
#   page-faults its memory in again each step, up to 1.9x slower (Qwen2-0.5B shapes), for ~10% more peak memory.
torch_settings
blas_env=()
[ -n "$coretype" ] && blas_env=(OPENBLAS_CORETYPE="$coretype")

have_ppa=1
if ! "$ppa" bench step --help >/dev/null 2>&1; then
  have_ppa=0
  echo "bench: '$ppa bench step --help' fails (not built, or no 'bench step' yet): timing PyTorch only" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# collect CONFIG PRECISION: the JSON lines of $tmp/out into $tmp/all.jsonl, with the config name first and the
# precision added when the program does not report it
collect() {
  $py -c 'import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = {"config": sys.argv[2]}
        r.update(json.loads(line))
        r.setdefault("precision", sys.argv[3])
        print(json.dumps(r))' "$tmp/out" "$1" "$2" >> "$tmp/all.jsonl"
}
echo "step benchmark: forward + backward, $threads threads, median of $steps after 1 warm-up," \
  "OPENBLAS_CORETYPE=${coretype:-unset}, $(date -u +%Y-%m-%d)," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
for cfg in $configs; do
  for s in $settings; do
    case $s in
      quick) k=2 p=64 r=64 ;;
      full) k=8 p=256 r=256 ;;
      *) echo "bench: unknown setting '$s' (quick, full)" >&2; exit 2 ;;
    esac
    args=(--config "bench/configs/$cfg.json" --k "$k" --prompt-len "$p" --response-len "$r" --threads "$threads")
    # K=8 sequences of 512 tokens of the Qwen2-0.5B shapes need ~26 GB at once: accumulate over micro-batches of 2
    mb=(); [ "$cfg.$s" = qwen2_0_5b.full ] && mb=(--micro-batch "${QWEN_MICRO_BATCH:-2}")
    for prec in fp32 bf16; do
      echo "  $cfg K=$k P=$p R=$r: torch $prec ..." >&2
      if env "${blas_env[@]}" "${torch_env[@]}" $py bench/bench_step_torch.py "${args[@]}" "${mb[@]}" \
          --precision "$prec" --steps "$steps" --json > "$tmp/out"; then
        collect "$cfg" "$prec"
      else
        echo "bench: torch $prec failed on $cfg K=$k P=$p R=$r" >&2
      fi
    done
    if [ $have_ppa = 1 ]; then
      echo "  $cfg K=$k P=$p R=$r: ppa ..." >&2
      if env "${blas_env[@]}" "$ppa" bench step "${args[@]}" --steps "$steps" --json > "$tmp/out"; then
        collect "$cfg" fp32
      else
        echo "bench: ppa failed on $cfg K=$k P=$p R=$r" >&2
      fi
      echo "  $cfg K=$k P=$p R=$r: ppa bf16 ..." >&2
      if env "${blas_env[@]}" "$ppa" bench step "${args[@]}" --precision bf16 --steps "$steps" --json \
          > "$tmp/out" 2> "$tmp/err"; then
        cat "$tmp/err" >&2
        collect "$cfg" bf16
      else
        echo "bench: ppa --precision bf16 failed on $cfg K=$k P=$p R=$r, skipped: $(head -n1 "$tmp/err")" >&2
      fi
      if [ "$s" = full ]; then # a full training step: forward, backward and AdamW (memory of the issue's target)
        echo "  $cfg K=$k P=$p R=$r: ppa with AdamW ..." >&2
        if env "${blas_env[@]}" "$ppa" bench step "${args[@]}" --mode shared --adamw --steps 1 --json > "$tmp/out"; then
          collect "$cfg" fp32
        else
          echo "bench: ppa with AdamW failed on $cfg K=$k P=$p R=$r" >&2
        fi
        for gc in "" --gradient-checkpointing; do # bf16 training step, and its memory with checkpointing
          echo "  $cfg K=$k P=$p R=$r: ppa bf16 with AdamW $gc ..." >&2
          if env "${blas_env[@]}" "$ppa" bench step "${args[@]}" --mode shared --adamw --precision bf16 $gc --steps 1 \
              --json > "$tmp/out" 2> "$tmp/err"; then
            collect "$cfg" bf16
          else
            echo "bench: ppa bf16 with AdamW $gc failed on $cfg K=$k P=$p R=$r: $(head -n1 "$tmp/err")" >&2
          fi
        done
      fi
    fi
  done
done
[ -n "${OUT:-}" ] && [ -f "$tmp/all.jsonl" ] && cp "$tmp/all.jsonl" "$OUT"
$py - "$tmp/all.jsonl" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.exists(sys.argv[1]) else []
key = lambda r: (r["config"], r["k"], r["prompt_len"], r["response_len"])
twin = lambda r: (key(r), r["impl"], r.get("mode"), bool(r.get("adamw")), r.get("micro_batch"))

def torch_ms(r, prec=None):
    """ms of PyTorch on r's shapes in precision prec (None: the faster of the two)."""
    ms = [x["ms"] for x in rows if x["impl"] == "torch" and key(x) == key(r) and prec in (None, x["precision"])]
    return min(ms) if ms else None

print(f"{'config':<12}{'K':>3}{'P':>5}{'R':>5}  {'impl':<26}{'ms/step':>10}{'tokens/s':>10}{'peak MB':>9}"
      f"{'thr':>4}  {'torch/ppa':>9}{'fp32/bf16':>10}{'best torch/ppa':>15}  {'matmul share, % of sgemm peak':>30}")
for r in rows:
    name = r["impl"] + " " + r["precision"] + (" " + r["mode"] if r.get("mode") else "") \
        + ("+adamw" if r.get("adamw") else "") + ("+gc" if r.get("gradient_checkpointing") else "") \
        + (" mb%d" % r["micro_batch"] if r.get("micro_batch") else "")
    ratio = fp32_bf16 = best = ""
    if r["impl"] != "torch" and not r.get("adamw"):
        t = torch_ms(r, r["precision"])
        ratio = f"{t / r['ms']:>8.2f}x" if t else ""
        if r["precision"] == "bf16":
            t = torch_ms(r)
            best = f"{t / r['ms']:>8.2f}x" if t else ""
    if r["precision"] == "bf16":
        f = next((x for x in rows if x["precision"] == "fp32" and twin(x) == twin(r)), None)
        fp32_bf16 = f"{f['ms'] / r['ms']:>8.2f}x" if f else ""
    mm = (f"{100 * r['gemm_share']:.0f}% at {100 * r['gemm_gflops'] / r['sgemm_peak_gflops']:.0f}%"
          f" of {r['sgemm_peak_gflops']:.0f}") if "gemm_share" in r else ""
    if r.get("bf16_peak_gflops"): # ppa bf16: its bf16 products against the bf16 peak of the same process
        mm = (f"bf16 {100 * r['bf16_share']:.0f}% at {100 * r['bf16_gflops'] / r['bf16_peak_gflops']:.0f}%"
              f" of {r['bf16_peak_gflops']:.0f}")
    print(f"{r['config']:<12}{r['k']:>3}{r['prompt_len']:>5}{r['response_len']:>5}  {name:<26}{r['ms']:>10.1f}"
          f"{r['tokens_per_s']:>10.1f}{r['peak_rss_mb']:>9.0f}{r['threads']:>4}  {ratio:>9}{fp32_bf16:>10}{best:>15}"
          f"  {mm:>30}")
print("matmul: ppa's products' share of the step and their rate against the peak of a square n = 2048 product in"
      " the same process (sgemm; for ppa bf16 rows, oneDNN's bf16 products against the bf16 peak, attention's products on"
      " ppa's own bf16 kernel not counted).")
print("Ratios of ms/step, > 1: the row is faster (tokens = K*(P+R) in every mode). torch/ppa: PyTorch in the row's"
      " precision against ppa; fp32/bf16: the same program and mode in fp32 against the row in bf16; best torch/ppa:"
      " the faster of PyTorch fp32 and bf16 against ppa bf16. torch mbN: gradients accumulated over micro-batches of"
      " N sequences.")
PY
