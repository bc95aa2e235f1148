#!/usr/bin/env bash
# The scoring commands' GPU path end to end without a GPU: ppa loads the CPU
# stand-in of the CUDA module (BUILD/cuda-mock/libppa_cuda_mock.so, through
# PPA_CUDA_LIB) in place of libppa_cuda.so, so --device cuda runs the GPU
# engine (src/gpu) and the commands' wiring (device choice, model upload,
# batching by --batch-tokens, reference caches, output order) on the CPU. The
# kernels' own correctness on a real GPU is make test-cuda's.
# Checks: logprobs, score, eval and judge --reward-model on the "GPU" equal the
# CPU's (float32 within 1e-5 relative; bf16 within 2^-6 relative of the CPU
# bf16 engine, the bound the GPU engine's own test states), the same bytes
# whatever --batch-tokens and on a rerun, a cache written on the GPU read by a
# CPU run and the reverse (same precision: same key), a cache of another
# precision refused, the first log line saying where, a model the GPU engine
# cannot run refused naming why.
# Usage: tests/test_gpu_commands.sh BUILD_DIR PPA_BINARY. Prints "test_gpu_commands: N passed, N failed".
build=$(realpath "${1:-build}")
ppa=$(realpath "${2:-./ppa}")
NAME=test_gpu_commands
. "$(dirname "$0")/lib.sh"
mock=$build/cuda-mock/libppa_cuda_mock.so
if [ ! -f "$mock" ]; then
  bad "$mock is missing (make builds it)"
  report
  exit 1
fi
cd "$tmp" || exit 1
gpu() { PPA_CUDA_LIB=$mock "$ppa" "$@" --device cuda; }
cpu() { PPA_BF16=builtin "$ppa" "$@" --device cpu; }
tiny_model_files "$tmp"
# head size 64: the fused attention's (8 and 128 are the others the CPU runs)
python3 - <<'EOF'
import json
c = json.load(open('config.json'))
c.update(hidden_size=128, num_attention_heads=2, num_key_value_heads=1, intermediate_size=96)
json.dump(c, open('c64.json', 'w'))
c.update(architectures=['LlamaForSequenceClassification'], num_labels=2)
json.dump(c, open('rm.json', 'w'))
EOF
"$ppa" init --config c64.json --tokenizer tokenizer.json --out m --seed 5 --init-std 0.3 > /dev/null
"$ppa" init --config c64.json --tokenizer tokenizer.json --out m2 --seed 6 --init-std 0.3 > /dev/null
"$ppa" init --config rm.json --tokenizer tokenizer.json --out rm --seed 5 --init-std 0.3 > /dev/null
letter_lists > D.jsonl

# close A B BOUND: every number of the JSON Lines files A and B within BOUND relative (of max(1, |b|)), same shape
close() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
a, b, bound = sys.argv[1], sys.argv[2], float(sys.argv[3])
def nums(x):
    if isinstance(x, bool): return [float(x)]
    if isinstance(x, (int, float)): return [float(x)]
    if isinstance(x, list): return [v for y in x for v in nums(y)]
    if isinstance(x, dict): return [v for k in sorted(x) for v in nums(x[k])]
    return []
la = [json.loads(l) for l in open(a)]
lb = [json.loads(l) for l in open(b)]
na = [v for x in la for v in nums(x)]
nb = [v for x in lb for v in nums(x)]
worst = max((abs(x - y) / max(1.0, abs(y)) for x, y in zip(na, nb)), default=0.0)
ok = len(la) == len(lb) and len(na) == len(nb) and len(na) > 0 and worst <= bound
print(f"{a} vs {b}: {len(na)} numbers, worst relative difference {worst:.3g} (bound {bound:g})")
sys.exit(0 if ok else 1)
EOF
}

for p in fp32 bf16; do
  bound=1e-5; [ $p = bf16 ] && bound=0.015625
  gpu logprobs --model m --data D.jsonl --template none --precision $p > g_$p.out 2> err.txt
  expect "logprobs $p on the GPU path: exit 0" test $? -eq 0
  expect "logprobs $p: the first log line says cuda and the precision" \
    sh -c "head -1 err.txt | grep -q '^ppa logprobs: device: cuda: CPU mock of libppa_cuda.so .*, $( [ $p = bf16 ] && echo bf16 || echo float32) products'"
  cpu logprobs --model m --data D.jsonl --template none --precision $p > c_$p.out 2> /dev/null
  expect "logprobs $p: the GPU path equals the CPU within $bound" close g_$p.out c_$p.out $bound
