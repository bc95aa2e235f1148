// ablations_report.js: make demo-ablations' tables beside the paper's, and the data of its plots.
// Reads, in DIR: results.csv and results.json (scripts/demo/report.sh), the held-out evaluations of Figure 2's runs
// (flip_log_METHOD_sSEED.jsonl) and their flips by reference gap (flips_METHOD_sSEED.txt, flips.js).
// Writes: ablations.txt (printed), flips.json, ablations.dat, flip_curve.dat, flip_hist.dat (for gnuplot).
// Usage: node ablations_report.js DIR ABLATIONS.tsv "FLIP METHODS" "SEEDS"
"use strict";
const fs = require("fs"), path = require("path");
const [dir, tsv, flipArg, seedArg] = process.argv.slice(2);
if (!seedArg) { console.error("usage: node ablations_report.js DIR ABLATIONS.tsv METHODS SEEDS"); process.exit(2); }
const at = (f) => path.join(dir, f), read = (f) => fs.readFileSync(at(f), "utf8");
const seeds = seedArg.trim().split(/\s+/), flipMethods = flipArg.trim().split(/\s+/);
const NAMES = { ppa: "PPA (NeuralNDCG)", dpo_all_pairs: "DPO all pairs", lipo: "LiPO-lambda" };
const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
const sd = (v) => v.length < 2 ? 0 : Math.sqrt(v.reduce((a, b) => a + (b - mean(v)) ** 2, 0) / (v.length - 1));
const pm = (v, d) => v.length ? `${mean(v).toFixed(d)} +- ${sd(v).toFixed(d)}` : "-";
const sign = (x, d) => (x >= 0 ? "+" : "") + x.toFixed(d);
const out = [], print = (s) => out.push(s);

// ---- the ablations: our win rates and paired differences from PPA's defaults, the paper's beside them
const rows = fs.readFileSync(tsv, "utf8").split("\n").filter((l) => l && !l.startsWith("#")).map((l) => {
  const [name, label, options, pair, score] = l.split("\t");
  return { name, label, options, pair: pair === "-" ? null : Number(pair), score: score === "-" ? null : Number(score) };
});
const csv = read("results.csv").trim().split("\n").map((l) => l.split(","));
const col = Object.fromEntries(csv[0].map((c, i) => [c, i]));
const values = (name, c) => csv.slice(1).filter((r) => r[0] === name && r[col[c]] !== "").map((r) => Number(r[col[c]]));
const diffs = JSON.parse(read("results.json")).paired_difference_from_ppa;
const diff = (name, judge) => diffs.find((d) => d.method === name && d.judge === judge);
const base = rows.find((r) => r.name === "ppa");
const present = rows.filter((r) => values(r.name, "win_score").length);
print("Ablations of PPA: one setting changed from the defaults, each over the seeds; win rates against the SFT model;");
print("the difference from PPA's defaults in points, paired over prompts and seeds, with its 95% interval (* excludes 0);");
print("the paper's PPA win rates on Qwen2-0.5B (pair-preference judge / scoring judge) and its scoring difference.");
const head = ["setting", "win% RM-score", "win% VADER", "rank acc %", "KL to SFT", "diff RM-score [95%]",
  "diff VADER [95%]", "paper pair/scoring", "paper diff"];
const table = [head];
const dat = [];
present.forEach((r, i) => {
  const ci = (d) => d ? `${sign(d.points, 1)} [${sign(d.ci95[0], 1)}, ${sign(d.ci95[1], 1)}]${d.ci95[0] > 0 || d.ci95[1] < 0 ? " *" : ""}` : "";
  const ds = diff(r.name, "score"), dv = diff(r.name, "vader");
  const paperDiff = r.score !== null && base.score !== null && r.name !== "ppa" ? sign(r.score - base.score, 2) : "";
  table.push([r.label, pm(values(r.name, "win_score"), 1), pm(values(r.name, "win_vader"), 1),
    pm(values(r.name, "ranking_accuracy").map((x) => 100 * x), 1), pm(values(r.name, "kl"), 2), ci(ds), ci(dv),
    r.score !== null ? `${r.pair.toFixed(2)} / ${r.score.toFixed(2)}` : "-", paperDiff]);
  // gnuplot: index, label, our RM-score difference and interval, VADER's, the paper's scoring difference
  const g = (d) => d ? `${d.points.toFixed(4)} ${d.ci95[0].toFixed(4)} ${d.ci95[1].toFixed(4)}` : "0 0 0";
  dat.push(`${i} "${r.label}" ${g(ds)} ${g(dv)} ${paperDiff === "" ? (r.name === "ppa" ? "0" : "NaN") : paperDiff}`);
});
const width = head.map((_, c) => Math.max(...table.map((t) => t[c].length)));
table.forEach((t, i) => {
  print(t.map((x, c) => (c === 0 ? x.padEnd(width[c]) : x.padStart(width[c]))).join("  "));
  if (i === 0) print(width.map((w) => "-".repeat(w)).join("  "));
});
fs.writeFileSync(at("ablations.dat"), dat.join("\n") + "\n");

