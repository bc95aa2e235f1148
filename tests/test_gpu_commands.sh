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
# The same checks run on a GPU with the real module (scripts/test-cuda.sh): PPA_GPU_REAL=1, PPA_BINARY a ppa that
# finds its module (make gpu-carry's, the module beside it); the tolerances are the ones the engine's GPU tests
# state for the real kernels.
# Usage: tests/test_gpu_commands.sh BUILD_DIR PPA_BINARY. Prints "test_gpu_commands: N passed, N failed".
build=$(realpath "${1:-build}")
ppa=$(realpath "${2:-./ppa}")
repo=$(cd "$(dirname "$0")/.." && pwd)
NAME=test_gpu_commands
. "$(dirname "$0")/lib.sh"
mock=$build/cuda-mock/libppa_cuda_mock.so
if [ "${PPA_GPU_REAL:-0}" = 1 ]; then
  lib=(env) devname='.*'
else
  # PPA_MOCK_GUARD: "device" memory is closed to host code outside the stand-in (tests/cuda/mock/mock.h), so a
  # host read of a device pointer, a crash on a GPU, faults here too
  lib=(env "PPA_CUDA_LIB=$mock" PPA_MOCK_GUARD=1) devname='CPU mock of libppa_cuda.so .*'
fi
if [ "${PPA_GPU_REAL:-0}" != 1 ] && [ ! -f "$mock" ]; then
  bad "$mock is missing (make builds it)"
  report
  exit 1
fi
cd "$tmp" || exit 1
gpu() { "${lib[@]}" "$ppa" "$@" --device cuda; }
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
    sh -c "head -1 err.txt | grep -q '^ppa logprobs: device: cuda: $devname, $( [ $p = bf16 ] && echo bf16 || echo float32) products'"
  cpu logprobs --model m --data D.jsonl --template none --precision $p > c_$p.out 2> /dev/null
  expect "logprobs $p: the GPU path equals the CPU within $bound" close g_$p.out c_$p.out $bound
done
gpu logprobs --model m --data D.jsonl --template none --batch-tokens 20 > small.out 2> /dev/null
gpu logprobs --model m --data D.jsonl --template none --batch-tokens 100000 > big.out 2> /dev/null
if [ "${PPA_GPU_REAL:-0}" = 1 ]; then
  # a GPU's products pick their algorithm by the rows sharing the call (src/cuda/matmul.h): another batching
  # rounds in other orders, within the precision's tolerance; the bits are printed when they match
  cmp -s small.out big.out && cmp -s small.out g_bf16.out && echo "logprobs: --batch-tokens 20 and 100000: the same bytes"
  close small.out big.out 0.015625 && close small.out g_bf16.out 0.015625
  expect "logprobs: whatever --batch-tokens, within bf16's 2^-6" test $? -eq 0
else # the stand-in's products do not depend on the batch, like the CPU's
  expect "logprobs: the same bytes whatever --batch-tokens" sh -c "cmp -s small.out big.out && cmp -s small.out g_bf16.out"
fi
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

