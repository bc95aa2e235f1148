#!/usr/bin/env bash
# scripts/gpu-checks.sh: the GPU checks the open work leaves pending, as the calls one short loan of the device
# machine allows (each under its 10-minute limit; 15 minutes of device time in all). It builds nothing: run
# `make gpu-carry` here first and carry gpu-carry/. Every step writes its output under $OUT (default gpu-out/).
# Usage: scripts/gpu-checks.sh STEP
#   checks  scripts/test-cuda.sh gpu-carry with FULL=1 (test_gpu_train on every case and objective) and all four
#           compute-sanitizer tools (memcheck, racecheck, synccheck, initcheck) on the small shapes, then the kernel
#           benchmark beside PyTorch's log_softmax and scaled_dot_product_attention (about 4-5 minutes); it holds the
#           several-GPU checks one GPU allows: t_nccl's one-rank communicator through the real libnccl.so.2 (its
#           all-reduce, all-gather, reduce-scatter and ZeRO-2's bucket reduction on NCCL's stream), and in
#           test_gpu_commands 2 ranks sharing the GPU through the host: plain, --zero 1 and --zero 2 = 1 rank
#   train   bench/gpu_train.sh: Qwen2-0.5B full fine-tuning at 1 and 8 lists a step beside transformers and the
#           shared anchors (gpu_anchor_hf.py, gpu_smart_anchor.py) in the same call
#   lora    bench/gpu_train.sh llama3.1_8b_lora: Llama-3.1-8B LoRA beside transformers + PEFT and
#           gpu_smart_anchor.py llama8b-lora (an 8B model folder is written and read: its own call)
#   generate  bench/gpu_generate.sh qwen2_0.5b: sampling at batch 8 and 64 and the listwise job (8 prompts x 8)
#           beside transformers' generate, both warmed up (the decode loop's kernels run in checks' test_gpu_decode
#           and test_cuda --only decode|sample under the sanitizers)
#   generate8b  bench/gpu_generate.sh llama3.1_8b: batches 8 and 32 and the listwise job (a 16 GB folder: its own call)
#   demo    make demo-gpu's path with the carried ppa: results into $OUT/demo-gpu (copy them into docs/demo/gpu/)
set -u
cd "$(dirname "$0")/.."
step=${1:-}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export OUT
[ -x gpu-carry/ppa ] || { echo "gpu-checks: no gpu-carry/ppa (run make gpu-carry here and carry gpu-carry)"; exit 1; }
export ANCHORS=${ANCHORS:-gpu-carry/anchors}
case "$step" in
  checks) FULL=1 SANITIZERS="memcheck racecheck synccheck initcheck" bash scripts/test-cuda.sh gpu-carry ;;
  train)  bash bench/gpu_train.sh gpu-carry/ppa qwen2_0.5b ;;
  lora)   bash bench/gpu_train.sh gpu-carry/ppa llama3.1_8b_lora ;;
  generate) bash bench/gpu_generate.sh gpu-carry/ppa qwen2_0.5b ;;
  generate8b) bash bench/gpu_generate.sh gpu-carry/ppa llama3.1_8b ;;
  demo)   start=$SECONDS
          PPA=$PWD/gpu-carry/ppa LD_LIBRARY_PATH=$PWD/gpu-carry/lib PPA_DEMO_CACHE=gpu-carry/demo-cache \
            bash scripts/demo.sh --gpu --out "$OUT/demo-gpu"
          rc=$?
          echo "gpu-checks: demo-gpu took $((SECONDS - start)) s (exit status $rc)" | tee "$OUT/demo-gpu-time.txt"
          exit $rc ;;
  *) echo "usage: scripts/gpu-checks.sh checks|train|lora|generate|generate8b|demo"; exit 2 ;;
esac
