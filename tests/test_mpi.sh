#!/usr/bin/env bash
# Several ranks under Open MPI (mpirun -np 2 on this machine): data-parallel
# `ppa train` and `ppa sft` equal one process (log lines and weights to float
# rounding), byte-identical reruns and resume at 2 ranks, resume at 1 rank
# from a 2-rank checkpoint, ZeRO-1 (--zero 1) = the plain run byte for byte,
# LoRA under 2 ranks, `ppa score`, `logprobs`, `eval`, `generate` and `judge` (reward model, pair model, lexicon)
# sharded = one process byte for byte, a rank
# that dies stopping the job within seconds with the last checkpoint intact,
# a rank that stops answering (SIGSTOP) ending the job after
# --collective-timeout with a message naming it and the collective (the last
# checkpoint resumes and finishes), and the commands that run in one process
# refusing several ranks. --collective-timeout's checks without mpirun run
# first; the rest is SKIPped when mpirun is missing. Usage (HOOKS: ppa built with test hooks):
# tests/test_mpi.sh PPA_BINARY [HOOKS].
ppa=$(realpath "${1:-./ppa}")
# the build of ppa with test hooks (the Makefile's build/ppa-hooks): a rank made to die in the middle of a save
hooks=$(realpath "${2:-build/ppa-hooks}")
NAME=test_mpi
. "$(dirname "$0")/lib.sh"
has() { grep -qF -- "$2" "$1"; }
not() { ! "$@"; }
# CI runs as root; Open MPI refuses that unless told (here only, not globally)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# containers often forbid process_vm_readv (CMA), Open MPI's default single copy between ranks of one machine
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# the sanitizer build: Open MPI's own allocations are not ours to report
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
mpi() { timeout 300 mpirun -np 2 --oversubscribe "$@"; }
# pids_of TEXT: the processes whose command line holds TEXT (from /proc: no procps needed)
pids_of() {
  local d
  for d in /proc/[0-9]*; do
    tr '\0' ' ' 2> /dev/null < "$d/cmdline" | grep -qF -- "$1" && echo "${d#/proc/}"
  done
  return 0
}
# near FILE_A FILE_B TOL: every number of two JSON Lines files within TOL (relative, 1e-9 absolute), timings left out
near() {
  /usr/bin/python3 - "$@" <<'P'
import json, sys
keep = lambda f: [l for l in open(f).read().splitlines() if not l.startswith('{"summary"')]  # its timings differ
a, b, tol = keep(sys.argv[1]), keep(sys.argv[2]), float(sys.argv[3])
def walk(x, y, path):
    if isinstance(x, dict):
        skip = {"tokens_per_s", "elapsed_s", "comm_s", "comm_bytes", "wait_s"}  # timings, and the ranks' traffic
        assert set(x) - skip == set(y) - skip, path
        for k in set(x) - skip: walk(x[k], y[k], path + "." + k)
    elif isinstance(x, list):
        assert len(x) == len(y), path
        for i, (u, v) in enumerate(zip(x, y)): walk(u, v, "%s[%d]" % (path, i))
    elif isinstance(x, float) or isinstance(y, float):
        assert abs(x - y) <= tol * max(abs(x), abs(y)) + 1e-9, "%s: %r vs %r" % (path, x, y)
    else:
        assert x == y, "%s: %r vs %r" % (path, x, y)
assert len(a) == len(b), "%d vs %d lines" % (len(a), len(b))
for i, (x, y) in enumerate(zip(a, b)):
    walk(json.loads(x), json.loads(y), "line %d" % (i + 1))
print("near")
P
}
# weights A B TOL: the tensors of two safetensors files within TOL of each tensor's largest entry
weights() {
  /usr/bin/python3 - "$@" <<'P'
import json, struct, sys
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: struct.unpack("<%df" % ((v["data_offsets"][1] - v["data_offsets"][0]) // 4),
                             b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert set(a) == set(b)
worst = max(max(abs(x - y) for x, y in zip(a[k], b[k])) / max(max(abs(x) for x in a[k]), 1e-30) for k in a)
print("weights within %.2g" % worst if worst <= float(sys.argv[3]) else "DIFF %.3g" % worst)
P
}

tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/lm" --seed 1 > /dev/null 2>&1
letter_lists > "$tmp/all.jsonl"

# -- --collective-timeout without MPI: refused when it is no whole number of seconds from 1 to a week, else a no-op
for bad in 0 -3 604801 1.5; do
  "$ppa" score --model "$tmp/lm" --data "$tmp/all.jsonl" --out "$tmp/bad.cache" --collective-timeout "$bad" \
    2> "$tmp/err"
  expect "--collective-timeout $bad is refused (exit 2)" test $? -eq 2
done
expect "saying what it takes" has "$tmp/err" "--collective-timeout: cannot use '1.5': expected a whole number"
"$ppa" score --model "$tmp/lm" --data "$tmp/all.jsonl" --out "$tmp/bad.cache" --collective-timeout 0 2> "$tmp/err"
expect "and the range" has "$tmp/err" "--collective-timeout must be in 1..604800 seconds (a week), found 0"
expect "nothing written" not test -e "$tmp/bad.cache"
"$ppa" score --model "$tmp/lm" --data "$tmp/all.jsonl" --out "$tmp/t1.cache" 2> /dev/null
"$ppa" score --model "$tmp/lm" --data "$tmp/all.jsonl" --out "$tmp/t2.cache" --collective-timeout 5 2> /dev/null
expect "accepted by one process, which it does not change" cmp -s "$tmp/t1.cache" "$tmp/t2.cache"

if ! command -v mpirun > /dev/null; then
  echo "SKIP $NAME: mpirun not found (openmpi-bin)"
  report
  exit
fi
run=(--model "$tmp/lm" --data "$tmp/all.jsonl" --list-size 4 --batch-size 8 --micro-batch 2 --lr 1e-2 --max-steps 6
     --threads 1 --log-lambdas)

# -- train: 2 ranks = 1 process to float rounding; reruns and resume byte for byte
"$ppa" train "${run[@]}" --out "$tmp/one" > /dev/null 2>&1
mpi "$ppa" train "${run[@]}" --out "$tmp/two" 2> "$tmp/err"
expect "2-rank train exits 0" test $? -eq 0
expect "the summary says 2 ranks" has "$tmp/err" "2 ranks (MPI)"
expect "one log line per step, once" test "$(grep -c '^{"step"' "$tmp/two/train_log.jsonl")" -eq 6
expect "each line times the all-reduce apart from the wait before it" \
  test "$(grep -cE '"comm_s": [0-9.]+, "comm_bytes": [0-9]+, "wait_s": [0-9.]+' "$tmp/two/train_log.jsonl")" -eq 6
near "$tmp/one/train_log.jsonl" "$tmp/two/train_log.jsonl" 1e-5 > "$tmp/py" 2>&1
expect "log lines (lambdas included) = one process's, to float rounding" has "$tmp/py" "near"
weights "$tmp/one/model.safetensors" "$tmp/two/model.safetensors" 1e-5 > "$tmp/py" 2>&1
expect "final weights = one process's, to float32 rounding ($(cat "$tmp/py"))" has "$tmp/py" "weights within"
mpi "$ppa" train "${run[@]}" --out "$tmp/two_b" > /dev/null 2>&1
expect "a 2-rank rerun: the same bytes" cmp -s "$tmp/two/model.safetensors" "$tmp/two_b/model.safetensors"
mpi "$ppa" train "${run[@]}" --out "$tmp/half" --save-every 3 > /dev/null 2>&1
expect "rank 0 wrote the checkpoint" test -f "$tmp/half/checkpoint-3/ppa_state.json"
expect "the state records 2 ranks" grep -qE '"ranks":[[:space:]]*2,' "$tmp/half/checkpoint-3/ppa_state.json"
rm -f "$tmp/half/model.safetensors" "$tmp/half/config.json"
mpi "$ppa" train "${run[@]}" --out "$tmp/half" --save-every 3 --resume "$tmp/half/checkpoint-3" > /dev/null 2>&1
expect "resume at 2 ranks: the same bytes" cmp -s "$tmp/two/model.safetensors" "$tmp/half/model.safetensors"
rm -f "$tmp/half/model.safetensors" "$tmp/half/config.json"
"$ppa" train "${run[@]}" --out "$tmp/half" --save-every 3 --resume "$tmp/half/checkpoint-3" 2> "$tmp/err"
expect "resume at 1 rank from a 2-rank checkpoint exits 0" test $? -eq 0
expect "with a note on the rank count" has "$tmp/err" "written by 2 ranks, this run has 1"
weights "$tmp/two/model.safetensors" "$tmp/half/model.safetensors" 1e-5 > "$tmp/py" 2>&1
expect "and the same weights to float32 rounding" has "$tmp/py" "weights within"

# -- ZeRO-1: the AdamW state in halves, the same bytes as the plain 2-rank run, resumable
mpi "$ppa" train "${run[@]}" --out "$tmp/z" --zero 1 --save-every 3 2> "$tmp/err"
expect "--zero 1 exits 0" test $? -eq 0
expect "--zero 1 reports the per-rank state" has "$tmp/err" "ZeRO-1: this rank's share"
expect "--zero 1 = plain data parallelism, bytes" cmp -s "$tmp/two/model.safetensors" "$tmp/z/model.safetensors"
expect "a ZeRO-1 checkpoint holds all of the state = the plain run's" cmp -s "$tmp/half/checkpoint-3/optimizer.safetensors" "$tmp/z/checkpoint-3/optimizer.safetensors"
rm -f "$tmp/z/model.safetensors" "$tmp/z/config.json"
mpi "$ppa" train "${run[@]}" --out "$tmp/z" --zero 1 --save-every 3 --resume "$tmp/z/checkpoint-3" > /dev/null 2>&1
expect "ZeRO-1 resume: the same bytes" cmp -s "$tmp/two/model.safetensors" "$tmp/z/model.safetensors"
# ZeRO-2 shards the GPU engine's gradients: on the CPU it is refused, naming --zero 1 (by --device auto when no GPU
# was found: this build machine's stand-in is not loaded here)
mpi "$ppa" train "${run[@]}" --out "$tmp/z2" --zero 2 > /dev/null 2> "$tmp/err"
expect "--zero 2 on the CPU: refused (exit 2), naming --zero 1" sh -c "test $? -eq 2 && grep -q -- 'use --zero 1' '$tmp/err'"
"$ppa" train "${run[@]}" --out "$tmp/z2" --zero 2 --device cpu > /dev/null 2> "$tmp/err"
expect "--zero 2 --device cpu: refused (exit 2)" sh -c "test $? -eq 2 && grep -q -- 'use --zero 1' '$tmp/err'"
"$ppa" train "${run[@]}" --out "$tmp/z2" --zero 2 --device cuda --lora-r 4 > /dev/null 2> "$tmp/err"
expect "--zero 2 with LoRA: refused (exit 2), naming --zero 1" sh -c "test $? -eq 2 && grep -q -- 'are small: use --zero 1' '$tmp/err'"
"$ppa" train "${run[@]}" --out "$tmp/z2" --zero 3 > /dev/null 2> "$tmp/err"
expect "--zero 3: refused (exit 2)" sh -c "test $? -eq 2 && grep -q -- 'must be 0, 1 or 2' '$tmp/err'"

# -- LoRA and bf16 under 2 ranks
lora=(--lora-r 4 --lora-alpha 8 --lora-dropout 0.1)
"$ppa" train "${run[@]}" "${lora[@]}" --out "$tmp/l1" > /dev/null 2>&1
mpi "$ppa" train "${run[@]}" "${lora[@]}" --out "$tmp/l2" > /dev/null 2>&1
weights "$tmp/l1/adapter_model.safetensors" "$tmp/l2/adapter_model.safetensors" 1e-4 > "$tmp/py" 2>&1
expect "LoRA with dropout: 2 ranks = 1 process ($(cat "$tmp/py"))" has "$tmp/py" "weights within"
mpi "$ppa" train "${run[@]}" --precision bf16 --out "$tmp/b2" > /dev/null 2>&1
expect "bf16 under 2 ranks exits 0" test -f "$tmp/b2/model.safetensors"

# -- sft
printf '{"text": "abab abab abab"}\n{"text": "baba baba"}\n{"text": "aaaa bbbb"}\n{"text": "abba abba abba"}\n{"text": "bbb aaa"}\n' > "$tmp/sft.jsonl"
sft=(--model "$tmp/lm" --data "$tmp/sft.jsonl" --lr 1e-3 --epochs 3 --batch-size 4 --micro-batch 1 --threads 1)
"$ppa" sft "${sft[@]}" --out "$tmp/s1" > "$tmp/s1.log" 2> /dev/null
mpi "$ppa" sft "${sft[@]}" --out "$tmp/s2" > "$tmp/s2.log" 2> /dev/null
expect "2-rank sft exits 0" test -f "$tmp/s2/model.safetensors"
near "$tmp/s1.log" "$tmp/s2.log" 1e-5 > "$tmp/py" 2>&1
expect "sft log lines = one process's, to float rounding" has "$tmp/py" "near"
weights "$tmp/s1/model.safetensors" "$tmp/s2/model.safetensors" 1e-4 > "$tmp/py" 2>&1
expect "sft weights = one process's ($(cat "$tmp/py"))" has "$tmp/py" "weights within"

# -- score: the rows divided, the cache of one process byte for byte
"$ppa" score --model "$tmp/lm" --data "$tmp/all.jsonl" --out "$tmp/one.cache" 2> /dev/null
mpi "$ppa" score --model "$tmp/lm" --data "$tmp/all.jsonl" --out "$tmp/two.cache" 2> /dev/null
expect "sharded score = one process, bytes" cmp -s "$tmp/one.cache" "$tmp/two.cache"

# -- the reading commands: the rows divided, one process's bytes
printf '{"prompt": "q1"}\n{"prompt": "q2"}\n{"prompt": "q3"}\n' > "$tmp/prompts.jsonl"
"$ppa" logprobs --model "$tmp/lm" --data "$tmp/all.jsonl" > "$tmp/lp1" 2> /dev/null
mpi "$ppa" logprobs --model "$tmp/lm" --data "$tmp/all.jsonl" > "$tmp/lp2" 2> /dev/null
expect "sharded logprobs = one process, bytes" cmp -s "$tmp/lp1" "$tmp/lp2"
"$ppa" eval --model "$tmp/two" --ref "$tmp/lm" --data "$tmp/all.jsonl" > "$tmp/ev1" 2> /dev/null
mpi "$ppa" eval --model "$tmp/two" --ref "$tmp/lm" --data "$tmp/all.jsonl" > "$tmp/ev2" 2> /dev/null
expect "sharded eval = one process, bytes" cmp -s "$tmp/ev1" "$tmp/ev2"
gen=(--model "$tmp/two" --prompts "$tmp/prompts.jsonl" --max-new-tokens 6 --temperature 1 --n 3 --seed 5)
"$ppa" generate "${gen[@]}" --out "$tmp/g1.jsonl" 2> /dev/null
mpi "$ppa" generate "${gen[@]}" --out "$tmp/g2.jsonl" 2> /dev/null
expect "sharded sampling = one process, bytes" cmp -s "$tmp/g1.jsonl" "$tmp/g2.jsonl"
/usr/bin/python3 - "$tmp" <<'P'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
json.dump(dict(c, architectures=["LlamaForSequenceClassification"], num_labels=1, pad_token_id=257), open(d + "/rm.json", "w"))
P
"$ppa" init --config "$tmp/rm.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/rm" --seed 2 > /dev/null 2>&1
"$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --out "$tmp/j1.jsonl" 2> /dev/null
mpi "$ppa" judge --reward-model "$tmp/rm" --data "$tmp/all.jsonl" --out "$tmp/j2.jsonl" 2> /dev/null
expect "sharded reward-model judging = one process, bytes" cmp -s "$tmp/j1.jsonl" "$tmp/j2.jsonl"
printf 'Q: {prompt} 1: {response_A} 2: {response_B} ->\n' > "$tmp/pair.txt"
"$ppa" judge --pair-model "$tmp/lm" --pair-template "$tmp/pair.txt" --data "$tmp/all.jsonl" --out "$tmp/p1.jsonl" 2> /dev/null
mpi "$ppa" judge --pair-model "$tmp/lm" --pair-template "$tmp/pair.txt" --data "$tmp/all.jsonl" --out "$tmp/p2.jsonl" 2> /dev/null
expect "sharded pair-model judging = one process, bytes" cmp -s "$tmp/p1.jsonl" "$tmp/p2.jsonl"
expect "every row judged" test "$(wc -l < "$tmp/p2.jsonl")" -eq 24
mpi "$ppa" judge --judge afinn --data "$tmp/j1.jsonl" --out "$tmp/j3.jsonl" 2> /dev/null
"$ppa" judge --judge afinn --data "$tmp/j1.jsonl" --out "$tmp/j4.jsonl" 2> /dev/null
expect "sharded lexicon judging = one process, bytes" cmp -s "$tmp/j3.jsonl" "$tmp/j4.jsonl"
printf '{"prompt": "q", "responses": ["good"]}\n{"prompt": "q", "responses": 3}\n' > "$tmp/badj.jsonl"
mpi "$ppa" judge --judge afinn --data "$tmp/badj.jsonl" --out "$tmp/j5.jsonl" > /dev/null 2> "$tmp/err"
expect "a bad row on rank 1 stops the job" test $? -ne 0
expect "naming its line" has "$tmp/err" "badj.jsonl:2:"
expect "nothing written" not test -e "$tmp/j5.jsonl"

# -- faults: a rank that dies stops the job within seconds; the last checkpoint stays whole
long=(--model "$tmp/lm" --data "$tmp/all.jsonl" --list-size 4 --batch-size 2 --micro-batch 1 --lr 1e-3 --epochs 400
      --threads 1 --save-every 5)
mpi "$ppa" train "${long[@]}" --out "$tmp/k" > /dev/null 2>&1 &
job=$!
for _ in $(seq 1 300); do [ -d "$tmp/k/checkpoint-10" ] && break; sleep 0.1; done
victim=$(pids_of "ppa train --model $tmp/lm" | while read -r pid; do
  tr '\0' ' ' 2> /dev/null < "/proc/$pid/cmdline" | grep -q "^$ppa " && echo "$pid"; done | tail -1)
t0=$(date +%s.%N)
kill -9 "$victim" 2> /dev/null
wait "$job"
status=$?
t1=$(date +%s.%N)
expect "a killed rank stops the job (exit $status)" test "$status" -ne 0
expect "within seconds ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)" awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 20) }'
expect "no rank left running" test -z "$(pids_of "--out $tmp/k")"
last=$(ls -d "$tmp"/k/checkpoint-[0-9]* | grep -v partial | sort -t- -k2 -n | tail -1)
timeout 5 "$ppa" train "${long[@]}" --out "$tmp/k" --resume "$last" > /dev/null 2> "$tmp/err" # its checksums verified
expect "the last checkpoint resumes ($last)" has "$tmp/err" "resuming at step ${last##*-} "
PPA_TEST_DIE_IN_SAVE=1 mpi "$hooks" train "${run[@]}" --out "$tmp/d" --save-every 2 > /dev/null 2>&1
expect "rank 0 dying in a save stops the job" test $? -ne 0
expect "leaving no checkpoint but the partial one" not test -d "$tmp/d/checkpoint-2"