# ---- training on the GPU path: train, reward and sft with --device cuda (src/gpu's gpu_train.h)
# track A B BOUND KEY...: the fields KEY of every line of the JSON Lines logs A and B within BOUND of max(1, |b|)
track() {
  python3 - "$@" <<'PY'
import json, sys
a, b, bound, keys = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
la = [json.loads(l) for l in open(a) if l.startswith('{"step"')]  # not the closing summary
lb = [json.loads(l) for l in open(b) if l.startswith('{"step"')]
worst = max((abs(x[k] - y[k]) / max(1.0, abs(y[k])) for x, y in zip(la, lb) for k in keys), default=float('inf'))
print(f"{a} vs {b}: {len(la)} lines, {' '.join(keys)}: worst relative difference {worst:.3g} (bound {bound:g})")
sys.exit(0 if len(la) == len(lb) and len(la) > 0 and worst <= bound else 1)
PY
}
# step1_zero WHAT LOG PRECISION: at step 1 the policy is the reference, so every score s = beta (logp - ref) is 0:
# exactly on the stand-in (its products do not depend on the batch, as the CPU's); on a GPU the reference pass
# and the training pass batch the rows differently and their products round in other orders (src/cuda/matmul.h),
# so the mean reward and margin are within beta x the log-probs' tolerance: 0.1 x (1e-5 x |logp| of about 60)
# rounded up to 1e-4 in float32, 0.1 x 2^-6 x 60 rounded down to 0.05 in bf16
step1_zero() {
  local bound=1e-4
  [ "$3" = bf16 ] && bound=0.05
  if [ "${PPA_GPU_REAL:-0}" = 1 ]; then
    python3 - "$2" "$bound" <<'PY'
import json, sys
l = json.loads(open(sys.argv[1]).readline())
print(f"step 1: reward {l['reward']:.3g}, margin {l['margin']:.3g} (bound {sys.argv[2]})")
sys.exit(0 if l["step"] == 1 and abs(l["reward"]) <= float(sys.argv[2]) and abs(l["margin"]) <= float(sys.argv[2]) else 1)
PY
    expect "$1: step 1 on the GPU path: policy = reference, every score 0 within $bound" test $? -eq 0
  else
    expect "$1: step 1 on the GPU path: policy = reference, every score exactly 0" \
      grep -q '^{"step": 1, .*"reward": 0, "margin": 0' "$2"
  fi
}
TR=(--model m --data D.jsonl --template none --list-size 3 --batch-size 2 --lr 0.001 --max-steps 4 --save-every 2)
for p in fp32 bf16; do
  # bounds: the GPU engine's gradients are within 1e-5 (fp32) and a few 2^-8 (bf16) of the CPU's
  # (tests/cuda/test_gpu_train.c: the median tensor 2e-5 of its norm, each 1e-4; bf16 2^-4): step 1's gradient
  # norm (no update yet) within 3e-5 and 2^-7, and the losses of
  # four AdamW steps within 1e-4 and 0.05. Later gradient norms are not compared: on this small hot model they
  # move by tens of percent with the last bits of the first update (the CPU's own bf16 and float32 runs differ
  # by 87% at step 4)
  bound=1e-4 gbound=3e-5; [ $p = bf16 ] && bound=0.05 gbound=0.0078125
  gpu train "${TR[@]}" --precision $p --out gt_$p > /dev/null 2> err.txt
  expect "train $p on the GPU path: exit 0, the first line says cuda" \
    sh -c "test $? -eq 0 && head -1 err.txt | grep -q '^ppa train: device: cuda'"
  cpu train "${TR[@]}" --precision $p --out ct_$p > /dev/null 2>&1
  expect "train $p: every step's loss tracks the CPU's" track gt_$p/train_log.jsonl ct_$p/train_log.jsonl $bound loss
  head -1 gt_$p/train_log.jsonl > g1.jsonl && head -1 ct_$p/train_log.jsonl > c1.jsonl
  expect "train $p: step 1's gradient norm is the CPU's" track g1.jsonl c1.jsonl $gbound grad_norm
  step1_zero "train $p" gt_$p/train_log.jsonl $p
  expect "train $p: the log gives the GPU's peak memory" grep -q '"gpu_peak_gib": [0-9]' gt_$p/train_log.jsonl
done
gpu train "${TR[@]}" --out gt_again > /dev/null 2>&1
expect "train on the GPU path: a rerun gives the same weights" cmp -s gt_bf16/model.safetensors gt_again/model.safetensors
gpu train "${TR[@]}" --gradient-checkpointing --out gt_gc > /dev/null 2>&1
expect "train on the GPU path: --gradient-checkpointing gives the same weights" \
  cmp -s gt_bf16/model.safetensors gt_gc/model.safetensors
mkdir gr && cp -r gt_bf16/checkpoint-2 gr/
gpu train "${TR[@]}" --out gr --resume gr/checkpoint-2 > /dev/null 2> err.txt
expect "a GPU run resumed from its checkpoint = the uninterrupted GPU run, bit for bit" \
  sh -c "grep -q 'resuming at step 2' err.txt && cmp -s gt_bf16/model.safetensors gr/model.safetensors"
mkdir gc && cp -r gt_bf16/checkpoint-2 gc/
cpu train "${TR[@]}" --precision bf16 --out gc --resume gc/checkpoint-2 > /dev/null 2> err.txt
expect "a checkpoint written on the GPU path resumes on the CPU" sh -c "test $? -eq 0 && test -s gc/model.safetensors"
grep '^{"step"' gt_bf16/train_log.jsonl | tail -2 > gt_tail.jsonl
expect "... its steps 3 and 4 within 0.05 of the GPU run's" track gc/train_log.jsonl gt_tail.jsonl 0.05 loss
mkdir cg && cp -r ct_bf16/checkpoint-2 cg/
gpu train "${TR[@]}" --out cg --resume cg/checkpoint-2 > /dev/null 2> err.txt
grep '^{"step"' ct_bf16/train_log.jsonl | tail -2 > ct_tail.jsonl
expect "a checkpoint written on the CPU resumes on the GPU path, tracking the CPU run" \
  track cg/train_log.jsonl ct_tail.jsonl 0.05 loss
