#!/usr/bin/env bash
# --precision bf16 and --gradient-checkpointing through the commands: step-0
# rewards exactly 0 and exact resume in bf16, a bf16 reference cache shared by
# score and train, checkpointing = the plain backward (bytes), a bf16 SFT
# whose loss falls, the reading commands in bf16, the recipe keys, and the
# refusals. Usage: tests/test_precision.sh PPA_BINARY.
# Prints "test_precision: N passed, N failed".
ppa=$(realpath "${1:-./ppa}")
NAME=test_precision
. "$(dirname "$0")/lib.sh"
differ() { ! cmp -s "$1" "$2"; }

tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" --seed 7 --init-std 0.3 > /dev/null
letter_lists > "$tmp/lists.jsonl"
common=(--model "$tmp/m" --data "$tmp/lists.jsonl" --template none --beta 0.5 --list-size 4 --batch-size 4 --micro-batch 2
        --lr 0.02 --warmup-ratio 0.2 --max-steps 6 --seed 3 --objective ppa)

# -- training in bf16: zero rewards at step 1, the options record, exact resume
"$ppa" train "${common[@]}" --precision bf16 --out "$tmp/a" --save-every 3 > /dev/null 2> "$tmp/err"
st=$?; expect "train --precision bf16 exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
expect "the run says it multiplies in bf16, and on what" grep -Eq "bf16 products: (oneDNN|builtin C kernel \((sanitizer build|PPA_BF16=builtin))" "$tmp/err"
expect "step 1 in bf16: policy = reference, every reward exactly 0" \
  grep -q '^{"step": 1, .*"reward": 0, "margin": 0, "accuracy": 0' "$tmp/a/train_log.jsonl"
expect "train_options.json records the precision" grep -q '"precision":"bf16"' "$tmp/a/train_options.json"
expect "the state names both kernel families" grep -Eq '"gemm_kernel":[[:space:]]*"[A-Za-z0-9]*\+(oneDNN|builtin)"' "$tmp/a/checkpoint-3/ppa_state.json"
"$ppa" train "${common[@]}" --precision bf16 --out "$tmp/b" --save-every 3 --max-steps 3 > /dev/null 2>&1
rm -rf "$tmp/b/model.safetensors" "$tmp/b/config.json"
"$ppa" train "${common[@]}" --precision bf16 --out "$tmp/b" --save-every 3 --resume "$tmp/a/checkpoint-3" > /dev/null 2> "$tmp/err"
st=$?; expect "bf16 resume exits 0 ($(tail -2 "$tmp/err"))" test $st -eq 0
expect "bf16: 3 steps + resume + 3 steps = 6 steps, byte-identical weights" cmp -s "$tmp/a/model.safetensors" "$tmp/b/model.safetensors"
"$ppa" train "${common[@]}" --precision fp32 --out "$tmp/c" --resume "$tmp/a/checkpoint-3" > /dev/null 2> "$tmp/err"
expect "resuming a bf16 run in fp32 is refused (other options)" test $? -eq 2
"$ppa" train "${common[@]}" --out "$tmp/f32" > /dev/null 2>&1
expect "bf16 training moves the weights elsewhere than fp32 (the products differ)" differ "$tmp/a/model.safetensors" "$tmp/f32/model.safetensors"

# -- gradient checkpointing: the same bytes as the plain backward, in both precisions
for p in fp32 bf16; do
  "$ppa" train "${common[@]}" --precision $p --out "$tmp/gc_$p" --gradient-checkpointing > /dev/null 2> "$tmp/err"
  expect "train --gradient-checkpointing ($p) exits 0" test $? -eq 0
done
expect "fp32: gradient checkpointing trains to byte-identical weights" cmp -s "$tmp/f32/model.safetensors" "$tmp/gc_fp32/model.safetensors"
expect "bf16: gradient checkpointing trains to byte-identical weights" cmp -s "$tmp/a/model.safetensors" "$tmp/gc_bf16/model.safetensors"

# -- --low-memory: the same bytes as without, in both precisions and with checkpointing
for p in fp32 bf16; do
  "$ppa" train "${common[@]}" --precision $p --out "$tmp/low_$p" --low-memory > /dev/null 2> "$tmp/err"
  st=$?; expect "train --low-memory ($p) exits 0 ($(tail -1 "$tmp/err"))" test $st -eq 0
done
expect "fp32: --low-memory trains to byte-identical weights" cmp -s "$tmp/f32/model.safetensors" "$tmp/low_fp32/model.safetensors"
expect "bf16: --low-memory trains to byte-identical weights" cmp -s "$tmp/a/model.safetensors" "$tmp/low_bf16/model.safetensors"
"$ppa" train "${common[@]}" --precision bf16 --out "$tmp/low_gc" --low-memory --gradient-checkpointing > /dev/null 2>&1
expect "bf16: --low-memory with checkpointing, byte-identical weights" cmp -s "$tmp/a/model.safetensors" "$tmp/low_gc/model.safetensors"

