#!/usr/bin/env bash
# Where a command computes (--device auto|cpu|cuda) on a machine without a
# usable GPU, which is where make test runs: ppa starts and runs on the CPU
# with the CUDA module absent, present, or unable to load its libraries;
# --device cuda is refused naming why; auto runs on the CPU and says so in
# its first log line; the option is read from recipes and refused when
# unknown. The GPU's own checks are make test-cuda's.
# Usage: tests/test_device.sh PPA_BINARY. Prints "test_device: N passed, N failed".
ppa=$(realpath "${1:-./ppa}")
NAME=test_device
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 > /dev/null
letter_lists > D.jsonl
"$ppa" logprobs --model m --data D.jsonl --template none --device cpu > cpu.out 2> err.txt
expect "--device cpu runs" test $? -eq 0 -a -s cpu.out
expect "and says so first" sh -c "head -1 err.txt | grep -qx 'ppa logprobs: device: cpu'"

# the module beside the binary (when this build has one), missing, or failing to load its libraries
cp "$ppa" alone && chmod +x alone
cases="absent"
[ -e "$(dirname "$ppa")/build/libppa_cuda.so" ] || [ -e "$(dirname "$ppa")/libppa_cuda.so" ] && cases="present absent"
# a stand-in module that needs a library no longer there: dlopen fails as it does when NVIDIA's are missing
printf 'int pc_stub_dep(void) { return 1; }\n' > dep.c && printf 'int pc_stub_dep(void);\nint pc_init(void) { return pc_stub_dep(); }\n' > mod.c
if cc -shared -fPIC dep.c -o libppastubdep.so && cc -shared -fPIC mod.c -L. -lppastubdep -o broken.so; then
  rm libppastubdep.so
  cases="$cases broken"
else
  bad "could not build the stand-in module"
fi
for c in $cases; do
  bin=$ppa env=()
  [ "$c" = absent ] && bin=$tmp/alone
  [ "$c" = broken ] && env=(PPA_CUDA_LIB="$tmp/broken.so")
  env "${env[@]}" "$bin" logprobs --model m --data D.jsonl --template none > auto.out 2> err.txt
  expect "module $c: --device auto runs on the CPU" sh -c "test $? -eq 0 && cmp -s auto.out cpu.out"
  expect "module $c: auto says where, first" sh -c "head -1 err.txt | grep -q '^ppa logprobs: device: cpu (--device auto'"
  env "${env[@]}" "$bin" logprobs --model m --data D.jsonl --template none --device cuda > out.txt 2> err.txt
  rc=$?
  expect "module $c: --device cuda refused (exit 2)" test $rc -eq 2
  expect "module $c: nothing printed" test ! -s out.txt
  case $c in
    absent) expect "module absent: says no module was built" grep -q "no CUDA module: this ppa was built without nvcc" err.txt ;;
    broken) expect "module broken: names the module and the library that does not load" grep -q "the CUDA module does not load: .*broken.so: libppastubdep.so" err.txt ;;
    present) expect "module present: says why no GPU is usable here (no driver or no device), or that the command does not run there yet" \
      grep -qE -- "--device cuda: (no NVIDIA driver|no CUDA device|no usable CUDA|.* is usable, but ppa logprobs does not run on the GPU yet)" err.txt ;;
  esac
done

# every model command takes it; a recipe sets it; a wrong value is refused
for cmd in logprobs grad sft train reward score eval generate judge winrate; do
  "$ppa" $cmd --help | grep -q -- "--device D" || bad "$cmd --help lists --device"
  ok
