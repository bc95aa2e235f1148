#!/usr/bin/env bash
# report.sh: the demo's results.csv (one row per method and seed) to a table like the paper's Table 1
# (table.txt, printed), results.json, and PNG plots with gnuplot (win rate per method; reward against KL).
# Several seeds of a method give mean +- standard deviation (sample, n - 1).
# Usage: scripts/demo/report.sh results.csv "date, machine, seeds"
set -euo pipefail
csv=$1 note=${2:-}
dir=$(dirname "$csv")
awk -F, -v note="$note" -v json="$dir/results.json" -v agg="$dir/summary.dat" '
function label(m) {
  if (m == "sft") return "SFT (reference)"
  if (m == "ppa") return "PPA (NeuralNDCG)"
  if (m == "dpo_single_pair") return "DPO single pair"
  if (m == "dpo_all_pairs") return "DPO all pairs"
  if (m == "dpo_bpr") return "DPO BPR"
  if (m == "dpo_ovw") return "DPO others vs worst"
  if (m == "lipo") return "LiPO-lambda"
  if (m == "slic") return "SLiC"
  if (m == "listmle") return "ListMLE"
  if (m == "approx_ndcg") return "ApproxNDCG"
  return m
}
function cell(k, c,    mu, sd) {
  if (cnt[k, c] == 0) return "-"
  mu = sum[k, c] / cnt[k, c]
  if (cnt[k, c] < 2) return sprintf(fmt[c], mu)
  sd = sqrt((sq[k, c] - cnt[k, c] * mu * mu) / (cnt[k, c] - 1)); if (sd != sd || sd < 0) sd = 0
  return sprintf(fmt[c] " +- " fmt[c], mu, sd)
}
NR == 1 { for (c = 3; c <= NF; c++) col[c] = $c; nc = NF; next }
{
  k = $1
  if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  for (c = 3; c <= nc; c++) if ($c != "") {
    v = $c + 0; if (c == 5 || c == 7) v *= 100
    sum[k, c] += v; sq[k, c] += v * v; cnt[k, c]++
  }
  seeds[k] = seeds[k] (seeds[k] == "" ? "" : " ") $2
  rows[++nr] = $0
}
END {
  fmt[3] = "%.1f"; fmt[4] = "%.1f"; fmt[5] = "%.1f"; fmt[6] = "%.3f"; fmt[7] = "%.1f"; fmt[8] = "%.2f"; fmt[9] = "%.4f"
  printf "%-20s %16s %16s %16s %16s %16s %16s %18s\n", "method", "win% AFINN", "win% VADER", "rank acc %", "NDCG",
    "rank flips %", "KL to SFT", "AFINN reward"
  for (i = 1; i <= n; i++) {
    k = order[i]
    printf "%-20s %16s %16s %16s %16s %16s %16s %18s\n", label(k), cell(k, 3), cell(k, 4), cell(k, 5), cell(k, 6),
      cell(k, 7), cell(k, 8), cell(k, 9)
    printf "%d \"%s\" %s %s %s %s\n", i - 1, label(k), sum[k, 3] / cnt[k, 3], sum[k, 4] / cnt[k, 4],
      cnt[k, 8] ? sum[k, 8] / cnt[k, 8] : 0, cnt[k, 9] ? sum[k, 9] / cnt[k, 9] : 0 > agg
  }
  print "win%: greedy continuations of held-out prompts against the SFT model'"'"'s, ties count 1/2; rank acc: pairwise"
  print "ranking accuracy of s = beta log(pi/pi_sft) on held-out lists (SFT row: of the likelihood); rank flips: share of"
  print "the pairs the SFT model ranks wrongly that the policy ranks rightly; KL and reward: mean over sampled continuations."
  if (note != "") print note
  printf "{\"note\": \"%s\", \"rows\": [", note > json
  for (i = 1; i <= nr; i++) {
    split(rows[i], f, ",")
    printf "%s{\"method\": \"%s\", \"seed\": %s", (i > 1 ? ", " : ""), f[1], f[2] > json
    for (c = 3; c <= nc; c++) printf ", \"%s\": %s", col[c], (f[c] == "" ? "null" : f[c]) > json
    printf "}" > json
  }
  print "]}" > json
}' "$csv" | tee "$dir/table.txt"
command -v gnuplot > /dev/null || exit 0
cd "$dir"
gnuplot <<'G'
set terminal pngcairo size 900,480 font ",10"
set output "winrate.png"
set title "Win rate against the SFT model (greedy continuations of held-out prompts)"
set ylabel "win rate (%), ties count 1/2"
set yrange [0:100]
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30 left
set key top right
set arrow from graph 0, first 50 to graph 1, first 50 nohead dt 2
plot "summary.dat" using 3:xtic(2) title "AFINN (training judge)", "" using 4 title "VADER (held-out judge)"
set output "reward_kl.png"
unset arrow
set style data points
set title "Mean AFINN reward of sampled continuations against KL to the SFT model"
set xlabel "KL(policy || SFT), nats per continuation"
set ylabel "mean AFINN label"
set autoscale
set xtics norotate
set key off
plot "summary.dat" using 5:6 with points pt 7 ps 1.5, "" using 5:6:2 with labels offset 0,1 font ",9"
G
