#!/usr/bin/env bash
# The GPU training benchmark (issues 33 and 34): ppa's training step (`ppa train --device cuda`, NeuralNDCG, bf16
# products, fused AdamW) beside Hugging Face transformers + PyTorch (sdpa, separate sequences, response-only logits, a
# ListNet loss, clipping at 1.0, fused AdamW) in the same run, on random weights in real shapes, K = 8 responses of
# R = 256 tokens after a P = 256 prompt:
#   qwen2_0.5b        full fine-tuning, float32 master weights + bf16 products (transformers: bf16 autocast), at 1
#                     and 8 lists a step (micro-batch = batch); the reference log-probs come from `ppa score` before
#                     the clock (ppa train reads them as its --ref-cache), as transformers' from a pass before its clock
#   llama3.1_8b_lora  Llama-3.1-8B (llama3 RoPE scaling, untied head) and Mistral-7B-v0.1 (vocabulary 32000, its
#   mistral_7b_lora   sliding window of 4096, which 512 tokens never reach): a LoRA adapter of r 16, alpha 32, dropout
#                     0 on the 7 linear layers of a frozen bf16 base (ppa: --lora-r 16 --lora-alpha 32, its default
#                     targets; transformers: PEFT, float32 adapters under bf16 autocast), 1 list a step, lr 1e-4. No
#                     `ppa score`: the reference is the base with the adapter off, which ppa train computes before its
#                     first step and transformers (model.disable_adapter()) before its clock
# For each: seconds a list after the warm-up steps (ppa: from its --log's elapsed_s, counted from before its first
# step, so the warm-up steps' differences drop the start as well), tokens/s, peak GPU memory, FLOPs a list and
# TFLOP/s (full: 6 x non-embedding parameters x the tokens each side computes; LoRA: 4 x the base's, forward +
# input-gradient backward; the LM head apart; "flops_formula" in each line), the matrix products' share of
# transformers' step (torch.profiler), and the ratio; then the step-0 log-probs of both sides compared. Then the
# anchors of ../shared/bench in the same call, their lines recorded as they are: with qwen2_0.5b,
# gpu_anchor_hf.py and gpu_smart_anchor.py; with llama3.1_8b_lora, gpu_smart_anchor.py llama8b-lora (the best plain
# PyTorch LoRA step) and gpu_anchor_hf.py (it takes no case argument: its Hugging Face + PEFT Llama-3.1-8B case runs
# after its Qwen2-0.5B ones; once, whichever shapes ask for it). They measure Llama's shape, so mistral_7b_lora alone
# runs none. One JSON line per side, a ratio line; all written to $OUT/gpu-train.jsonl.
# Runs on the GPU machine with a ppa built here: make gpu-carry carries it (gpu-carry/ppa, the module beside it). An
# 8B shape writes a 14-16 GB model folder (transformers, on the GPU) and loads it 3 times (transformers, ppa train,
# ppa logprobs; COMPARE=0 drops the third), and the Llama anchors build their own 8B models: give each 8B shape a
# call of its own (the device machine allows 10 minutes a command); WORK keeps the folder for a rerun.
# Usage: bench/gpu_train.sh [PPA] [shape ...]   (default: ./ppa; qwen2_0.5b. tiny, tiny_lora: dry runs, K = 4,
#        P = R = 16, tiny_lora with LoRA r 4, alpha 8, which also run without a GPU: the HF side on the CPU where
#        torch, transformers (and peft) are, else skipped; ppa on the module PPA_CUDA_LIB names)
#   e.g. on the GPU machine: ANCHORS=gpu-carry/anchors OUT=$OUT bash bench/gpu_train.sh gpu-carry/ppa llama3.1_8b_lora
# Environment: BATCHES (lists a step; default "1 8", "1" for the LoRA shapes), STEPS_1 (steps at 1 list: 20, 12 for
# LoRA), STEPS_8 (12; STEPS_N for a batch N, else 12), WARMUP (3 steps not timed), DEVICE (cuda: ppa's --device),
# ANCHORS (the anchors' folder, default ../shared/bench beside the repository, or shared/bench in it; empty: none),
# ANCHOR_TIMEOUT (600 s each), COMPARE (1; 0: no step-0 log-prob comparison, which loads the model once more), PY
# (python3), WORK (a scratch folder, default /tmp/ppa-gpu-train; it keeps the model folders for the next run), OUT
# (results also written there).
set -u
ppa=$(realpath "${1:-./ppa}")
shift || true
# a carried build (make gpu-carry: gpu-carry/ppa, its module beside it, the libraries it may lack in lib/)
[ -d "$(dirname "$ppa")/lib" ] && export LD_LIBRARY_PATH="$(dirname "$ppa")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(qwen2_0.5b)
work=${WORK:-/tmp/ppa-gpu-train}
warm=${WARMUP:-3}
device=${DEVICE:-cuda}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
py=${PY:-$(command -v python3)}
hf() { "$py" "$here/gpu_train_hf.py" "$@"; }
mkdir -p "$work"
log() { echo "$@"; [ -n "${OUT:-}" ] && mkdir -p "$OUT" && echo "$@" >> "$OUT/gpu-train.jsonl"; }
# a number from a JSON line (empty when absent or null)
field() { echo "$1" | sed -nE "s/.*\"$2\": ([0-9.e+-]+).*/\1/p"; }

