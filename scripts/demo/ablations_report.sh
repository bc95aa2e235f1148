#!/usr/bin/env bash
# ablations_report.sh: make demo-ablations' tables (scripts/demo/ablations_report.js) and plots (gnuplot):
# ablations.png (each setting's difference from PPA's defaults by both held-out judges, with the paper's),
# flip_curve.png (Figure 2 (a)) and flip_hist.png (Figure 2 (b)-(c)).
# Usage: scripts/demo/ablations_report.sh DIR ABLATIONS.tsv "FLIP METHODS" "SEEDS"
set -euo pipefail
dir=$1 tsv=$2 flip_methods=$3 seeds=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
node "$here/ablations_report.js" "$dir" "$tsv" "$flip_methods" "$seeds"
command -v gnuplot > /dev/null || exit 0
cd "$dir"
n=$(wc -w <<< "$flip_methods") # the series of the two Figure-2 plots, titled by the data files' column headers
gnuplot <<G
set terminal pngcairo size 1100,600 font ",10" noenhanced
set output "ablations.png"
set title "PPA ablations: win rate against the SFT model minus PPA's defaults (paired over prompts and seeds, 95% interval)"
set ylabel "difference from PPA's defaults (percentage points)"
set xtics rotate by -35 left
set grid ytics
set key below
stats "ablations.dat" using 1 nooutput
set xrange [-0.6:STATS_max + 0.6]
set arrow from graph 0, first 0 to graph 1, first 0 nohead dt 2
plot "ablations.dat" using (\$1 - 0.15):3:4:5:xtic(2) with yerrorbars pt 7 ps 1.2 lw 1.5 title "ours, RM-score judge", \
     "" using (\$1 + 0.15):6:7:8 with yerrorbars pt 5 ps 1.2 lw 1.5 title "ours, VADER judge", \
     "" using 1:9 with points pt 9 ps 1.8 lc rgb "black" title "paper (Qwen2-0.5B), scoring judge"

set output "flip_curve.png"
unset arrow
set title "Held-out successful rank flips during training (mean and standard deviation over seeds)"
set xlabel "optimizer step"
set ylabel "successful flips (% of pairs the SFT model ranks wrongly)"
set xtics norotate
set autoscale
set xrange [-1:*]
set offsets 0, 2, 0, 0
set key inside left top vertical
plot for [i = 0:$((n - 1))] "flip_curve.dat" index i using 1:2:3 with yerrorlines lw 2 pt 5 + 2 * i title columnheader(1)

set output "flip_hist.png"
set title "Held-out flips by the SFT model's log-likelihood gap X, summed over seeds: gained where X < 0, lost (< 0) where X >= 0"
set xlabel "X = log pi_SFT(y_w|x) - log pi_SFT(y_l|x), nats"
set ylabel "pairs flipped (gained > 0, lost < 0)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30 left
set autoscale
unset offsets
set key inside right top vertical
plot for [c = 3:$((n + 2))] "flip_hist.dat" using c:xtic(1) title columnheader(c)
G
