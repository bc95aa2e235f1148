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
    broken) expect "module broken: names the library that does not load" grep -q "the CUDA module does not load: libppastubdep.so" err.txt ;;
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
report