R=(--model rm --data D.jsonl --template none --list-size 3 --batch-size 2 --lr 0.001 --max-steps 3 --precision fp32)
gpu reward "${R[@]}" --out rg > /dev/null 2> err.txt
expect "reward on the GPU path: exit 0" sh -c "test $? -eq 0 && grep -q 'device: cuda' err.txt"
cpu reward "${R[@]}" --out rc > /dev/null 2>&1
expect "reward on the GPU path tracks the CPU's" track rg/train_log.jsonl rc/train_log.jsonl 1e-4 loss
S=(--model m --data D.jsonl --template none --max-steps 3 --lr 0.001 --precision fp32)
gpu sft "${S[@]}" --out sg > sg.log 2> err.txt
expect "sft on the GPU path: exit 0" sh -c "test $? -eq 0 && grep -q 'device: cuda' err.txt"
cpu sft "${S[@]}" --out sc > sc.log 2> /dev/null
expect "sft on the GPU path tracks the CPU's" track sg.log sc.log 1e-4 loss
# LoRA: the base frozen on the GPU, the adapter trained there (dropout masks the CPU's), PEFT folders both ways
LR=(--lora-r 4 --lora-dropout 0.1)
for p in fp32 bf16; do
  bound=1e-4; [ $p = bf16 ] && bound=0.05
  gpu train "${TR[@]}" "${LR[@]}" --precision $p --out gl_$p > /dev/null 2> err.txt
  rc=$?
  [ $rc -eq 0 ] || tail -3 err.txt
  expect "LoRA train $p on the GPU path: exit 0, an adapter folder" \
    sh -c "test $rc -eq 0 && test -s gl_$p/adapter_model.safetensors && grep -q 'LoRA r 4' err.txt"
  cpu train "${TR[@]}" "${LR[@]}" --precision $p --out cl_$p > /dev/null 2>&1
  expect "LoRA train $p: every step's loss tracks the CPU's" track gl_$p/train_log.jsonl cl_$p/train_log.jsonl $bound loss
  step1_zero "LoRA train $p (the reference: the base with the adapter off)" gl_$p/train_log.jsonl $p
done
gpu logprobs --model m --adapter cl_bf16 --data D.jsonl --template none > gla.out 2> err.txt
expect "logprobs --adapter on the GPU path: a CPU-written adapter" sh -c "test $? -eq 0 && grep -q 'device: cuda' err.txt"
cpu logprobs --model m --adapter cl_bf16 --data D.jsonl --template none --precision bf16 > cla.out 2> /dev/null
expect "... equals the CPU's within 2^-6" close gla.out cla.out 0.015625
"$ppa" merge --model m --adapter gl_fp32 --out merged > /dev/null 2>&1
gpu logprobs --model merged --data D.jsonl --template none --precision fp32 > mg.out 2> /dev/null
gpu logprobs --model m --adapter gl_fp32 --data D.jsonl --template none --precision fp32 > ma.out 2> /dev/null
expect "a GPU-trained adapter merged (ppa merge) scores on the GPU path as the adapter does, within 1e-5" \
  close mg.out ma.out 1e-5
mkdir glr && cp -r gl_bf16/checkpoint-2 glr/
cpu train "${TR[@]}" "${LR[@]}" --precision bf16 --out glr --resume glr/checkpoint-2 > /dev/null 2> err.txt
expect "a LoRA checkpoint written on the GPU path resumes on the CPU" sh -c "test $? -eq 0 && test -s glr/adapter_model.safetensors"
mkdir glg && cp -r gl_bf16/checkpoint-2 glg/
gpu train "${TR[@]}" "${LR[@]}" --out glg --resume glg/checkpoint-2 > /dev/null 2> err.txt
expect "a LoRA GPU run resumed from its checkpoint = the uninterrupted one, bit for bit" \
  cmp -s glg/adapter_model.safetensors gl_bf16/adapter_model.safetensors
"${lib[@]}" "$ppa" train "${TR[@]}" --out ga > /dev/null 2> err.txt
expect "train with auto and a usable GPU runs there" \
  sh -c "head -1 err.txt | grep -q 'device: cuda' && cmp -s ga/model.safetensors gt_bf16/model.safetensors"

# several processes training on the GPU path: the gradients added up through the host (MPI), as on the CPU (on a
# machine of one GPU the two ranks share it, so the host's sums there too: the ranks know it by the GPU's identity)
if [ "${PPA_GPU_REAL:-0}" = 1 ]; then
  mx=(-x LD_LIBRARY_PATH) host_why="ranks 0 and 1 share one GPU (GPU-"
else
  mx=(-x PPA_CUDA_LIB="$mock") host_why="ranks 0 and 1 share one GPU (MOCK-GPU-0)"
