#!/usr/bin/env bash
# report.sh: the demo's results.csv (one row per method and seed) and per_prompt.txt (each method's per-prompt win
# outcomes by judge and seed) to a table like the paper's Table 1 with mean +- standard deviation over seeds
# (sample, n - 1), the paired differences from PPA with 95% intervals, results.json, and PNG plots (gnuplot).
# Paired difference of method m from PPA by a judge: for each held-out prompt i, D_i = the mean over seeds of
# (m's outcome on i - PPA's outcome on i), each outcome against that seed's SFT model (1 win, 1/2 tie, 0 loss);
# the difference is mean(D) and its interval mean(D) -+ 1.96 sd(D) / sqrt(prompts): paired over prompts and seeds,
# with the prompt as the unit of sampling.
# results.csv and results.json depend on the inputs only (a rerun writes the same bytes); RUN (date, duration) goes
# to the table's last line only.
# NAMES (the ablations' table, scripts/demo/ablations.tsv) names the rows by its second column.
# Usage: scripts/demo/report.sh results.csv per_prompt.txt CONTEXT KERNELS LABEL_STATS RUN [NAMES]
set -euo pipefail
csv=$1 pp=$2 note=${3:-} kernels=${4:-} labels=${5:-} run=${6:-} names=${7:-}
dir=$(dirname "$csv")
awk -F, -v note="$note" -v run="$run" -v kernels="$kernels" -v labels="$labels" -v precision="${DEMO_PRECISION:-fp32}" -v json="$dir/results.json" \
    -v agg="$dir/summary.dat" -v pp="$pp" -v names="$names" '