# a batch's steps: STEPS_<batch>, else the shape's default
steps_of() { local var=STEPS_$1; echo "${!var:-$([ "$1" = 1 ] && echo "$steps_1" || echo "$steps_n")}"; }

for s in "${shapes[@]}"; do
  # the shape's K, LoRA rank and alpha (0: full fine-tuning), default batches and steps, learning rate
  if ! info=$(hf info "$s" 2> /dev/null); then
    echo "gpu_train: unknown shape $s (qwen2_0.5b, llama3.1_8b_lora, mistral_7b_lora, tiny, tiny_lora)"
    continue
  fi
  eval "$info"
  read -r -a batches <<< "${BATCHES:-$batches_default}"
  dir=$work/$s rows=$work/$s.jsonl
  lora_args=()
  [ "$lora_r" -gt 0 ] && lora_args=(--lora-r "$lora_r" --lora-alpha "$lora_alpha" --lora-dropout 0)
  # enough lists that no step repeats one: the largest batch x its steps
  n=0
  for b in "${batches[@]}"; do
    st=$(steps_of "$b")
    [ $((b * st)) -gt $n ] && n=$((b * st))
  done
  echo "== $s: $n lists of K $k; lists a step: ${batches[*]}; $warm warm-up steps not timed;" \
       "$([ "$lora_r" -gt 0 ] && echo "LoRA r $lora_r, alpha $lora_alpha" || echo "full fine-tuning"), lr $lr"
  if [ ! -f "$dir/config.json" ] || [ ! -f "$rows" ] || [ "$(wc -l < "$rows")" -lt $n ]; then
    rm -rf "$dir" "$work/$s".*
    hf make "$s" "$dir" "$rows" "$n"
    status=$?
    # no transformers (the dry run here): the rows and a config are written, ppa init writes the folder
    [ $status -eq 3 ] && "$ppa" init --config "$dir.config.json" --out "$dir" --seed 1 --save-dtype bf16 && status=0
    [ $status -ne 0 ] && { echo "gpu_train: $s: no model folder"; continue; }
  fi

  # the reference log-probs, once, outside both clocks; train computes them itself if this fails. LoRA: none here,
  # ppa train computes the base's with the adapter off, before its first step (as a user runs it)
  ref=()
  if [ "$lora_r" = 0 ]; then
    cache=$work/$s.ref.cache
    rm -f "$cache"
    ref=(--ref-cache "$cache")
    if ! "$ppa" score --model "$dir" --data "$rows" --out "$cache" --device "$device" --precision bf16 \
         > /dev/null 2> "$work/$s.score.err"; then
      echo "gpu_train: $s: ppa score failed (ppa train computes its reference itself, before its clock):"
      head -n 3 "$work/$s.score.err"
      ref=()
    fi
  fi

  for b in "${batches[@]}"; do
    st=$(steps_of "$b")
    echo "-- $s: $b lists a step, $st steps"
    hline=$(hf time "$s" "$dir" "$rows" "$b" "$st" "$warm" 2> "$work/$s.b$b.hf.err" | tail -n 1)
    [ -z "$hline" ] && hline="{\"side\": \"hf\", \"shape\": \"$s\", \"lists_per_step\": $b, \"error\": \"no output\"}"
    log "$hline"
    case $hline in *'"error"'*) tail -n 3 "$work/$s.b$b.hf.err" ;; esac

    run=$work/$s.b$b.run plog=$work/$s.b$b.log.jsonl
    rm -rf "$run" "$plog"
    # constant lr and no checkpoints, as the transformers side; bf16 products, float32 master weights (LoRA: a
    # frozen bf16 base, float32 adapters)
    "$ppa" train --model "$dir" --data "$rows" --out "$run" --log "$plog" "${ref[@]}" "${lora_args[@]}" \
      --device "$device" --precision bf16 --objective neural_ndcg --list-size "$k" --batch-size "$b" \
      --micro-batch "$b" --max-steps "$st" --lr "$lr" --schedule constant --warmup-ratio 0 --save-every 0 \
      > /dev/null 2> "$work/$s.b$b.ppa.err"
    status=$?
    rm -rf "$run" # the trained model or adapter: nothing we read
    if [ $status -ne 0 ] || [ ! -s "$plog" ]; then
      # its last message, without quotes and backslashes (it goes into a JSON string)
      why=$(grep -E "^ppa" "$work/$s.b$b.ppa.err" | tail -n 1 | tr -d '\042\134' | cut -c1-300)
      log "{\"side\": \"ppa\", \"shape\": \"$s\", \"lists_per_step\": $b, \"error\": \"exit $status: $why\"}"
      continue
    fi
    grep -E "device:" "$work/$s.b$b.ppa.err" | head -n 1
    pline=$(hf ppa-log "$s" "$plog" "$b" "$warm")
    log "$pline"
    a=$(field "$hline" s_per_list) p=$(field "$pline" s_per_list)
    ma=$(field "$hline" peak_gib) mp=$(field "$pline" gpu_peak_gib)
    # ratio > 1: ppa is that many times faster (gpu_score.sh's convention); memory: ppa's peak over transformers'
    if [ -n "$a" ] && [ -n "$p" ]; then
      r=$(awk -v a="$a" -v p="$p" 'BEGIN { printf "%.3f", a / p }')
      m=null
      [ -n "$ma" ] && [ -n "$mp" ] && m=$(awk -v a="$ma" -v p="$mp" 'BEGIN { printf "%.3f", p / a }')
      log "{\"shape\": \"$s\", \"lists_per_step\": $b, \"ratio_hf_over_ppa\": $r, \"gib_ppa_over_hf\": $m}"
    fi
  done

  # the two sides see the same weights and token ids: their step-0 log-probs (LoRA: the base's, the reference)
  # agree to bf16 rounding
  if [ "${COMPARE:-1}" != 0 ] && [ -f "$rows.hf_logps.pt" ] &&
     "$ppa" logprobs --model "$dir" --data "$rows" --device "$device" > "$work/$s.ppa_logps.jsonl" 2> /dev/null; then
    hf compare "$s" "$work/$s.ppa_logps.jsonl" "$rows.hf_logps.pt"
  fi