fi
if command -v mpirun > /dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
  M=(--model m --data D.jsonl --template none --list-size 3 --batch-size 4 --lr 0.001 --max-steps 3 --precision fp32
     --save-every 2)
  # gtrain NP OUT [VAR=VALUE ...] [-- ARG ...]: ppa train on the GPU path under mpirun -np NP into OUT, each VAR=VALUE
  # passed to the ranks (-x), each ARG after the train's own; BIN: the binary (default ppa)
  gtrain() {
    local np=$1 out=$2 x=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do x+=(-x "$1"); shift; done
    [ $# -gt 0 ] && shift
    timeout 300 mpirun -np "$np" "${mx[@]}" "${x[@]}" "${BIN:-$ppa}" train "${M[@]}" --out "$out" --device cuda "$@"
  }
  timeout 300 mpirun -np 2 "${mx[@]}" "$ppa" train "${M[@]}" --out mg2 --device cuda > /dev/null 2> err.txt
  expect "mpirun -np 2 train on the GPU path: exit 0, 2 ranks" sh -c "test $? -eq 0 && grep -q '2 ranks (MPI)' err.txt"
  expect "... the gradients through the host, saying why ($host_why)" \
    grep -q "the 2 ranks' gradients are summed through the host (MPI): $host_why" err.txt
  if [ "${PPA_GPU_REAL:-0}" != 1 ]; then
    # a GPU of its own for each rank, each seeing it as GPU 0 (Slurm's CUDA_VISIBLE_DEVICES): known by its identity,
    # so the ranks vote on NCCL (every rank loads it first), which the stand-in lacks: the host path, saying why
    gtrain 2 mgu PPA_MOCK_GPU_PER_RANK=1 > /dev/null 2> err.txt
    expect "mpirun -np 2, a GPU each all seen as GPU 0: not taken for one shared GPU; NCCL missing on a rank said" \
      sh -c "test $? -eq 0 && grep -q \"the 2 ranks' gradients are summed through the host (MPI): rank 0: NCCL: the CPU stand-in\" err.txt"
    # NCCL on rank 0 only: rank 1 votes no before anyone joins, and rank 0 names it
    gtrain 2 mgv PPA_MOCK_GPU_PER_RANK=1 PPA_MOCK_NCCL_LOADS=0 > /dev/null 2> err.txt
    expect "mpirun -np 2, NCCL on rank 0 only: every rank votes, the host path naming rank 1" \
      sh -c "test $? -eq 0 && grep -q \"summed through the host (MPI): rank 1: NCCL: the CPU stand-in\" err.txt"
  fi
  gpu train "${M[@]}" --out mg1 > /dev/null 2>&1
  expect "... = one process up to rounding" track mg2/train_log.jsonl mg1/train_log.jsonl 1e-5 loss grad_norm
  timeout 300 mpirun -np 2 "${mx[@]}" "$ppa" train "${M[@]}" --out mg3 --device cuda > /dev/null 2>&1
  expect "... a rerun at 2 ranks gives the same bytes" cmp -s mg2/model.safetensors mg3/model.safetensors
  mkdir mg21 && cp -r mg2/checkpoint-2 mg21/
  gpu train "${M[@]}" --out mg21 --resume mg21/checkpoint-2 > /dev/null 2> err.txt
  grep '^{"step"' mg2/train_log.jsonl | tail -1 > mg2_tail.jsonl
  expect "... a 2-rank checkpoint resumes in one process, saying so" grep -q 'written by 2 ranks, this run has 1' err.txt
  expect "... its last step within rounding of the 2 ranks'" track mg21/train_log.jsonl mg2_tail.jsonl 1e-5 loss
  if [ "${PPA_GPU_REAL:-0}" != 1 ]; then
    # a rank without a GPU: the ranks agree (all on their GPUs or none), naming it
    timeout 120 mpirun -np 2 "${mx[@]}" -x PPA_MOCK_NO_GPU_RANK=1 "$ppa" train "${M[@]}" --out mga > /dev/null 2> err.txt
    expect "mpirun -np 2, rank 1 without a GPU, --device auto: every rank on the CPU, naming rank 1" \
      sh -c "test $? -eq 0 && grep -q 'device: cpu (--device auto: rank 1: no CUDA device' err.txt"
    gtrain 2 mgc PPA_MOCK_NO_GPU_RANK=1 > /dev/null 2> err.txt
    expect "... with --device cuda: refused (exit 2), naming rank 1" \
      sh -c "test $? -eq 2 && grep -q -- '--device cuda: rank 1: no CUDA device' err.txt"
    # the NCCL path itself: a GPU each and the stand-in's NCCL (over MPI): the gradients summed by the engine
    nccl=(PPA_MOCK_GPU_PER_RANK=1 PPA_MOCK_NCCL=1) # a GPU each, and the stand-in's NCCL
    gtrain 2 mgn "${nccl[@]}" > /dev/null 2> err.txt
    expect "mpirun -np 2, a GPU each and NCCL: the gradients summed GPU to GPU (NCCL), said" \
      sh -c "test $? -eq 0 && grep -q \"the 2 ranks' gradients are summed GPU to GPU (NCCL)\" err.txt"
    expect "... = one process up to rounding" track mgn/train_log.jsonl mg1/train_log.jsonl 1e-5 loss grad_norm
    expect "... = the host path's sums, the same bytes at 2 ranks" cmp -s mgn/model.safetensors mg2/model.safetensors
    gtrain 2 mgn2 "${nccl[@]}" > /dev/null 2>&1
    expect "... a rerun gives the same bytes" cmp -s mgn/model.safetensors mgn2/model.safetensors
    # a rank whose step fails (the test hook) says so before the gradients' sum: every rank ends at once, naming it
    BIN=$build/ppa-hooks gtrain 2 mgf "${nccl[@]}" PPA_TEST_FAIL_STEP=1:2 > /dev/null 2> err.txt
    st=$?
    expect "... rank 1's step 2 failing: the job ends (status $st, not the timeout's), rank 0 naming rank 1" \
      sh -c "test $st -ne 0 && test $st -ne 124 && grep -q 'ppa.rank 0.: train: step 2: rank 1: a test' err.txt"
    # a rank stopped (SIGSTOP, the test hook) after the vote, before the backward that reduces with NCCL (its second:
    # the step's last, a list a micro-step; at stage 2 every backward reduces): the other's reductions give up after
    # --collective-timeout, aborting the communicator; it then says so to the ranks (the step's vote), where the
    # host's timeout names the rank that never arrives, and the job ends (not gtrain's own timeout's 124)
    for z in 0 2; do
      BIN=$build/ppa-hooks gtrain 2 mgs$z "${nccl[@]}" PPA_TEST_STOP_BEFORE_BACKWARD=1:2 -- --zero $z \
        --collective-timeout 3 > /dev/null 2> err.txt
      st=$?
      for pid in $(pgrep -f -- "--out mgs$z"); do kill -CONT "$pid"; kill -KILL "$pid"; done 2> /dev/null
      expect "... --zero $z, rank 1 stopped before its backward: the job ends (status $st), rank 0 naming rank 1" \
        sh -c "test $st -ne 0 && test $st -ne 124 && grep -q 'for rank 1, which does not answer (stopped' err.txt"
    done
  fi
  # ZeRO-1 on the GPU path: each rank's engine keeps its share of the moments and updates its share of the weights,
  # gathered through the host; AdamW is element-wise, so the bytes are plain 2 ranks'
  timeout 300 mpirun -np 2 "${mx[@]}" -x PPA_MOCK_GUARD=1 "$ppa" train "${M[@]}" --out mgz --zero 1 \
    --device cuda > /dev/null 2> err.txt
  expect "... --zero 1 on the GPU path: exit 0, each rank holding its share" \
    sh -c "test $? -eq 0 && grep -q 'ZeRO-1: this rank' err.txt && grep -q 'device: cuda' err.txt"
  expect "... --zero 1 = plain 2 ranks, the same bytes" cmp -s mgz/model.safetensors mg2/model.safetensors
  expect "... its checkpoint holds every rank's share of the moments: plain's bytes" \
    cmp -s mgz/checkpoint-2/optimizer.safetensors mg2/checkpoint-2/optimizer.safetensors
  if [ "${PPA_GPU_REAL:-0}" != 1 ]; then
    # ZeRO-1 through NCCL (the stand-in's): the shares of the weights gathered device to device, the host path's bytes
    gtrain 2 mgzn "${nccl[@]}" PPA_MOCK_GUARD=1 -- --zero 1 > /dev/null 2> err.txt
    expect "... --zero 1 through NCCL: exit 0, = plain 2 ranks, the same bytes" \
      sh -c "test $? -eq 0 && grep -q 'summed GPU to GPU (NCCL)' err.txt && cmp -s mgzn/model.safetensors mg2/model.safetensors"
    expect "... its checkpoint's moments = plain's" \
      cmp -s mgzn/checkpoint-2/optimizer.safetensors mg2/checkpoint-2/optimizer.safetensors
    # 4 ranks through NCCL, ZeRO-1: = one process up to rounding (shares of unequal sizes: the padded all-gather)
    gtrain 4 mgz4 "${nccl[@]}" -- --zero 1 > /dev/null 2> err.txt
    expect "... 4 ranks through NCCL with --zero 1: exit 0, = one process up to rounding" \
      sh -c "test $? -eq 0 && grep -q \"the 4 ranks' gradients are summed GPU to GPU (NCCL)\" err.txt" 
    expect "... (the log)" track mgz4/train_log.jsonl mg1/train_log.jsonl 1e-5 loss grad_norm
    # resumed4 RUN OUT ZERO: the 2-rank NCCL run RUN's checkpoint-2 resumed into OUT at 4 ranks through NCCL with
    # --zero ZERO, saying so; its last step within rounding of the 2 ranks'
    resumed4() {
      mkdir "$2" && cp -r "$1/checkpoint-2" "$2/"
      gtrain 4 "$2" "${nccl[@]}" -- --zero "$3" --resume "$2/checkpoint-2" > /dev/null 2> err.txt
      local st=$?
      grep '^{"step"' "$1/train_log.jsonl" | tail -1 > "$1_tail.jsonl"
      expect "... $1's checkpoint resumes at 4 ranks through NCCL (--zero $3), saying so" \
        sh -c "test $st -eq 0 && grep -q 'written by 2 ranks, this run has 4' err.txt"
      expect "... its last step within rounding of the 2 ranks'" track "$2/train_log.jsonl" "$1_tail.jsonl" 1e-5 loss
    }
    resumed4 mgzn mgz42 1
    # ZeRO-2 through NCCL (the stand-in's): each layer's gradients reduced onto the ranks that own them during the
    # backward, no whole gradient buffer; every rank logs its reductions (count, root) for the bucket order
    gtrain 2 mgy "${nccl[@]}" PPA_MOCK_GUARD=1 PPA_MOCK_NCCL_LOG="$PWD/mgy_log" -- --zero 2 > /dev/null 2> err.txt
    expect "... --zero 2 through NCCL: exit 0, saying so" sh -c "test $? -eq 0 && grep -q 'ZeRO-2: this rank' err.txt &&
      grep -q \"summed layer by layer onto the ranks that own them (ZeRO-2), GPU to GPU (NCCL)\" err.txt"
    expect "... = one process up to rounding" track mgy/train_log.jsonl mg1/train_log.jsonl 1e-5 loss grad_norm
    expect "... both ranks made the same reductions in the same order (NCCL's calls match)" \
      sh -c "test \$(wc -l < mgy_log.0) -gt 8 && cmp -s mgy_log.0 mgy_log.1"
    gtrain 2 mgy2 "${nccl[@]}" -- --zero 2 > /dev/null 2>&1
    expect "... a rerun gives the same bytes" cmp -s mgy/model.safetensors mgy2/model.safetensors
    mkdir mgyr && cp -r mgy/checkpoint-2 mgyr/
    gtrain 2 mgyr "${nccl[@]}" -- --zero 2 --resume mgyr/checkpoint-2 > /dev/null 2>&1
    expect "... resumed from its checkpoint = the uninterrupted run" cmp -s mgy/model.safetensors mgyr/model.safetensors
    resumed4 mgy mgy4 2
    gtrain 4 mgy5 "${nccl[@]}" -- --zero 2 > /dev/null 2>&1
    expect "... 4 ranks = one process up to rounding" track mgy5/train_log.jsonl mg1/train_log.jsonl 1e-5 loss grad_norm
    # 3 lists over 2 ranks a micro-step each: rank 1 has one backward less, and joins the other's reductions without
    # one (of what it accumulated; of zeros at stage 2), else NCCL would wait for ever
    MU=(--model m --data D.jsonl --template none --list-size 3 --batch-size 3 --micro-batch 1 --lr 0.001 --max-steps 3
        --precision fp32)
    gpu train "${MU[@]}" --out mgwp > /dev/null 2>&1
    for z in 0 1 2; do
      timeout 300 mpirun -np 2 "${mx[@]}" -x PPA_MOCK_GPU_PER_RANK=1 -x PPA_MOCK_NCCL=1 "$ppa" train "${MU[@]}" \
        --out mgw$z --zero $z --device cuda --collective-timeout 10 > /dev/null 2>&1
      expect "... --zero $z with uneven micro-steps: exit 0" test $? -eq 0
      expect "... = one process up to rounding" track mgw$z/train_log.jsonl mgwp/train_log.jsonl 1e-5 loss grad_norm
    done
    # a rank whose step fails votes with the others' first micro-step, before any reduction: every rank ends at once
    BIN=$build/ppa-hooks gtrain 2 mgyf "${nccl[@]}" PPA_TEST_FAIL_STEP=1:2 -- --zero 2 > /dev/null 2> err.txt
    st=$?
    expect "... --zero 2, rank 1's step 2 failing: the job ends (status $st, not a timeout), rank 0 naming rank 1" \
      sh -c "test $st -ne 0 && test $st -ne 124 && grep -q 'ppa.rank 0.: train: step 2: rank 1: a test' err.txt"
  fi
  # ZeRO-2 on the host path (the ranks share one GPU): the layers' reductions through the host, said
  timeout 300 mpirun -np 2 "${mx[@]}" "$ppa" train "${M[@]}" --out mgyh --zero 2 --device cuda > /dev/null 2> err.txt
  expect "... --zero 2 through the host: exit 0, saying why" sh -c "test $? -eq 0 &&
    grep -q \"summed layer by layer onto the ranks that own them (ZeRO-2), through the host (MPI): $host_why\" err.txt"
  expect "... = one process up to rounding" track mgyh/train_log.jsonl mg1/train_log.jsonl 1e-5 loss grad_norm
  # in bf16 (the products' precision): ZeRO-1 and ZeRO-2 at 2 ranks = one process within bf16's rounding (2^-7; the
  # sums' order moves a float32 weight by an ulp, which can move its bf16 copy by one)
  MB=("${M[@]/fp32/bf16}")
  gpu train "${MB[@]}" --out mb1 > /dev/null 2>&1
  for z in 1 2; do
    timeout 300 mpirun -np 2 "${mx[@]}" "$ppa" train "${MB[@]}" --out mbz$z --zero $z --device cuda > /dev/null 2>&1
    expect "... bf16, --zero $z: exit 0" test $? -eq 0
    expect "... = one process within bf16's rounding" track mbz$z/train_log.jsonl mb1/train_log.jsonl 0.0078125 loss \
      grad_norm
  done
  mkdir mgr && cp -r mgz/checkpoint-2 mgr/
  timeout 300 mpirun -np 2 "${mx[@]}" "$ppa" train "${M[@]}" --out mgr --zero 1 --resume mgr/checkpoint-2 \
    --device cuda > /dev/null 2>&1
  expect "... a --zero 1 run resumed from its checkpoint = the uninterrupted one" \
    cmp -s mgz/model.safetensors mgr/model.safetensors
  # a rank that dies stops the job within seconds (tests/test_mpi.sh's check, on the GPU path)
  timeout 300 mpirun -np 2 "${mx[@]}" "$ppa" train "${M[@]}" --max-steps 100000 --out mgk --device cuda > /dev/null 2>&1 &
  job=$!
  for _ in $(seq 1 600); do [ -d mgk/checkpoint-2 ] && break; sleep 0.1; done
  victim=$(for d in /proc/[0-9]*; do
    tr '\0' ' ' 2> /dev/null < "$d/cmdline" | grep -q "^$ppa train .*--out mgk" && echo "${d#/proc/}"; done | tail -1)
  t0=$(date +%s.%N)
  [ -n "$victim" ] && kill -9 "$victim"
  wait "$job"
  status=$? t1=$(date +%s.%N)
  # the time is printed, not bounded (timeout's 124: the job hung)
  expect "a killed rank stops a GPU job (exit $status after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)" \
    test -n "$victim" -a "$status" -ne 0 -a "$status" -ne 124
else
  echo "test_gpu_commands: SKIP the mpirun checks (no mpirun)"
fi

# what the GPU engine cannot run: refused with why (cuda), the CPU with auto
"$ppa" init --config config.json --tokenizer tokenizer.json --out m8 --seed 5 > /dev/null
gpu logprobs --model m8 --data D.jsonl --template none > /dev/null 2> err.txt
expect "head size 8 on the GPU path: refused naming why" sh -c "test $? -eq 2 && grep -q 'head sizes 64 and 128' err.txt"
"${lib[@]}" "$ppa" grad --model m --data D.jsonl --template none --objective ppa --beta 0.1 --out gr.safetensors --device cuda > /dev/null 2> err.txt
expect "a command that does not run on the GPU refuses --device cuda" grep -q "does not run on the GPU yet" err.txt
# sampling on the GPU path: the decoder's cache on the device, the host's sampler
printf '{"prompt": "abc"}\n{"prompt": "bca", "id": "x"}\n{"prompt": "cc"}\n' > P.jsonl
gpu generate --model m --prompts P.jsonl --template none --max-new-tokens 8 --precision fp32 > gen_g.jsonl 2> err.txt
expect "generate on the GPU path: exit 0, the first line says cuda" \
  sh -c "test $? -eq 0 && head -1 err.txt | grep -q 'device: cuda' && test \$(wc -l < gen_g.jsonl) -eq 3"
cpu generate --model m --prompts P.jsonl --template none --max-new-tokens 8 --precision fp32 > gen_c.jsonl 2> /dev/null
expect "greedy generation (fp32) on the GPU path = the CPU's" cmp -s gen_g.jsonl gen_c.jsonl
G=(--model m --template none --max-new-tokens 8 --temperature 1 --top-p 0.9 --num-samples 3 --seed 4)
gpu generate "${G[@]}" --prompts P.jsonl > gs_all.jsonl 2> /dev/null
expect "sampling on the GPU path: exit 0, a line a prompt with its 3 responses" \
  sh -c "test $? -eq 0 && test \$(wc -l < gs_all.jsonl) -eq 3 && tail -1 gs_all.jsonl | grep -q '\"n_tokens\": \[[0-9]*, [0-9]*, [0-9]*\]'"
# a prompt's stream is its line: the first line alone is the same prompt with the same stream
head -1 P.jsonl > P1.jsonl
gpu generate "${G[@]}" --prompts P1.jsonl > gs_one.jsonl 2> /dev/null
expect "sampling on the GPU path: a prompt's samples are the same alone and beside others" \
  sh -c "test -s gs_one.jsonl && head -1 gs_all.jsonl | cmp -s - gs_one.jsonl"
gpu generate "${G[@]}" --prompts P.jsonl > gs_again.jsonl 2> /dev/null
expect "sampling on the GPU path: a rerun gives the same bytes" cmp -s gs_all.jsonl gs_again.jsonl
gpu generate "${G[@]}" --prompts P1.jsonl > /dev/null 2> err.txt
expect "sampling on the GPU path: the device's sampler by default, said in the settings line" grep -q 'sampler device' err.txt
gpu generate "${G[@]}" --prompts P.jsonl --sampler exact > gx_all.jsonl 2> err.txt
expect "--sampler exact on the GPU path: the host's draws (other streams than the device's), said" \
  sh -c "test $? -eq 0 && grep -q 'sampler exact' err.txt && ! cmp -s gx_all.jsonl gs_all.jsonl"
gpu generate --model m --prompts P.jsonl --template none --max-new-tokens 8 --precision fp32 --sampler exact > gen_x.jsonl 2> /dev/null
expect "greedy: --sampler exact = the device's sampler, byte for byte" cmp -s gen_x.jsonl gen_g.jsonl
"$ppa" generate --model m --prompts P.jsonl --template none --sampler device --device cpu > /dev/null 2> err.txt
expect "--sampler device on the CPU: refused naming why" sh -c "test $? -eq 2 && grep -q 'draws on the GPU' err.txt"
# ppa bench generate (the job bench/gpu_generate.sh times beside transformers) on the GPU path, and that script's
# dry run on the tiny shape
printf '{"prompt_ids": [1, 2, 3]}\n{"prompt_ids": [4, 5]}\n' > Pi.jsonl
gpu bench generate --model m --prompts Pi.jsonl --max-new-tokens 4 -n 2 --repeat 1 --json > bg.json 2> err.txt
expect "bench generate on the GPU path: one JSON line, 4 samples, the device's sampler" \
  sh -c "test $? -eq 0 && grep -q '\"samples\": 4, ' bg.json && grep -q '\"sampler\": \"device\"' bg.json"
env "${lib[@]:1}" WORK="$tmp/gg" OUT="$tmp/ggout" bash "$repo/bench/gpu_generate.sh" "$ppa" tiny > gg.txt 2>&1
expect "bench/gpu_generate.sh tiny: a ppa line and a ratio line for each of its 3 jobs, no error" \
  sh -c "test \$(grep -c '\"side\": \"ppa\"' '$tmp/ggout/gpu-generate.jsonl') -eq 3 &&
    test \$(grep -c ratio_ppa_over_hf '$tmp/ggout/gpu-generate.jsonl') -eq 3 &&
    ! grep '\"side\": \"ppa\"' '$tmp/ggout/gpu-generate.jsonl' | grep -q error"
# sampling from an adapter on the GPU: merged into the base at upload, as ppa merge writes it
gpu generate --model m --adapter cl_bf16 --prompts P.jsonl --template none --max-new-tokens 8 --precision fp32 > ga.jsonl 2> err.txt
expect "generate --adapter on the GPU path: exit 0 on cuda" sh -c "test $? -eq 0 && head -1 err.txt | grep -q 'device: cuda'"
"$ppa" merge --model m --adapter cl_bf16 --out merged_cl --save-dtype f32 > /dev/null 2>&1
gpu generate --model merged_cl --prompts P.jsonl --template none --max-new-tokens 8 --precision fp32 > gm.jsonl 2> /dev/null
expect "generate --adapter on the GPU path = the merged folder's (ppa merge), byte for byte" cmp -s ga.jsonl gm.jsonl
cpu generate --model m --adapter cl_bf16 --prompts P.jsonl --template none --max-new-tokens 8 --precision fp32 > ca.jsonl 2> /dev/null
expect "generate --adapter (greedy, fp32) on the GPU path = the CPU's unmerged adapter" cmp -s ga.jsonl ca.jsonl
"${lib[@]}" "$ppa" train --model m8 --data D.jsonl --template none --list-size 3 --batch-size 2 --max-steps 1 --warmup-ratio 0 --out a8 > /dev/null 2> err.txt
expect "auto with a model the GPU engine cannot run: the CPU, saying why" \
  sh -c "test $? -eq 0 && head -1 err.txt | grep -q 'device: cpu (--device auto: the GPU engine cannot run the model: head_dim 8'"
"${lib[@]}" "$ppa" logprobs --model m --data D.jsonl --template none > auto.out 2> err.txt
expect "auto with a usable GPU runs there" sh -c "head -1 err.txt | grep -q 'device: cuda' && cmp -s auto.out g_bf16.out"
report
