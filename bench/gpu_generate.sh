#!/usr/bin/env bash
# The GPU generation benchmark: `ppa bench generate --device cuda` (the decode loop on the device: its sampler, forks
# sharing a prompt's cache, flash-decoding, CUDA graphs) beside Hugging Face transformers' `generate` on the same
# prompts and settings, in the same run, both warmed up, at the anchor's settings (../shared/spec/gpu.md): random
# bf16 weights in the real shapes, prompts of random token ids, 128 new tokens, temperature 1, top-p 0.9, no stop
# token (both sides make exactly 128 tokens a sequence):
#   qwen2_0.5b    batches of 8 and 64 prompts (the anchor's transformers: 259 and 2,512 new tokens/s on an H200)
#   llama3.1_8b   batches of 8 and 32 prompts (313 and 1,190 new tokens/s)
#   and on each, the listwise data job: 8 prompts x 8 samples (transformers: num_return_sequences=8; ppa: -n 8)
# Targets: ppa at 5x transformers at batch 64 and 3x at batch 8.
# For each shape: bench/gpu_generate_hf.py writes the model folder (gpu_train_hf.py's shapes and writer) and the
# prompts ({"prompt_ids": [...]} lines), sets eos_token_id null in its config (ppa: no stop id, so its responses run
# to --max-new-tokens; transformers: eos None and min_new_tokens = max_new_tokens, as the anchor), then times
# transformers (bf16, sdpa, do_sample, top_p 0.9, top_k 0; one warm-up call, the fastest of REPS calls, the whole
# call: prefill + steps + sampling), then ppa bench generate on exactly that job (the model loaded and uploaded once,
# one warm-up call, the fastest of REPS calls, each the whole job; its first call's time is reported too). Per side:
# new tokens/s, seconds, GPU memory (transformers: torch.cuda.max_memory_allocated and _reserved; ppa: "smi_peak_gib",
# nvidia-smi's memory.used over its run less the baseline before it, the CUDA context included, where nvidia-smi is),
# and the ratio ppa / transformers (> 1: ppa is faster) beside ppa / the anchor. One JSON line per side and a ratio
# line, all appended to $OUT/gpu-generate.jsonl.
# Runs on the GPU machine with a ppa built here: make gpu-carry carries it (gpu-carry/ppa, the module beside it, the
# libraries it may lack in lib/). llama3.1_8b writes a 16 GB model folder and loads it once a job: give it a call of
# its own (the device machine allows 10 minutes a command); WORK keeps the folders for a rerun.
# Usage: bench/gpu_generate.sh [PPA] [shape ...]   (default: ./ppa; qwen2_0.5b llama3.1_8b. tiny: a dry run, 16-token
#        prompts, 8 new tokens, batches 2 and 4, 2 prompts x 3 samples, which also runs without a GPU: transformers on
#        the CPU where torch and transformers are, else skipped; ppa on the module PPA_CUDA_LIB names)
#   e.g. on the GPU machine: OUT=$OUT bash bench/gpu_generate.sh gpu-carry/ppa qwen2_0.5b
#   the dry run here: PPA_CUDA_LIB=$PWD/build/cuda-mock/libppa_cuda_mock.so bash bench/gpu_generate.sh ./ppa tiny
# Environment: BATCHES (prompts a batch; default the shape's), LISTWISE (the listwise job as PROMPTS:SAMPLES, default
# 8:8; empty: none), NEW (new tokens; default the shape's), REPS (2 timed calls a side after the warm-up), SEED (1,
# ppa's --seed), DEVICE (cuda: ppa's --device), PY (python3), WORK (a scratch folder, default /tmp/ppa-gpu-generate;
# it keeps the model folders), OUT (results also written there).
set -u
ppa=$(realpath "${1:-./ppa}")
shift || true
# a carried build (make gpu-carry: gpu-carry/ppa, its module beside it, the libraries it may lack in lib/)
[ -d "$(dirname "$ppa")/lib" ] && export LD_LIBRARY_PATH="$(dirname "$ppa")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(qwen2_0.5b llama3.1_8b)
work=${WORK:-/tmp/ppa-gpu-generate}
reps=${REPS:-2}
device=${DEVICE:-cuda}
here=$(cd "$(dirname "$0")" && pwd)
py=${PY:-$(command -v python3)}
hf() { "$py" "$here/gpu_generate_hf.py" "$@"; }
mkdir -p "$work"
log() { echo "$@"; [ -n "${OUT:-}" ] && mkdir -p "$OUT" && echo "$@" >> "$OUT/gpu-generate.jsonl"; }
# a number from a JSON line (empty when absent or null)
field() { echo "$1" | sed -nE "s/.*\"$2\": ([0-9.e+-]+).*/\1/p"; }

# GPU memory in use (MiB, the first GPU), or nothing without nvidia-smi
smi_used() { command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2> /dev/null | head -n 1 | tr -dc 0-9; }
# the largest memory.used while process $1 runs, less $2 (MiB), in GiB; nothing without nvidia-smi
smi_peak() {
  local pid=$1 base=$2 max=0 u
  while kill -0 "$pid" 2> /dev/null; do
    u=$(smi_used)
    [ -n "$u" ] && [ "$u" -gt "$max" ] && max=$u
    sleep 0.2
  done
  [ -n "$base" ] && [ "$max" -gt 0 ] && awk -v m="$max" -v b="$base" 'BEGIN { printf "%.2f", (m - b) / 1024 }'
}