# -- a rank that stops answering (SIGSTOP, as a hung node): after --collective-timeout the job ends, naming the rank
# and the collective; the last checkpoint resumes and the resumed run finishes. The run is long enough (1000 steps,
# a checkpoint every 5) that rank 1 is stopped early in it.
stop=(--model "$tmp/lm" --data "$tmp/all.jsonl" --list-size 4 --batch-size 2 --micro-batch 1 --lr 1e-3 --max-steps 1000
      --threads 1)
# rank_pid OUT R: the pid of rank R of the run writing to OUT (its environment says OMPI_COMM_WORLD_RANK=R)
rank_pid() {
  local pid
  for pid in $(pids_of "--out $1"); do
    tr '\0' ' ' 2> /dev/null < "/proc/$pid/cmdline" | grep -q "^$ppa " &&
      tr '\0' '\n' 2> /dev/null < "/proc/$pid/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$pid"
  done | head -1
}
# stop_rank OUT R: stops rank R of the run writing OUT once its second checkpoint is there; sets t0 and victim
stop_rank() {
  for _ in $(seq 1 1500); do [ -d "$1/checkpoint-10" ] && break; sleep 0.02; done
  victim=$(rank_pid "$1" "$2")
  t0=$(date +%s.%N)
  kill -STOP "$victim"
}
# unstop PID: no stopped process outlives the test, whatever happened
unstop() { kill -CONT "$1" 2> /dev/null; kill -KILL "$1" 2> /dev/null; return 0; }
seconds() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
timeout 60 mpirun -np 2 --oversubscribe "$ppa" train "${stop[@]}" --save-every 5 --collective-timeout 3 \
  --out "$tmp/st" > /dev/null 2> "$tmp/st.err" &