BEGIN {
  if (names != "") while ((getline line < names) > 0) if (line !~ /^#/) { split(line, f, "\t"); named[f[1]] = f[2] }
}
function label(m) {
  if (m in named) return named[m]
  if (m == "sft") return "SFT (reference)"
  if (m == "ppa") return "PPA (NeuralNDCG)"
  if (m == "dpo_single_pair") return "DPO single pair"
  if (m == "dpo_all_pairs") return "DPO all pairs"
  if (m == "dpo_bpr") return "DPO BPR"
  if (m == "dpo_ovw") return "DPO others vs worst"
  if (m == "ranknet") return "RankNet"
  if (m == "lipo") return "LiPO-lambda"
  if (m == "slic") return "SLiC (beta 0.05)"
  if (m == "listmle") return "ListMLE"
  if (m == "approx_ndcg") return "ApproxNDCG"
  return m
}
function mean(k, c) { return cnt[k, c] ? sum[k, c] / cnt[k, c] : 0 }
function sd(k, c,    mu, v) {
  if (cnt[k, c] < 2) return 0
  mu = mean(k, c); v = (sq[k, c] - cnt[k, c] * mu * mu) / (cnt[k, c] - 1)
  return v > 0 ? sqrt(v) : 0
}
function cell(k, c) {
  if (cnt[k, c] == 0) return "-"
  if (cnt[k, c] < 2) return sprintf(fmt[c], mean(k, c))
  return sprintf(fmt[c] " +- " fmt[c], mean(k, c), sd(k, c))
}
function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
NR == 1 { for (c = 3; c <= NF; c++) col[c] = $c; nc = NF; next }
{
  k = $1
  if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  for (c = 3; c <= nc; c++) if ($c != "") {
    v = $c + 0; if (c == 6 || c == 8) v *= 100
    sum[k, c] += v; sq[k, c] += v * v; cnt[k, c]++
  }
  rows[++nr] = $0
}
END {
  # per-prompt outcomes: method seed judge o_1 o_2 ...
  while ((getline line < pp) > 0) {
    np = split(line, f, " ")
    m = f[1]; s = f[2]; j = f[3]
    if (!((m, j) in nseed)) nseed[m, j] = 0
    nseed[m, j]++; seedof[m, j, nseed[m, j]] = s
    prompts = np - 3
    for (i = 4; i <= np; i++) out[m, s, j, i - 3] = f[i]
  }
  fmt[3] = "%.1f"; fmt[4] = "%.1f"; fmt[5] = "%.1f"; fmt[6] = "%.1f"; fmt[7] = "%.3f"; fmt[8] = "%.1f"; fmt[9] = "%.2f"
  fmt[10] = "%.4f"
  printf "%-26s %13s %13s %13s %13s %15s %13s %13s %15s\n", "method", "win% RM-label", "win% RM-score", "win% VADER",
    "rank acc %", "NDCG", "rank flips %", "KL to SFT", "reward"
  for (i = 1; i <= n; i++) {
    k = order[i]
    printf "%-26s %13s %13s %13s %13s %15s %13s %13s %15s\n", label(k), cell(k, 3), cell(k, 4), cell(k, 5), cell(k, 6),
      cell(k, 7), cell(k, 8), cell(k, 9), cell(k, 10)
    printf "%d \"%s\" %s %s %s %s %s %s %s\n", i - 1, label(k), mean(k, 4), sd(k, 4), mean(k, 5), sd(k, 5), mean(k, 9),
      mean(k, 10), mean(k, 3) > agg
  }
  print "win%: 4 sampled continuations (T = 1) of each held-out prompt against 4 of the SFT model, every pair, ties 1/2,"
  print "by the labelling reward model (RM-label, the training judge), the scoring reward model (RM-score, trained on"
  print "other reviews labelled by people) and VADER; rank acc: pairwise ranking accuracy of s = beta log(pi/pi_sft) on"
  print "held-out lists (SFT row: of the likelihood); rank flips: share of the pairs the SFT model ranks wrongly that"
  print "the policy ranks rightly; KL: mean log-ratio to the SFT model of those samples; reward: their mean label psi."
  # paired differences from PPA
  ndiff = 0
  if (("ppa", "score") in nseed) {
    printf "\nDifference from PPA in win rate, percentage points, paired over %d prompts and the seeds (95%% interval):\n", prompts
    printf "%-26s %28s %28s\n", "method", "RM-score", "VADER"
    for (i = 1; i <= n; i++) {
      m = order[i]
      if (m == "sft" || m == "ppa" || !((m, "score") in nseed)) continue
      line = sprintf("%-26s", label(m))
      for (jj = 1; jj <= 2; jj++) {
        j = jj == 1 ? "score" : "vader"
        S = 0; Q = 0; ns = 0
        for (p = 1; p <= prompts; p++) {
          d = 0; c = 0
          for (t = 1; t <= nseed[m, j]; t++) {
            s = seedof[m, j, t]
            if (("ppa", s, j, p) in out) { d += out[m, s, j, p] - out["ppa", s, j, p]; c++ }
          }
          if (c) { d = 100 * d / c; S += d; Q += d * d; ns++ }
        }
        mu = S / ns; v = ns > 1 ? (Q - ns * mu * mu) / (ns - 1) : 0; se = v > 0 ? sqrt(v / ns) : 0
        lo = mu - 1.959963984540054 * se; hi = mu + 1.959963984540054 * se
        sig = (lo > 0 || hi < 0) ? " *" : "  "
        line = line sprintf(" %+6.1f [%+6.1f, %+6.1f]%s", mu, lo, hi, sig)
        dm[++ndiff] = m; dj[ndiff] = j; dmu[ndiff] = mu; dlo[ndiff] = lo; dhi[ndiff] = hi
      }
      print line
    }
    print "* the 95% interval excludes 0: a significant difference at this size; the others are not."
  }
  if (labels != "") print "labels: " labels
  if (kernels != "") print "kernels: " kernels
  if (note != "") print note (run != "" ? ", " run : "")
  printf "{\"machine\": \"%s\", \"kernels\": \"%s\", \"precision\": \"%s\", \"labels\": \"%s\", \"rows\": [", esc(note), esc(kernels), esc(precision), esc(labels) > json
  for (i = 1; i <= nr; i++) {
    split(rows[i], f, ",")
    printf "%s{\"method\": \"%s\", \"seed\": %s", (i > 1 ? ", " : ""), f[1], f[2] > json
    for (c = 3; c <= nc; c++) printf ", \"%s\": %s", col[c], (f[c] == "" ? "null" : f[c]) > json
    printf "}" > json
  }
  printf "], \"paired_difference_from_ppa\": [" > json
  for (i = 1; i <= ndiff; i++)
    printf "%s{\"method\": \"%s\", \"judge\": \"%s\", \"points\": %.4f, \"ci95\": [%.4f, %.4f]}", (i > 1 ? ", " : ""),
      dm[i], dj[i], dmu[i], dlo[i], dhi[i] > json
  print "]}" > json
}' "$csv" | tee "$dir/table.txt"
command -v gnuplot > /dev/null || exit 0
cd "$dir"
# one series per method in the reward-KL plot, so that a legend names them (labels would overlap)
series=$(awk '{ name = $0; sub(/^[0-9]+ "/, "", name); sub(/".*/, "", name)
  printf "%s\"summary.dat\" every ::%d::%d using 7:8 with points pt %d ps 1.6 title \"%s\"", (NR > 1 ? ", " : ""),
    NR - 1, NR - 1, 4 + (NR - 1) % 12, name }' summary.dat)
gnuplot <<G
set terminal pngcairo size 1000,520 font ",10"
set output "winrate.png"
set title "Win rate against the SFT model on held-out prompts (mean and standard deviation over seeds)"
set ylabel "win rate (%), ties count 1/2"
set yrange [30:70]
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set xtics rotate by -30 left
set key top right
set arrow from graph 0, first 50 to graph 1, first 50 nohead dt 2
plot "summary.dat" using 3:4:xtic(2) title "RM-score (held-out scoring judge)", "" using 5:6 title "VADER (held-out lexicon judge)"
set output "reward_kl.png"
unset arrow
set style data points
set title "Mean label of sampled continuations against KL to the SFT model (mean over seeds)"
set xlabel "KL(policy || SFT), nats per continuation"
set ylabel "mean label psi = sigmoid(RM-label)"
set autoscale
set xtics norotate
set key outside right
plot $series
G
