#!/usr/bin/env bash
# tests/test_cuda_build.sh: the CUDA module's checks that need no GPU (tests/run.sh runs it; CI has no nvcc).
#   1. with nvcc (found as the Makefile finds it: on PATH, /usr/local/cuda/bin/nvcc, or NVCC=path): the module
#      builds (make cuda: build/libppa_cuda.so), the GPU test binaries link (make cuda-tests), and `nm -D` shows
#      every pc_* function the headers src/cuda/*.h declare; without nvcc these say SKIP;
#      and the GPU tests' own logic runs on the CPU: test_cuda and test_gpu_forward against a CPU stand-in of the
#      module (tests/cuda/mock, make cuda-mock) on their small shapes, all of their checks passing;
#   2. the engine's table of the module (src/device/pc_api.h) names exactly the pc_* functions src/cuda/*.h declare;
#   3. `make NVCC= all` (nvcc turned off) still builds, runs no nvcc, and says it skips the module in one line.
# Closing line "test_cuda_build: N passed, N failed"; exit 1 on a failure.
set -u
cd "$(dirname "$0")/.."
unset MAKEFLAGS MFLAGS MAKELEVEL # a make of its own, whatever make runs this script
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL test_cuda_build: $*"; }

nvcc=${NVCC-$(command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })}
if [ -n "$nvcc" ]; then
  if out=$(make -s cuda 2>&1); then ok; else bad "make cuda failed:"; echo "$out" | tail -n 30; fi
  if out=$(make -s cuda-tests 2>&1); then ok; else bad "make cuda-tests failed:"; echo "$out" | tail -n 30; fi
  for t in tests/cuda/test_*.c; do
    b=build/cuda-tests/$(basename "$t" .c)
    if [ -x "$b" ]; then ok; else bad "$b was not built"; fi
  done
  if [ -f build/libppa_cuda.so ]; then
    exported=$(nm -D --defined-only build/libppa_cuda.so | awk '$2 == "T" {print $3}' | sort -u)
    declared=$(grep -hE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]pc_[a-z0-9_]+\(' src/cuda/*.h | grep -oE 'pc_[a-z0-9_]+\(' | tr -d '(' | sort -u)
    n=0
    for f in $declared; do
      n=$((n + 1))
      if grep -qx "$f" <<<"$exported"; then ok; else bad "nm -D build/libppa_cuda.so: $f (declared in src/cuda/*.h) is not exported"; fi
    done
    [ "$n" -ge 20 ] && ok || bad "only $n pc_* declarations found in src/cuda/*.h"
    echo "test_cuda_build: $n pc_* functions declared, all checked in nm -D"
  else
    bad "build/libppa_cuda.so is missing"
  fi
  if out=$(make -s cuda-mock 2>&1); then
    ok
    # the GPU tests' own logic on the stand-in: each binary's closing line, all of its checks passing
    stand_in() { # NAME WHAT ARGS...: build/cuda-mock/NAME_mock ARGS
      local name=$1 what=$2 status line
      shift 2
      out=$(build/cuda-mock/${name}_mock "$@" 2>&1)
      status=$?
      line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed\$" <<<"$out" | tail -n 1)
      if [ "$status" -eq 0 ] && [ -n "$line" ]; then
        ok
        echo "test_cuda_build: $what against the CPU stand-in: ${line#$name: }"
      else
        bad "$what against the CPU stand-in (build/cuda-mock/${name}_mock $*): exit $status"
        grep -E '^FAIL|FATAL' <<<"$out" | head -n 20
      fi
    }
    stand_in test_cuda "the GPU tests" --small --no-limits
    # the GPU engine's test (its CPU-oracle comparisons; make test runs the engine itself in tests/test_gpu_engine.c)
    # PPA_MOCK_GUARD (tests/cuda/mock/mock.h): host code touching "device" memory faults, as it would on a GPU
    PPA_MOCK_GUARD=1 stand_in test_gpu_forward "the GPU engine's test" --small
    stand_in test_gpu_train "GPU training's test" --small   # gradients, steps and resume against the CPU engine
    PPA_MOCK_GUARD=1 stand_in test_gpu_decode "GPU decoding's test" --small # against the CPU's decoder and the forward
    # the guard itself: a host write into the stand-in's "device" memory faults with PPA_MOCK_GUARD=1, not without
    guard_probe() {
      python3 - build/cuda-mock/libppa_cuda_mock.so <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.pc_alloc.restype = ctypes.c_void_p
err = ctypes.create_string_buffer(256)
lib.pc_init(0, err, 256)
ctypes.memset(lib.pc_alloc(64), 0, 8)
PY
    }
    if (guard_probe) > /dev/null 2>&1; then ok; else bad "the stand-in without PPA_MOCK_GUARD: host code may touch its memory"; fi
    (PPA_MOCK_GUARD=1 guard_probe) > /dev/null 2>&1
    if [ $? -ge 128 ]; then ok; else bad "the stand-in with PPA_MOCK_GUARD=1: host code touching its memory must fault"; fi
    # the benchmark's code on toy shapes, and the PyTorch comparison on its dump (on the CPU) where torch is
    dump=$(mktemp -d)
    if out=$(build/cuda-mock/test_cuda_mock --bench "$dump" --bench-tiny --no-limits --reps 1 2>&1) && [ -s "$dump/meta.json" ]; then
      ok
    else
      bad "test_cuda_mock --bench --bench-tiny:"; echo "$out" | tail -n 20
    fi
    py=
    for p in python3 /usr/bin/python3; do
      if command -v "$p" >/dev/null && "$p" -c 'import torch, numpy' 2>/dev/null; then py=$p; break; fi
    done
    if [ -n "$py" ]; then
      if out=$(PPA_TORCH_DEVICE=cpu "$py" bench/cuda_lmhead_torch.py "$dump" 2>&1); then ok
      else bad "bench/cuda_lmhead_torch.py on the stand-in's dump:"; echo "$out" | tail -n 20; fi
    else
      echo "test_cuda_build: SKIP bench/cuda_lmhead_torch.py (no python3 with torch and numpy)"
    fi
    rm -rf "$dump"
  else
    bad "make cuda-mock failed:"; echo "$out" | tail -n 30
  fi
else
  echo "test_cuda_build: SKIP the module's build checks (no nvcc on PATH or in /usr/local/cuda/bin)"
fi

# the engine's table of the module's functions (src/device/pc_api.h) names every pc_* function the module's headers
# declare, and no other (their prototypes are checked by the compiler where the tests fill the table)
declared=$(grep -hE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]pc_[a-z0-9_]+\(' src/cuda/*.h | grep -oE 'pc_[a-z0-9_]+\(' |
  tr -d '(' | sort -u)
tabled=$(grep -oE 'X\([^,]+, pc_[a-z0-9_]+,' src/device/pc_api.h | grep -oE 'pc_[a-z0-9_]+' | sort -u)
if [ -n "$declared" ] && [ "$declared" = "$tabled" ]; then ok
else
  bad "src/device/pc_api.h and src/cuda/*.h differ: $(diff <(echo "$declared") <(echo "$tabled") | grep '^[<>]' |
    tr '\n' ' ')"
fi

# the build without nvcc: everything else as before, one line about the module, no nvcc run
if out=$(make -s NVCC= all 2>&1); then ok; else bad "make NVCC= all failed:"; echo "$out" | tail -n 30; fi
lines=$(grep -c "nvcc not found" <<<"$out")
[ "$lines" -eq 1 ] && ok || bad "make NVCC= all: $lines lines about skipping the module (want 1): $out"
if make -n NVCC= all 2>/dev/null | grep -v '^echo ' | grep -q nvcc; then bad "make NVCC= all would run nvcc"; else ok; fi
for target in cuda-tests test-cuda gpu-carry; do
  if make -s NVCC= "$target" >/dev/null 2>&1; then bad "make NVCC= $target succeeded without nvcc"; else ok; fi
done

echo "test_cuda_build: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
