#!/usr/bin/env bash
# Runs every test binary of a build and the CLI tests, then prints the total
# as the closing line "N passed, N failed". Usage: tests/run.sh BUILD_DIR PPA_BINARY
set -u
# The tests run on the matrix-product kernels ppa chooses itself: a workplace
# OPENBLAS_CORETYPE (e.g. Haswell on an AVX-512 machine) would make batch
# invariance (test_train) depend on the environment. test_gemm sets it
# explicitly where it tests how a user's value is obeyed.
unset OPENBLAS_CORETYPE
# bf16 products run on oneDNN only where the CPU has AVX512-BF16 (elsewhere --precision bf16 is refused, as
# test_precision checks); on other CPUs every bf16 test runs the built-in kernel, the fallback PPA_BF16=builtin
# gives users there
if ! grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  export PPA_BF16=builtin
  echo "note: this CPU has no AVX512-BF16: the bf16 tests run the built-in kernel (PPA_BF16=builtin), not oneDNN"
fi
build=${1:-build}
ppa=${2:-./ppa}
cd "$(dirname "$0")/.."
total_pass=0
total_fail=0
run() {
  local out status t0=$SECONDS
  out=$("$@" 2>&1)
  status=$?
  echo "$out" | grep -v '^[a-z0-9_]*: [0-9]* passed, [0-9]* failed$' | tail -n 40
  local line
  line=$(echo "$out" | grep -E '^[a-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
  if [ -z "$line" ]; then
    echo "$1: no summary line (exit status $status): counted as 1 failure"
    total_fail=$((total_fail + 1))
    return
  fi
  echo "$line ($((SECONDS - t0)) s)"
  local p f
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then total_fail=$((total_fail + 1)); fi
}
for t in "$build"/tests/test_*; do
  [ -x "$t" ] && run "$t"
done
# the bf16 products on every instruction set oneDNN can run them with on this CPU, below the one it picks by itself
# (AMX, then AVX512-BF16, then its AVX512 emulation: each picks other kernels and blockings; row invariance and
# determinism must hold on each): ONEDNN_MAX_CPU_ISA caps it
if [ "$build" = build ] && [ -x "$build/tests/test_bf16" ] && [ -z "${PPA_BF16:-}" ]; then
  caps="AVX512_CORE"
  grep -qw amx_bf16 /proc/cpuinfo 2>/dev/null && caps="AVX512_CORE_BF16 AVX512_CORE"
  for cap in $caps; do
    echo "test_bf16 with oneDNN capped at $cap:"
    run env ONEDNN_MAX_CPU_ISA=$cap "$build/tests/test_bf16"
  done
fi
# the bf16 products' built-in fallback (what runs where oneDNN is missing, by choice)
[ -x "$build/tests/test_bf16" ] && run env PPA_BF16=builtin "$build/tests/test_bf16"
[ -x "$build/tests/test_attn_bf16" ] && run env PPA_BF16=builtin "$build/tests/test_attn_bf16"
# gemm_seq's portable packing and tile loops (what runs on a CPU without AVX2)
[ -x "$build/tests/test_gemm_seq" ] && run env PPA_GEMM_SEQ=scalar "$build/tests/test_gemm_seq"
run bash tests/test_cli.sh "$ppa"
run bash tests/test_train_cli.sh "$ppa"
run bash tests/test_noop.sh "$ppa"
run bash tests/test_judge.sh "$ppa"
run bash tests/test_reward.sh "$ppa"
run bash tests/test_lora.sh "$ppa"
run bash tests/test_hf_folder.sh "$ppa"
run bash tests/test_mpi.sh "$ppa" "$build/ppa-hooks"
run bash tests/test_winrate.sh "$ppa"
run bash tests/test_generate.sh "$ppa"
run bash tests/test_progress.sh "$ppa"
run bash tests/test_hostile.sh "$ppa"
run bash tests/test_outputs.sh "$ppa"
run bash tests/test_bounds.sh "$ppa"
run bash tests/test_sft_formats.sh "$ppa"
run bash tests/test_parquet.sh "$ppa"
run bash tests/test_train_log.sh "$ppa"
run bash tests/test_tensorboard.sh "$ppa"
run bash tests/test_eval_formats.sh "$ppa"
run bash tests/test_files.sh "$ppa"
run bash tests/test_device.sh "$ppa"
run bash tests/test_gpu_commands.sh "$build" "$ppa"
run bash tests/test_precision.sh "$ppa"
# the README's commands as it writes them (its quickstart and table run on a tiny model; make -n of its targets)
[ "$build" = build ] && run bash tests/test_readme.sh "$ppa"
# the demo's pipeline runs some 60 ppa processes; under ASan that takes minutes, and every command it runs is
# checked under ASan by the tests above
[ "$build" = build ] && run bash tests/test_demo.sh "$ppa"
# the CUDA module's checks without a GPU (it is built in build/ only): it compiles, its GPU tests link and run
# against a CPU stand-in, and the build with nvcc turned off still works
[ "$build" = build ] && run bash tests/test_cuda_build.sh
echo "$build: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