// ---- Figure 2 (a): the held-out successful rank-flip rate over training steps, mean and sd over seeds
const curve = {}, curveDat = [];
for (const m of flipMethods) {
  const bySeed = seeds.map((s) => read(`flip_log_${m}_s${s}.jsonl`).trim().split("\n")
    .map((l) => JSON.parse(l)).map((e) => [e.step, e.eval.rank_flip_gain_rate]));
  const steps = bySeed[0].map((p) => p[0]);
  curve[m] = [{ step: 0, mean: 0, sd: 0 }].concat(steps.map((st, k) => {
    const v = bySeed.map((b) => { if (!b[k] || b[k][0] !== st) throw new Error(`${m}: seeds evaluated at other steps`); return 100 * b[k][1]; });
    return { step: st, mean: mean(v), sd: sd(v) };
  }));
  curveDat.push(`"${NAMES[m] || m}" mean sd`); // a column header: gnuplot's title columnheader
  curve[m].forEach((p) => curveDat.push(`${p.step} ${p.mean.toFixed(4)} ${p.sd.toFixed(4)}`));
  curveDat.push("", "");
}
fs.writeFileSync(at("flip_curve.dat"), curveDat.join("\n"));
print("");
print("Figure 2 (a): held-out successful rank flips over training, % of the pairs the SFT model ranks wrongly that the");
print("policy ranks rightly (raw likelihood), mean +- sd over the seeds:");
const steps = curve[flipMethods[0]].map((p) => p.step);
print(["step".padEnd(18), ...steps.map((s) => String(s).padStart(11))].join(""));
for (const m of flipMethods)
  print([(NAMES[m] || m).padEnd(18), ...curve[m].map((p) => `${p.mean.toFixed(1)}+-${p.sd.toFixed(1)}`.padStart(11))].join(""));

// ---- Figure 2 (b)-(c): flips by the reference's log-likelihood gap, summed over the seeds
const hist = [];
for (const m of flipMethods)
  for (const s of seeds)
    read(`flips_${m}_s${s}.txt`).trim().split("\n").filter((l) => !l.startsWith("total")).forEach((l, b) => {
      const [lo, hi, wrong, gained, right, lost] = l.split(" ");
      hist[b] = hist[b] || { lo: Number(lo), hi: Number(hi), ref_wrong: 0, ref_right: 0, gained: {}, lost: {} };
      if (m === flipMethods[0]) hist[b].ref_wrong += Number(wrong), hist[b].ref_right += Number(right);
      hist[b].gained[m] = (hist[b].gained[m] || 0) + Number(gained);
      hist[b].lost[m] = (hist[b].lost[m] || 0) + Number(lost);
    });
print("");
print("Figure 2 (b)-(c): held-out pairs by the SFT model's log-likelihood gap X = log pi(y_w) - log pi(y_l) (nats), summed");
print("over the seeds: pairs it ranks wrongly (X < 0) and the successful flips of each method (% of those pairs); pairs it");
print("ranks rightly and the flips lost:");
print(["X in".padEnd(14), "pairs".padStart(7), ...flipMethods.map((m) => (NAMES[m] || m).padStart(22))].join(""));
const histDat = [`bin pairs ${flipMethods.map((m) => `"${NAMES[m] || m}"`).join(" ")}`];
const range = (h) => `[${h.lo === -Infinity ? "-inf" : h.lo}, ${h.hi === Infinity ? "inf" : h.hi})`;
hist.forEach((h) => {
  const n = h.hi <= 0 ? h.ref_wrong : h.ref_right, c = h.hi <= 0 ? h.gained : h.lost, tag = h.hi <= 0 ? "+" : "-";
  print([range(h).padEnd(14), String(n).padStart(7), ...flipMethods.map((m) =>
    `${tag}${c[m]} (${n ? (100 * c[m] / n).toFixed(1) : "-"}%)`.padStart(22))].join(""));
  histDat.push(`"${range(h)}" ${n} ${flipMethods.map((m) => (h.hi <= 0 ? c[m] : -c[m])).join(" ")}`);
});
fs.writeFileSync(at("flip_hist.dat"), histDat.join("\n") + "\n");
fs.writeFileSync(at("flips.json"), JSON.stringify({ eval_every: curve[flipMethods[0]][1] ? curve[flipMethods[0]][1].step : 0,
  seeds: seeds.map(Number), curve, by_reference_gap: hist.map((h) => ({ lo: String(h.lo), hi: String(h.hi),
    ref_wrong: h.ref_wrong, ref_right: h.ref_right, gained: h.gained, lost: h.lost })) }) + "\n");
fs.writeFileSync(at("ablations.txt"), out.join("\n") + "\n");
process.stdout.write(out.join("\n") + "\n");
