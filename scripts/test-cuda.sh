#!/usr/bin/env bash
# scripts/test-cuda.sh: the GPU tests and the kernel benchmark of the CUDA module. Builds nothing: it runs what
# `make cuda-tests` (DIR = build: build/cuda-tests/test_*, build/libppa_cuda.so) or `make gpu-carry` (DIR =
# gpu-carry: gpu-carry/bin/test_*, gpu-carry/lib/*) left. Usage: scripts/test-cuda.sh [DIR]
#
# Steps (each under a time limit). Seen on an H200 (2026-11-27): test_attention 25 s, test_cuda 18 s,
# test_gpu_decode 7 s, test_gpu_forward 5 s, the commands 60 s; memcheck and the benchmark not yet timed:
#   1. every test binary (test_cuda: every kernel family against the CPU engine; test_attention, ...): one table
#      of kernel, shape, error, bound, median time and its floor;
#   2. the same binaries with --small (small shapes, untimed) under compute-sanitizer, each tool of SANITIZERS;
#   3. test_cuda --bench: the kernels on Qwen2-0.5B and Llama-3.1-8B shapes against their floors;
#   4. bench/cuda_lmhead_torch.py: PyTorch's log_softmax + gather on the same LM-head inputs, and
#      bench/attention_torch.py: its scaled_dot_product_attention on the causal shapes test_attention times (both
#      skip without torch).
# Output: stdout, and $OUT/test-cuda.txt when OUT is set. The closing line "test_cuda_all: N passed, N failed"
# adds up the binaries' own summary lines (a step that fails without one counts as one failure); the exit status
# is 1 on any failure. Without a usable GPU the tests say SKIP and the script exits 0, unless PPA_CUDA_REQUIRE=1.
# Environment: LIMIT (seconds for each test binary, 150), FULL (1: test_gpu_train without --small), SANITIZERS
# (compute-sanitizer's tools for step 2, default "memcheck"; "memcheck racecheck synccheck initcheck" runs all four:
# shared-memory races of the attention's and the reductions' tiles, barriers, reads of memory never written),
# MEMCHECK (1; 0 skips step 2, for a short loan: it is the slowest step), BENCH (1; 0 skips steps 3 and 4).
set -u
cd "$(dirname "$0")/.."
dir=${1:-build}
if [ -d "$dir/bin" ]; then bin=$dir/bin lib=$dir/lib; else bin=$dir/cuda-tests lib=$dir; fi
main() {
export LD_LIBRARY_PATH="$PWD/$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# a carried libgomp or libmvec only where this machine has none (they belong to its own compiler and glibc)
if [ -d "$lib/fallback" ]; then
  for l in "$lib"/fallback/*; do
    if ! /sbin/ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$(basename "$l") "; then
      echo "test-cuda: this machine has no $(basename "$l"): using the carried one"
      mkdir -p "$lib/use" && cp -f "$l" "$lib/use/" 2>/dev/null || true
    fi
  done
  [ -d "$lib/use" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$lib/use"
fi
export PPA_BF16=builtin # the CPU oracle's bf16 products: ppa's built-in kernel (no oneDNN on the GPU machine)
unset OPENBLAS_CORETYPE
tests=()
for t in "$bin"/test_*; do [ -x "$t" ] && [ -f "$t" ] && tests+=("$t"); done
if [ ${#tests[@]} -eq 0 ]; then
  echo "test-cuda: no test binaries in $bin (make cuda-tests, or make gpu-carry)"
  echo "test_cuda_all: 0 passed, 1 failed"
  exit 1
fi
echo "test-cuda: $(date -u '+%F %T') UTC, binaries in $bin, libraries from $lib"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
start=$SECONDS
pass=0 fail=0

# run LIMIT NAME CMD...: runs CMD under a time limit, adds its summary line; 77 (no GPU) is a SKIP
run() {
  local limit=$1 name=$2 out status line p f
  shift 2
  echo
  echo "---- $name: $* ($(( SECONDS - start )) s)"
  out=$(mktemp)
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$out"
  status=${PIPESTATUS[0]}
  line=$(grep -E '^[a-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
  rm -f "$out"
  if [ "$status" -eq 77 ]; then
    echo "$name: SKIP (no usable GPU)"
    [ "${PPA_CUDA_REQUIRE:-0}" = 1 ] && fail=$((fail + 1))
    return 77
  fi
  if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
    pass=$((pass + p)) fail=$((fail + f))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then fail=$((fail + 1)); echo "$name: exit status $status"; fi
  elif [ "$status" -ne 0 ]; then
    fail=$((fail + 1))
    [ "$status" -eq 124 ] || [ "$status" -eq 137 ] && echo "$name: over its ${limit} s limit"
    echo "$name: exit status $status, no summary line: counted as 1 failure"
  else
    pass=$((pass + 1))
  fi
  return "$status"
}

# 1. the tests
nogpu=0
for t in "${tests[@]}"; do
  # test_gpu_train in full (every objective x 20 steps on 8 cases, the CPU oracle's share) took over 80 s for its
  # first case on an H200: --small (every case, two objectives) unless FULL=1
  args=()
  [ "$(basename "$t")" = test_gpu_train ] && [ "${FULL:-0}" != 1 ] && args=(--small)
  run "${LIMIT:-150}" "$(basename "$t")" "$t" "${args[@]}"
  [ $? -eq 77 ] && nogpu=1 && break
done

if [ "$nogpu" = 0 ]; then
  # 2. compute-sanitizer on the small shapes
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ "${MEMCHECK:-1}" = 0 ]; then
    echo "memcheck: SKIP (MEMCHECK=0)"
  elif [ -n "$cs" ]; then
    for tool in ${SANITIZERS:-memcheck}; do
      for t in "${tests[@]}"; do
        small=--small; [ "$(basename "$t")" = test_gpu_train ] && small=--tiny # every launch is slow under memcheck
        run 240 "$tool $(basename "$t")" "$cs" --tool "$tool" --error-exitcode 3 "$t" $small
      done
    done
  else
    echo "memcheck: SKIP (no compute-sanitizer on PATH or in /usr/local/cuda/bin)"
  fi

  # the commands' GPU path with the real module: logprobs, score, eval, judge, train, reward and sft against the
  # CPU, reruns, resume across devices (tests/test_gpu_commands.sh, the checks make test runs on the stand-in)
  if [ -x "$dir/ppa" ]; then
    PPA_GPU_REAL=1 run 240 "gpu commands" bash tests/test_gpu_commands.sh "$dir" "$dir/ppa"
  else
    echo "gpu commands: SKIP (no $dir/ppa: make gpu-carry carries one)"
  fi

  # 3. the kernel benchmark, 4. PyTorch beside it
  if [ "${BENCH:-1}" = 0 ]; then echo "benchmark: SKIP (BENCH=0)"; else
  dump=$(mktemp -d)
  run 150 "benchmark" "$bin/test_cuda" --bench "$dump"
  py=$(command -v python3 || true)
  if [ -n "$py" ] && [ -f "$dump/meta.json" ]; then
    run 150 "pytorch lm-head" "$py" bench/cuda_lmhead_torch.py "$dump"
  else
    echo "pytorch lm-head: SKIP (no python3 or no benchmark dump)"
  fi
  # PyTorch's scaled_dot_product_attention on the plain causal shapes test_attention times (its TABLE lines above)
  [ -n "$py" ] && run 150 "pytorch attention" "$py" bench/attention_torch.py
  rm -rf "$dump"
  fi
fi

echo
echo "test-cuda: $(( SECONDS - start )) s"
echo "test_cuda_all: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
}

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  main 2>&1 | tee "$OUT/test-cuda.txt"
  exit "${PIPESTATUS[0]}"
fi
main