done
gpu logprobs --model m --data D.jsonl --template none --batch-tokens 20 > small.out 2> /dev/null
gpu logprobs --model m --data D.jsonl --template none --batch-tokens 100000 > big.out 2> /dev/null
expect "logprobs: the same bytes whatever --batch-tokens" sh -c "cmp -s small.out big.out && cmp -s small.out g_bf16.out"
gpu logprobs --model m --data D.jsonl --template none > again.out 2> /dev/null
expect "logprobs: a rerun gives the same bytes" cmp -s again.out g_bf16.out
"$ppa" logprobs --model m --data D.jsonl --template none --device cpu --batch-tokens 0 > /dev/null 2> err.txt
expect "--batch-tokens 0 is the device's default" test $? -eq 0
"$ppa" logprobs --model m --data D.jsonl --template none --batch-tokens -1 > /dev/null 2> err.txt
expect "--batch-tokens -1 is refused" sh -c "test $? -eq 2 && grep -q 'batch-tokens' err.txt"

# reference caches: the same key on both sides in the same precision
gpu score --model m --data D.jsonl --template none --precision fp32 --out g32.cache > /dev/null 2>&1
cpu score --model m --data D.jsonl --template none --precision fp32 --out c32.cache > /dev/null 2>&1
T=(--model m --data D.jsonl --template none --list-size 3 --batch-size 2 --lr 0.01 --max-steps 2)
cpu train "${T[@]}" --ref-cache g32.cache --out t1 > /dev/null 2> err.txt
expect "a cache written on the GPU path (fp32) is read by a CPU ppa train" sh -c "test $? -eq 0 && grep -q 'reference log-probs from\\|' err.txt && test -s t1/config.json"
gpu eval --model m2 --ref m --data D.jsonl --template none --precision fp32 --ref-cache c32.cache > ge.out 2> err.txt
expect "a cache written on the CPU is read by eval on the GPU path" test $? -eq 0 -a -s ge.out
cpu eval --model m2 --ref m --data D.jsonl --template none --precision fp32 --ref-cache c32.cache > ce.out 2> /dev/null
expect "eval on the GPU path equals the CPU's" close ge.out ce.out 1e-5
gpu score --model m --data D.jsonl --template none --out g16.cache > /dev/null 2> err.txt
expect "score's default on the GPU is bf16" grep -q "bf16 products" err.txt
cpu train "${T[@]}" --ref-cache g16.cache --out t2 > /dev/null 2> err.txt
expect "a bf16 cache is refused by a float32 CPU run, naming why" sh -c "test $? -eq 2 && grep -q 'does not belong to this run' err.txt"

# a reward model judged on the GPU path
echo '{"prompt": "q1", "responses": ["aa", "b", "abc"]}' > J.jsonl
gpu judge --reward-model rm --data J.jsonl --template none --precision fp32 > gj.out 2> /dev/null
cpu judge --reward-model rm --data J.jsonl --template none --precision fp32 > cj.out 2> /dev/null
expect "judge --reward-model on the GPU path equals the CPU's" close gj.out cj.out 1e-5

# what the GPU engine cannot run: refused with why (cuda), the CPU with auto
"$ppa" init --config config.json --tokenizer tokenizer.json --out m8 --seed 5 > /dev/null
gpu logprobs --model m8 --data D.jsonl --template none > /dev/null 2> err.txt
expect "head size 8 on the GPU path: refused naming why" sh -c "test $? -eq 2 && grep -q 'head sizes 64 and 128' err.txt"
PPA_CUDA_LIB=$mock "$ppa" generate --model m --prompts /dev/null --device cuda > /dev/null 2> err.txt
expect "a command that does not run on the GPU refuses --device cuda" grep -q "does not run on the GPU yet" err.txt
PPA_CUDA_LIB=$mock "$ppa" logprobs --model m --data D.jsonl --template none > auto.out 2> err.txt
expect "auto with a usable GPU runs there" sh -c "head -1 err.txt | grep -q 'device: cuda' && cmp -s auto.out g_bf16.out"
report