done

# the anchors (read, not copied: their licence is not this repository's), only where they measure: Qwen2-0.5B
# (gpu_anchor_hf.py, gpu_smart_anchor.py) and Llama-3.1-8B with LoRA (gpu_smart_anchor.py llama8b-lora, and
# gpu_anchor_hf.py for its Hugging Face + PEFT case: it has no argument choosing that case alone), each once
runs=()
case " ${shapes[*]} " in *" qwen2_0.5b "*) runs+=("gpu_anchor_hf.py" "gpu_smart_anchor.py") ;; esac
case " ${shapes[*]} " in *" llama3.1_8b_lora "*)
  case " ${runs[*]} " in *" gpu_anchor_hf.py "*) ;; *) runs+=("gpu_anchor_hf.py") ;; esac
  runs+=("gpu_smart_anchor.py llama8b-lora") ;;
esac
anchors=${ANCHORS-}
if [ -z "${ANCHORS+x}" ]; then
  anchors=$root/../shared/bench
  [ -d "$anchors" ] || anchors=$root/shared/bench
fi
if [ -z "$anchors" ]; then
  echo "anchors: ANCHORS is empty: skipped"
elif [ ${#runs[@]} = 0 ]; then
  echo "anchors: they measure qwen2_0.5b and llama3.1_8b_lora, neither among the shapes: skipped"
elif [ ! -d "$anchors" ]; then
  echo "anchors: no folder $anchors here: skipped"
elif ! "$py" -c "import torch, transformers, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> /dev/null; then
  echo "anchors: they need a GPU, torch and transformers: skipped"
else
  for r in "${runs[@]}"; do
    read -r a arg <<< "$r"
    [ -f "$anchors/$a" ] || { echo "anchors: no $anchors/$a: skipped"; continue; }
    echo "-- anchor $r"
    name=${r// /_}
    timeout "${ANCHOR_TIMEOUT:-600}" "$py" "$anchors/$a" $arg > "$work/$name.out" 2> "$work/$name.err"
    status=$?
    # each JSON line as it is, named by its anchor and argument
    grep '^{' "$work/$name.out" | while IFS= read -r l; do log "{\"anchor\": \"$r\", ${l#\{}"; done
    if [ $status -ne 0 ]; then
      log "{\"anchor\": \"$r\", \"error\": \"exit $status$([ $status = 124 ] && echo ': timed out')\"}"
      tail -n 3 "$work/$name.err"
    fi
  done
fi