# -- the reference cache: ppa score --precision bf16 (frozen bf16) serves train --precision bf16 (its bf16 copy)
"$ppa" score --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 --out "$tmp/ref.bf16" > /dev/null 2>&1
expect "score --precision bf16 writes a cache" test -s "$tmp/ref.bf16"
"$ppa" train "${common[@]}" --precision bf16 --out "$tmp/rc" --ref-cache "$tmp/ref.bf16" --max-steps 2 > /dev/null 2> "$tmp/err"
st=$?; expect "train --precision bf16 uses score's bf16 cache ($(tail -1 "$tmp/err"))" test $st -eq 0
expect "and its step 1 rewards are exactly 0" grep -q '^{"step": 1, .*"reward": 0, "margin": 0' "$tmp/rc/train_log.jsonl"
"$ppa" train "${common[@]}" --out "$tmp/rc32" --ref-cache "$tmp/ref.bf16" --max-steps 2 > /dev/null 2> "$tmp/err"
expect "an fp32 run refuses the bf16 cache" test $? -eq 2

# -- the reading commands in bf16
"$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 > "$tmp/lp.bf16" 2>/dev/null
expect "logprobs --precision bf16: one line per row" test "$(wc -l < "$tmp/lp.bf16")" -eq 24
"$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none > "$tmp/lp.f32" 2>/dev/null
expect "bf16 log-probs differ from fp32's (bf16 products ran)" differ "$tmp/lp.bf16" "$tmp/lp.f32"
"$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 --threads 1 > "$tmp/lp.bf16.t1" 2>/dev/null
expect "bf16 log-probs: the same bytes on 1 thread as on all" cmp -s "$tmp/lp.bf16" "$tmp/lp.bf16.t1"
"$ppa" eval --model "$tmp/a" --ref "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 > "$tmp/ev" 2>/dev/null
expect "eval --precision bf16 reports" grep -q '"ranking_accuracy"' "$tmp/ev"
"$ppa" eval --model "$tmp/m" --ref "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 > "$tmp/ev0" 2>/dev/null
expect "eval --precision bf16 of a model against itself: mean reward exactly 0" grep -q '"mean_reward": 0,' "$tmp/ev0"
printf '{"prompt": "q1"}\n{"prompt": "q2"}\n' > "$tmp/prompts.jsonl"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/prompts.jsonl" --template none --precision bf16 --max-new-tokens 6 \
  --temperature 0 > "$tmp/gen" 2> "$tmp/err"
expect "generate --precision bf16: a line per prompt ($(tail -1 "$tmp/err"))" test "$(wc -l < "$tmp/gen")" -eq 2

# -- ppa grad: checkpointing gives the same gradient bytes; bf16 gradients are written
for gc in "" --gradient-checkpointing; do
  "$ppa" grad --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --objective ppa --beta 0.5 --precision bf16 \
    $gc --out "$tmp/g$gc.safetensors" > /dev/null 2>&1
  expect "grad --precision bf16 $gc exits 0" test -s "$tmp/g$gc.safetensors"
done
expect "grad bf16: checkpointing gives byte-identical gradients" cmp -s "$tmp/g.safetensors" "$tmp/g--gradient-checkpointing.safetensors"

# -- sft in bf16: the loss falls
for i in $(seq 1 16); do echo '{"text": "the cat sat on the mat and the dog sat on the log"}'; done > "$tmp/sft.jsonl"
"$ppa" sft --model "$tmp/m" --data "$tmp/sft.jsonl" --out "$tmp/sft" --template none --max-steps 12 --batch-size 4 \
  --micro-batch 2 --lr 0.01 --precision bf16 > "$tmp/log" 2> "$tmp/err"
st=$?; expect "sft --precision bf16 exits 0 ($(tail -1 "$tmp/err"))" test $st -eq 0
first=$(grep -o '"loss": [0-9.e+-]*' "$tmp/log" | head -1 | sed 's/.*: //')
last=$(grep -o '"loss": [0-9.e+-]*' "$tmp/log" | tail -1 | sed 's/.*: //')
expect "sft bf16: the loss falls ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.7 * a) }'

# -- recipe keys: bf16 and gradient_checkpointing
cat > "$tmp/r.yaml" <<Y
model_name_or_path: $tmp/m
dataset_mixer:
  $tmp/lists.jsonl: 1.0
output_dir: $tmp/recipe
bf16: true
gradient_checkpointing: true
max_steps: 1
warmup_ratio: 0
per_device_train_batch_size: 2
gradient_accumulation_steps: 1
Y
"$ppa" train --config "$tmp/r.yaml" --template none --list-size 4 > /dev/null 2> "$tmp/err"
st=$?; expect "a recipe with bf16: true trains ($(tail -1 "$tmp/err"))" test $st -eq 0
expect "bf16: true is --precision bf16, from the recipe's line" \
  grep -q '"precision":"bf16".*"precision":"[^"]*r.yaml:5 bf16"' "$tmp/recipe/train_options.json"