for s in "${shapes[@]}"; do
  if ! info=$(hf info "$s" 2> /dev/null); then
    echo "gpu_generate: unknown shape $s (qwen2_0.5b, llama3.1_8b, tiny)"
    continue
  fi
  eval "$info"
  read -r -a batches <<< "${BATCHES:-$batches_default}"
  listwise=${LISTWISE-$listwise_default}
  new=${NEW:-$new_tokens}
  n=0
  for b in "${batches[@]}" "${listwise%%:*}"; do [ -n "$b" ] && [ "$b" -gt $n ] && n=$b; done
  dir=$work/$s prompts=$work/$s.prompts.jsonl
  echo "== $s: prompts of $prompt_tokens random token ids, $new new tokens, temperature 1, top-p 0.9, no stop id;" \
       "batches ${batches[*]}; listwise job ${listwise:-none} (prompts:samples)"
  if [ ! -f "$dir/config.json" ] || [ ! -f "$prompts" ] || [ "$(wc -l < "$prompts")" -lt $n ]; then
    rm -rf "$dir" "$dir.config.json" "$prompts"
    hf make "$s" "$dir" "$prompts" "$n"
    status=$?
    # no transformers (the dry run here): the prompts and a config are written, ppa init writes the folder
    [ $status -eq 3 ] && "$ppa" init --config "$dir.config.json" --out "$dir" --seed 1 --save-dtype bf16 > /dev/null &&
      status=0
    [ $status -ne 0 ] && { echo "gpu_generate: $s: no model folder"; continue; }
  fi
  hf noeos "$dir"

  # transformers: one process, every batch (one load), done (its GPU memory freed) before ppa starts; its lines by batch
  hf time "$s" "$dir" "$prompts" "$new" "$reps" "${batches[@]}" > "$work/$s.hf.jsonl" 2> "$work/$s.hf.err"
  declare -A hline=()
  while IFS= read -r l; do
    b=$(field "$l" batch)
    [ -n "$b" ] && hline[$b]=$l
  done < "$work/$s.hf.jsonl"

  # the jobs: each batch of prompts with one sample each, then the listwise data job (LISTWISE prompts x K samples,
  # transformers' num_return_sequences) where the shape has one
  jobs=()
  for b in "${batches[@]}"; do jobs+=("$b:1"); done
  [ -n "$listwise" ] && jobs+=("$listwise")
  if [ -n "$listwise" ]; then
    NUM_RETURN=${listwise#*:} hf time "$s" "$dir" "$prompts" "$new" "$reps" "${listwise%%:*}" > "$work/$s.hfk.jsonl" \
      2>> "$work/$s.hf.err"
  fi
  for job in "${jobs[@]}"; do
    b=${job%%:*} k=${job#*:}
    echo "-- $s: $b prompts x $k samples"
    if [ "$k" = 1 ]; then h=${hline[$b]:-}; else h=$(tail -n 1 "$work/$s.hfk.jsonl" 2> /dev/null); fi
    [ -n "$h" ] || h="{\"side\": \"hf\", \"shape\": \"$s\", \"batch\": $b, \"samples_per_prompt\": $k, \"error\": \"no output\"}"
    log "$h"
    case $h in *'"error"'*) tail -n 3 "$work/$s.hf.err" ;; esac

    head -n "$b" "$prompts" > "$work/$s.b$b.prompts.jsonl"
    out=$work/$s.b$b.k$k.bench.json err=$work/$s.b$b.k$k.ppa.err
    rm -f "$out"
    base=$(smi_used)
    # the same job on ppa, warmed up as transformers is: ppa bench generate loads the model once, calls once to warm
    # up, then keeps the fastest of REPS calls
    "$ppa" bench generate --model "$dir" --prompts "$work/$s.b$b.prompts.jsonl" --device "$device" --precision bf16 \
      --max-new-tokens "$new" --temperature 1 --top-p 0.9 -n "$k" --seed "${SEED:-1}" --repeat "$reps" --json \
      > "$out" 2> "$err" &
    pid=$!
    smi=$(smi_peak "$pid" "$base")
    wait "$pid"
    status=$?
    if [ $status -ne 0 ] || [ ! -s "$out" ]; then
      # its last message, without quotes and backslashes (it goes into a JSON string)
      why=$(grep -E "^ppa" "$err" | tail -n 1 | tr -d '\042\134' | cut -c1-300)
      log "{\"side\": \"ppa\", \"shape\": \"$s\", \"batch\": $b, \"samples_per_prompt\": $k, \"error\": \"exit $status: $why\"}"
      continue
    fi
    p=$(hf ppa-bench "$s" "$b" "$k" "$new" "$out" "$smi")
    log "$p"
    ht=$(field "$h" new_tokens_per_s) pt=$(field "$p" new_tokens_per_s) at=$(field "$p" anchor_hf_new_tokens_per_s)
    if [ -n "$pt" ]; then
      r=null ra=null target=5 # the targets: 5x transformers at batch 64, 3x at 8; none for the listwise job
      [ "$b" -le 8 ] && target=3
      [ "$k" != 1 ] && target=null
      [ -n "$ht" ] && r=$(awk -v a="$ht" -v p="$pt" 'BEGIN { printf "%.3f", p / a }')
      [ -n "$at" ] && ra=$(awk -v a="$at" -v p="$pt" 'BEGIN { printf "%.3f", p / a }')
      log "{\"shape\": \"$s\", \"batch\": $b, \"samples_per_prompt\": $k, \"ratio_ppa_over_hf\": $r, \"ratio_ppa_over_anchor\": $ra, \"target\": $target}"
    fi
  done
  unset hline
done
