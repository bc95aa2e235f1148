// sublists.js: lists of N responses from lists of K, as the paper's list-size ablation draws them (its appendix
// table over list sizes): the response with the highest label, the one with the lowest, and N - 2 drawn uniformly
// from the others, in their original order. Identical responses are first reduced to one (as ppa train does), so
// that a list of N has N distinct responses where the row has them. The draws are a pure function of the seed and
// the line number.
// Usage: node sublists.js N SEED < lists.jsonl > lists_N.jsonl
"use strict";
const fs = require("fs");
const N = Number(process.argv[2]), SEED = Number(process.argv[3]);
if (!(N >= 2) || !Number.isInteger(SEED)) {
  console.error("usage: node sublists.js N SEED < lists.jsonl");
  process.exit(2);
}
// a 32-bit generator (mulberry32 recurrence) seeded from the seed and the line: enough for draws without repetition
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const lines = fs.readFileSync(0, "utf8").split("\n");
const out = [];
lines.forEach((line, ln) => {
  if (line.trim() === "") return;
  let row;
  try { row = JSON.parse(line); } catch (e) { throw new Error(`stdin:${ln + 1}: ${e.message}`); }
  const resp = row.all_responses, psi = row.overall_scores;
  if (!Array.isArray(resp) || !Array.isArray(psi) || resp.length !== psi.length)
    throw new Error(`stdin:${ln + 1}: all_responses and overall_scores must be arrays of one length`);
  const seen = new Set(), idx = [];
  resp.forEach((r, i) => { if (!seen.has(r)) { seen.add(r); idx.push(i); } });
  let keep = idx;
  if (idx.length > N) {
    let best = idx[0], worst = idx[0];
    for (const i of idx) { if (psi[i] > psi[best]) best = i; if (psi[i] < psi[worst]) worst = i; }
    const rest = idx.filter((i) => i !== best && i !== worst), rand = generator(SEED * 1000003 + ln);
    for (let i = rest.length - 1; i > 0; i--) { // Fisher-Yates; the first N - 2 are the draw
      const j = Math.floor(rand() * (i + 1));
      [rest[i], rest[j]] = [rest[j], rest[i]];
    }
    const chosen = new Set([best, worst, ...rest.slice(0, N - 2)]);
    keep = idx.filter((i) => chosen.has(i));
  }
  row.all_responses = keep.map((i) => resp[i]);
  row.overall_scores = keep.map((i) => psi[i]);
  out.push(JSON.stringify(row));
});
process.stdout.write(out.join("\n") + (out.length ? "\n" : ""));