done
printf 'device: cpu\n' > r.yaml
"$ppa" train --config r.yaml --model m --data D.jsonl --template none --list-size 3 --batch-size 2 --max-steps 1 --warmup-ratio 0 --out o > /dev/null 2> err.txt
expect "a recipe's device: cpu is read" sh -c "test $? -eq 0 && grep -q '\"device\":\"cpu\"' o/train_options.json"
"$ppa" logprobs --model m --data D.jsonl --template none --device tpu > /dev/null 2> err.txt
expect "an unknown device is refused with the choices" sh -c "test $? -eq 2 && grep -q \"cannot use 'tpu': expected auto, cpu or cuda\" err.txt"
# -- code is loaded only from where the user or the installer put it (docs/safety.md): a module planted where others
# may write is never opened; a candidate that others could change is refused naming why; the message lists the
# search order. The planted module's constructor leaves a marker: no marker, no code of it ran.
mkdir -p plant/x plant/lib
cp "$ppa" plant/x/ppa
printf '#include <stdio.h>\n__attribute__((constructor)) static void planted(void) { FILE *f = fopen(MARK, "w"); if (f) fclose(f); }\n' > planted.c
planted() { cc -shared -fPIC -DMARK="\"$tmp/$2\"" planted.c -o "$1"; }
if planted plant/lib/libppa_cuda.so ran_lib; then
  # a model with heads of 64, which --device auto offers to the GPU engine
  sed 's/"hidden_size": 32/"hidden_size": 128/; s/"num_attention_heads": 4/"num_attention_heads": 2/; s/"num_key_value_heads": 2/"num_key_value_heads": 1/' config.json > c64.json
  "$ppa" init --config c64.json --tokenizer tokenizer.json --out m64 --seed 7 > /dev/null
  for dev in auto cuda; do
    plant/x/ppa logprobs --model m64 --data D.jsonl --template none --device $dev > /dev/null 2> err.txt; st=$?
    expect "a module in ../lib is never opened (--device $dev)" test ! -e ran_lib
    [ $dev = auto ] && expect "... and auto runs on the CPU" test $st -eq 0
    [ $dev = cuda ] && expect "... and cuda is refused (exit 2), listing where it looked" sh -c "test $st -eq 2 &&
      grep -qF 'no CUDA module: this ppa was built without nvcc (looked in: PPA_CUDA_LIB (unset), $tmp/plant/x/libppa_cuda.so, $tmp/plant/x/build/libppa_cuda.so;' err.txt"
  done
  # beside the binary, but writable by others, then by the group: refused, not run
  planted plant/x/libppa_cuda.so ran_beside
  for mode in 0666 0664; do
    chmod $mode plant/x/libppa_cuda.so
    plant/x/ppa logprobs --model m64 --data D.jsonl --template none --device cuda > /dev/null 2> err.txt; st=$?
    who=others; [ $mode = 0664 ] && who="its group"
    expect "mode $mode beside the binary: refused (exit 2), not run" sh -c "test $st -eq 2 && test ! -e ran_beside"
    expect "... naming the file and why" grep -qF "the CUDA module is refused: $tmp/plant/x/libppa_cuda.so is writable by $who (mode $mode; chmod go-w it): ppa loads code only from files that only you or root can change" err.txt
  done
  # the same file at mode 0644 is loaded (the check above is the mode, nothing else), then found not to be ppa's
  chmod 0644 plant/x/libppa_cuda.so
  plant/x/ppa logprobs --model m64 --data D.jsonl --template none --device cuda > /dev/null 2> err.txt
  expect "mode 0644 beside the binary: loaded (its constructor ran)" test -e ran_beside
  expect "... and found not to be ppa's" grep -q "is not ppa's CUDA module (no pc_init)" err.txt
  # PPA_CUDA_LIB under the same rule
  planted env.so ran_env && chmod 0620 env.so
  PPA_CUDA_LIB=$tmp/env.so "$ppa" logprobs --model m64 --data D.jsonl --template none --device cuda > /dev/null 2> err.txt
  expect "PPA_CUDA_LIB writable by the group: refused, not run" sh -c "test ! -e ran_env && grep -qF '$tmp/env.so is writable by its group (mode 0620' err.txt"
  if [ "$(id -u)" = 0 ] && chown 65534 env.so 2> /dev/null && chmod 0644 env.so; then
    PPA_CUDA_LIB=$tmp/env.so "$ppa" logprobs --model m64 --data D.jsonl --template none --device cuda > /dev/null 2> err.txt
    expect "PPA_CUDA_LIB owned by another user: refused, not run" sh -c "test ! -e ran_env && grep -qF '$tmp/env.so is owned by another user (uid 65534)' err.txt"
  else
    echo "SKIP $NAME: not root: the other owner's module is not checked (chown needs root)"
  fi
  # two libraries loaded by path in one process (OpenBLAS by PPA_BLAS, then the module): each is itself (a descriptor's
  # /proc/self/fd/N name reused made dlopen return the first library for the second)
  mock=$(dirname "$ppa")/build/cuda-mock/libppa_cuda_mock.so
  blas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
  if [ -f "$mock" ] && [ -f "$blas" ]; then
    PPA_BLAS=$blas PPA_CUDA_LIB=$mock "$ppa" logprobs --model m64 --data D.jsonl --template none --threads 1 > /dev/null 2> err.txt
    expect "OpenBLAS and the module both by path: the module is the module" grep -q "device: cuda: CPU mock" err.txt
  else
    echo "SKIP $NAME: no stand-in module or no OpenBLAS at $blas: two libraries by path not checked"
  fi
  # PPA_BLAS names a path: the same rule (a refused library leaves the built-in kernel, with the reason)
  planted blas.so ran_blas && chmod 0666 blas.so
  PPA_BLAS=$tmp/blas.so "$ppa" logprobs --model m --data D.jsonl --template none --device cpu > /dev/null 2> err.txt
  expect "PPA_BLAS=path writable by others: not run, and said" sh -c "test ! -e ran_blas && grep -qF '$tmp/blas.so is writable by others' err.txt"
else
  bad "could not build the planted module"
fi
report
