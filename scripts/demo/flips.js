// flips.js: rank flips of held-out pairs by the reference's log-likelihood gap (the paper's Figure 2 (b)-(c)).
// A pair (w, l) of a list has psi_w > psi_l; its gap is X = log pi_ref(y_w|x) - log pi_ref(y_l|x) (summed log-probs);
// the reference ranks it wrongly when X < 0, and a successful flip is such a pair that the policy ranks rightly
// (log pi(y_w|x) >= log pi(y_l|x)), the definition of ppa eval (ties count as right). Identical responses of a row
// count once (the first), as in ppa eval, so the total equals its rank_flips_gained.
// Usage: node flips.js LISTS.jsonl REF_LOGPS.jsonl POLICY_LOGPS.jsonl
// Prints one line per bin of X: "lo hi pairs_ref_wrong flips_gained pairs_ref_right flips_lost", then "total G".
"use strict";
const fs = require("fs");
const EDGES = [-Infinity, -16, -8, -4, -2, -1, 0, 1, 2, 4, 8, 16, Infinity];
function jsonl(path) {
  return fs.readFileSync(path, "utf8").split("\n").filter((l) => l.trim() !== "").map((l, i) => {
    try { return JSON.parse(l); } catch (e) { throw new Error(`${path}:${i + 1}: ${e.message}`); }
  });
}
const [listsPath, refPath, polPath] = process.argv.slice(2);
if (!polPath) { console.error("usage: node flips.js LISTS.jsonl REF_LOGPS.jsonl POLICY_LOGPS.jsonl"); process.exit(2); }
const lists = jsonl(listsPath), ref = jsonl(refPath), pol = jsonl(polPath);
if (ref.length !== lists.length || pol.length !== lists.length)
  throw new Error(`${lists.length} lists but ${ref.length} and ${pol.length} log-prob lines`);
const bins = EDGES.slice(1).map(() => [0, 0, 0, 0]);
let gained = 0;
lists.forEach((row, r) => {
  const resp = row.all_responses, psi = row.overall_scores, a = ref[r].logps, b = pol[r].logps;
  if (a.length !== resp.length || b.length !== resp.length) throw new Error(`${listsPath}:${r + 1}: length mismatch`);
  const seen = new Set(), idx = [];
  resp.forEach((t, i) => { if (!seen.has(t)) { seen.add(t); idx.push(i); } });
  for (const w of idx) for (const l of idx) {
    if (!(psi[w] > psi[l])) continue;
    const x = a[w] - a[l], k = EDGES.findIndex((e, i) => i > 0 && x < e) - 1;
    const bin = bins[k < 0 ? bins.length - 1 : k], polRight = b[w] >= b[l];
    if (a[w] >= a[l]) { bin[2]++; if (!polRight) bin[3]++; } else { bin[0]++; if (polRight) { bin[1]++; gained++; } }
  }
});
bins.forEach((c, i) => console.log(`${EDGES[i]} ${EDGES[i + 1]} ${c.join(" ")}`));
console.log(`total ${gained}`);