expect "gradient_checkpointing: true is honoured" grep -q '"gradient_checkpointing":true' "$tmp/recipe/train_options.json"

# -- refusals and the fallback
if ! grep -qw avx512_bf16 /proc/cpuinfo; then # without PPA_BF16 (run.sh sets it on such CPUs)
  env -u PPA_BF16 "$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 --verbose \
    > /dev/null 2> "$tmp/err"
  status=$?
  if ! grep -q "sanitizer build" "$tmp/err"; then # sanitizer builds run the built-in kernel whatever the CPU
    expect "no AVX512-BF16: --precision bf16 is refused, exit 2" test "$status" -eq 2
    expect "saying why and naming the fallback" grep -q "no AVX512-BF16.*PPA_BF16=builtin" "$tmp/err"
  fi
fi
PPA_BF16=bogus "$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 > /dev/null 2> "$tmp/err"
expect "PPA_BF16=bogus: exit 2" test $? -eq 2
expect "and says why" grep -q "PPA_BF16=bogus: expected 'builtin'" "$tmp/err"
"$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf17 > /dev/null 2> "$tmp/err"
expect "--precision bf17 is refused naming the choices" grep -q "expected fp32 or bf16" "$tmp/err"
PPA_BF16=builtin "$ppa" logprobs --model "$tmp/m" --data "$tmp/lists.jsonl" --template none --precision bf16 --verbose \
  > "$tmp/lp.builtin" 2> "$tmp/err"
expect "PPA_BF16=builtin runs the built-in kernel" grep -q "builtin C kernel" "$tmp/err"
expect "the built-in kernel's log-probs agree with oneDNN's to float32 rounding" awk '
  NR == FNR { for (i = 1; i <= NF; i++) a[FNR, i] = $i; next }
  { for (i = 1; i <= NF; i++) if ($i != a[FNR, i]) { x = $i + 0; y = a[FNR, i] + 0; if (x - y > 1e-4 || y - x > 1e-4) bad = 1 } }
  END { exit bad }' FS='[][,:{} ]+' "$tmp/lp.bf16" "$tmp/lp.builtin"

# -- the built-in kernel's portable loops (PPA_GEMM_SEQ=scalar: the products' and attention's, as on a CPU without
# AVX2) and its SIMD ones train to the same bytes: the same chains in the same order. A model wide enough (head_dim
# 32, responses of 40-100 tokens) that a float32 sum added in another order shows through the bf16 roundings.
mkdir -p "$tmp/wide"
cp "$tmp/tokenizer.json" "$tmp/wide/"
sed -e 's/"hidden_size": 32/"hidden_size": 128/' -e 's/"intermediate_size": 64/"intermediate_size": 352/' \
  -e 's/"max_position_embeddings": 64/"max_position_embeddings": 256/' "$tmp/config.json" > "$tmp/wide/config.json"
"$ppa" init --config "$tmp/wide/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/wide/m" --seed 7 \
  --init-std 0.1 > /dev/null
awk 'BEGIN { srand(5); for (i = 0; i < 8; i++) {
  printf "{\"prompt\": \"question %d\", \"responses\": [", i; sc = ""
  for (k = 0; k < 4; k++) { n = 40 + int(rand() * 60); r = ""; a = 0
    for (j = 0; j < n; j++) { c = substr("abcde ", 1 + int(rand() * 6), 1); r = r c; a += c == "a" }
    printf "%s\"%s\"", k ? ", " : "", r; sc = sc sprintf("%s%.4f", k ? ", " : "", a / n) }
  printf "], \"scores\": [%s]}\n", sc } }' > "$tmp/wide/lists.jsonl"
for isa in simd scalar; do
  env PPA_BF16=builtin PPA_GEMM_SEQ=$([ $isa = scalar ] && echo scalar || echo auto) "$ppa" train \
    --model "$tmp/wide/m" --data "$tmp/wide/lists.jsonl" --template none --beta 0.5 --list-size 4 --batch-size 4 \
    --micro-batch 2 --lr 0.01 --max-steps 2 --seed 3 --objective ppa --precision bf16 --out "$tmp/isa_$isa" \
    > /dev/null 2> "$tmp/err"
  st=$?; expect "built-in bf16 training, $isa loops, exits 0 ($(tail -1 "$tmp/err"))" test $st -eq 0
done
expect "the built-in kernel's SIMD and portable loops give the same weights, byte for byte" \
  cmp -s "$tmp/isa_simd/model.safetensors" "$tmp/isa_scalar/model.safetensors"
report