job=$!
stop_rank "$tmp/st" 1
wait "$job"
status=$?
took=$(seconds "$t0")
expect "rank 1 found and stopped (pid ${victim:-none})" test -n "$victim"
expect "a stopped rank ends the job (exit $status, not timeout's 124)" test "$status" -ne 0 -a "$status" -ne 124
expect "within the 3 s timeout and a few seconds ($took s)" awk -v t="$took" 'BEGIN { exit !(t < 12) }'
named='^ppa\[rank 0\]: the (all-reduce|broadcast|all-gather|barrier) at src/[a-z_/]+\.c:[0-9]+ \(collective [0-9]+\) '
named+='waited [0-9.]+ s \(--collective-timeout 3\) for rank 1, which does not answer \(stopped'
expect "rank 0 names rank 1 and the collective" grep -qE "$named" "$tmp/st.err"
expect "no rank left behind" test -z "$(pids_of "--out $tmp/st")"
unstop "$victim"
last=$(ls -d "$tmp"/st/checkpoint-[0-9]* | grep -v partial | sort -t- -k2 -n | tail -1)
timeout 120 "$ppa" train "${stop[@]}" --out "$tmp/st" --resume "$last" > /dev/null 2> "$tmp/err"
expect "the last checkpoint ($last) resumes and the run finishes" test $? -eq 0 -a -f "$tmp/st/model.safetensors"
expect "from its step" has "$tmp/err" "resuming at step ${last##*-} "
# rank 0 stopped: rank 1 names it
timeout 60 mpirun -np 2 --oversubscribe "$ppa" train "${stop[@]}" --save-every 5 --collective-timeout 2 \
  --out "$tmp/st0" > /dev/null 2> "$tmp/st0.err" &
