#!/usr/bin/env node
'use strict';
// The synthetic chat templates of tests/fixtures/jinja_cases.json rendered by @huggingface/jinja@0.5.11,
// the JavaScript port transformers.js uses, for test_jinja to compare ppa's renderer with where the port
// agrees with Python's Jinja2 (the cases file marks with "js_differs" where it does not).
//
//   node tests/ref/jinja_ref.cjs --cases tests/fixtures/jinja_cases.json --out FILE
//
// One line per rendering, pure ASCII JSON, as tests/ref/jinja_ref.py writes them:
//   {"name", "conv", "add_generation_prompt", "text"} or "error" in place of "text".

const { die, parseArgs, requireCached, asciiJson, writeLinesAtomic, JINJA_JS } = require('./refcommon.cjs');
const fs = require('fs');

const PROG = 'jinja_ref';
const USAGE = 'usage: node tests/ref/jinja_ref.cjs --cases FILE --out FILE\n';

function main() {
  const args = parseArgs(PROG, process.argv.slice(2), { cases: 'string', out: 'string' }, USAGE);
  if (!args.cases || !args.out) die(PROG, `missing arguments\n${USAGE}`);
  const { Template } = requireCached(PROG, JINJA_JS);
  let spec;
  try {
    spec = JSON.parse(fs.readFileSync(args.cases, 'utf8'));
  } catch (e) {
    die(PROG, `${args.cases}: ${e.message}`);
  }
  const out = [];
  let errors = 0;
  for (const t of spec.templates) {
    const convs = t.convs || spec.conversations.map((_, i) => i);
    for (const conv of convs) {
      for (const agp of t.gens || [false, true]) {
        const line = { name: t.name, conv, add_generation_prompt: agp };
        try {
          line.text = new Template(t.template).render({
            messages: spec.conversations[conv], tools: null, documents: null, add_generation_prompt: agp,
            bos_token: '<s>', eos_token: '</s>',
          });
        } catch (e) {
          line.error = String(e.message);
          errors++;
        }
        out.push(asciiJson(line));
      }
    }
  }
  writeLinesAtomic(args.out, out);
  process.stderr.write(`${PROG}: ${out.length} renderings (${errors} errors) -> ${args.out}\n`);
}

main();