job=$!
stop_rank "$tmp/st0" 0
wait "$job"
status=$?
took=$(seconds "$t0")
expect "a stopped rank 0 ends the job too (exit $status, $took s)" \
  awk -v s="$status" -v t="$took" 'BEGIN { exit !(s != 0 && s != 124 && t < 11) }'
expect "rank 1 names rank 0" \
  grep -qE '^ppa\[rank 1\]: the [a-z-]+ at .* \(--collective-timeout 2\) for rank 0, which does not answer' "$tmp/st0.err"
expect "no rank left behind" test -z "$(pids_of "--out $tmp/st0")"
unstop "$victim"

# -- a rank whose step fails (the test hook: rank 1's step 2) says so before the step's gradient sum: every rank ends
# at once with the failure, the others naming the rank (none waits for the collective timeout)
timeout 60 mpirun -np 2 --oversubscribe -x PPA_TEST_FAIL_STEP=1:2 "$hooks" train "${stop[@]}" --max-steps 4 \
  --collective-timeout 30 --out "$tmp/sf" > /dev/null 2> "$tmp/sf.err"
status=$?
expect "a failing step ends the job (exit $status, not the timeout's)" test "$status" -ne 0 -a "$status" -ne 124
expect "rank 1 says why, rank 0 names rank 1" sh -c "grep -q '^ppa\[rank 1\]: train: step 2: a test' '$tmp/sf.err' &&
  grep -q '^ppa\[rank 0\]: train: step 2: rank 1: a test' '$tmp/sf.err'"

# -- the commands that run in one process refuse several ranks
mpi "$ppa" winrate --a "$tmp/g1.jsonl" --b "$tmp/g1.jsonl" --judge afinn > /dev/null 2> "$tmp/err"
expect "winrate under 2 ranks is refused" test $? -ne 0
expect "saying which commands divide their work" has "$tmp/err" "runs in one process"
report
