#!/usr/bin/env node
'use strict';
// Reference tokenizer outputs from the official pure-JS port, @huggingface/tokenizers@0.2.0.
//
//   node tests/ref/tokenizer_ref.cjs --tokenizer DIR --strings FILE --out FILE [--family NAME]
//   node tests/ref/tokenizer_ref.cjs --tokenizer DIR --check-only
//
// DIR holds tokenizer.json and tokenizer_config.json. FILE is JSON Lines of {"text": ...}.
// For each input line, one output line (pure ASCII JSON):
//   {"text", "ids", "ids_nospecial", "decoded", "decoded_skip"}
//   ids           encode(text)                              post-processor applied (BOS...)
//   ids_nospecial encode(text, {add_special_tokens: false})
//   decoded       decode(ids_nospecial)                     default options: special tokens
//                                                           kept, clean_up_tokenization_spaces
//                                                           taken from tokenizer_config.json
//   decoded_skip  decode(ids, {skip_special_tokens: true})
// decode() of the package throws on an empty id list; "" is written instead (what the Rust
// crate returns).
//
// Before encoding, the reference id table of shared/spec/formats.md section c (plus a few
// behaviours from section b.2) is asserted for the tokenizer, recognised by the sha256 of its
// tokenizer.json (or named with --family qwen3|llama3_1|mistral). A mismatch exits with 1.

const { die, parseArgs, loadTokenizer, asciiJson, readJsonl, writeLinesAtomic } = require('./refcommon.cjs');

const PROG = 'tokenizer_ref';
const USAGE = `usage: node tests/ref/tokenizer_ref.cjs --tokenizer DIR (--strings FILE --out FILE | --check-only) [--family qwen3|llama3_1|mistral]\n`;

// formats.md section c, "Reference ids" (with special tokens), plus section b.2 behaviours.
const S1 = "Hello, world! I'm testing 12345 tokens.";
const S2 = 'Café naïve — 日本語テキスト 🙂 ok';
const S3 = '  leading spaces\n\nnew\tlines 3.14159 x=42';
const TABLE = {
  qwen3: {
    bos: null,
    ids: [
      [S1, [9707, 11, 1879, 0, 358, 2776, 7497, 220, 16, 17, 18, 19, 20, 11211, 13]],
      [S2, [34, 2577, 963, 94880, 586, 1959, 75402, 21894, 102819, 56833, 61803, 70534, 27484, 5394]],
      [S3, [220, 6388, 12621, 271, 931, 78390, 220, 18, 13, 16, 19, 16, 20, 24, 856, 28, 19, 17]],
      ['Hi', [13048]],
      ['<|im_start|>user\nHi<|im_end|>\n', [151644, 872, 198, 13048, 151645, 198]],
      ['<think>x</think>', [151667, 87, 151668]],
      ['e\u0301', [963]], // b.2: NFC, "é" = 963
    ],
    nospecial: [['<think>x</think>', [151667, 87, 151668]]],
    // b.2: NFC makes the round trip inexact; <think> is not special, so it survives skipping
    decoded: [['e\u0301', 'é']],
    decoded_skip: [['<|im_start|>user\nHi<|im_end|>\n', 'user\nHi\n'], ['<think>x</think>', '<think>x</think>']],
  },
  llama3_1: {
    bos: 128000,
    ids: [
      [S1, [128000, 9906, 11, 1917, 0, 358, 2846, 7649, 220, 4513, 1774, 11460, 13]],
      [S2, [128000, 34, 2642, 978, 95980, 588, 2001, 105180, 102158, 57933, 62903, 71634, 28584, 5509]],
      [S3, [128000, 220, 6522, 12908, 271, 943, 79490, 220, 18, 13, 9335, 2946, 865, 28, 2983]],
      ['Hi', [128000, 13347]],
    ],
    nospecial: [],
    // b.2: clean_up_tokenization_spaces is true in this config: " 's" -> "'s"
    decoded: [[" 's x", "'s x"], [S1, S1]],
    decoded_skip: [['Hi', 'Hi']],
  },
  mistral: {
    bos: 1,
    ids: [
      [S1, [1, 22557, 28725, 1526, 28808, 315, 28742, 28719, 8260, 28705, 28740, 28750, 28770, 28781, 28782, 16246, 28723]],
      [S2, [1, 334, 2015, 28797, 1879, 28920, 333, 1040, 28705, 29142, 29119, 30321, 29610, 29753, 29109, 29123, 28705, 29340, 3614]],
      [S3, [1, 259, 5374, 10599, 13, 13, 1095, 12, 8063, 28705, 28770, 28723, 28740, 28781, 28740, 28782, 28774, 1318, 28746, 28781, 28750]],
      ['Hi', [1, 15359]],
      ['<s>hi</s>', [1, 1, 12014, 2]], // BOS before the literal <s>: a double BOS
    ],
    nospecial: [['<s>hi</s>', [1, 12014, 2]]],
    decoded: [['<s>hi</s>', '<s> hi</s>']], // b.2: Prepend adds "▁" after each special token
    decoded_skip: [['<s>hi</s>', 'hi']],
  },
};

function same(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function decodeOr(tok, ids, opts) {
  return ids.length === 0 ? '' : tok.decode(ids, opts);
}

function reference(tok, text) {
  const ids = tok.encode(text).ids;
  const ids_nospecial = tok.encode(text, { add_special_tokens: false }).ids;
  return {
    text,
    ids,
    ids_nospecial,
    decoded: decodeOr(tok, ids_nospecial, {}),
    decoded_skip: decodeOr(tok, ids, { skip_special_tokens: true }),
  };
}

// Returns [number of checks, list of failures].
function checkTable(tok, family) {
  const t = TABLE[family];
  const fails = [];
  let n = 0;
  const expect = (what, text, got, want) => {
    n++;
    const ok = Array.isArray(want) ? same(got, want) : got === want;
    if (!ok) fails.push(`${family} ${what} ${JSON.stringify(text)}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  };
  for (const [text, want] of t.ids) {
    const r = reference(tok, text);
    expect('ids', text, r.ids, want);
    // the leading BOS is the only difference add_special_tokens makes for these strings
    const plain = t.bos !== null && want[0] === t.bos ? want.slice(1) : want;
    if (!t.nospecial.some(([s]) => s === text)) expect('ids_nospecial', text, r.ids_nospecial, plain);
  }
  for (const [text, want] of t.nospecial) expect('ids_nospecial', text, reference(tok, text).ids_nospecial, want);
  for (const [text, want] of t.decoded) expect('decoded', text, reference(tok, text).decoded, want);
  for (const [text, want] of t.decoded_skip) expect('decoded_skip', text, reference(tok, text).decoded_skip, want);
  return [n, fails];
}

function main() {
  const args = parseArgs(PROG, process.argv.slice(2),
    { tokenizer: 'string', strings: 'string', out: 'string', family: 'string', 'check-only': 'bool' }, USAGE);
  if (!args.tokenizer || (!args['check-only'] && (!args.strings || !args.out))) die(PROG, `missing arguments\n${USAGE}`);
  if (args.family && !(args.family in TABLE)) die(PROG, `--family must be one of ${Object.keys(TABLE).join(', ')}`);

  const t0 = process.hrtime.bigint();
  const { tokenizer: tok, sha256, family: detected } = loadTokenizer(PROG, args.tokenizer);
  const family = args.family || detected;
  if (family) {
    const [n, fails] = checkTable(tok, family);
    if (fails.length) die(PROG, `reference table of formats.md section c FAILED for ${args.tokenizer}:\n  ${fails.join('\n  ')}`, 1);
    process.stderr.write(`${PROG}: ${family}: reference table OK (${n} checks)\n`);
  } else {
    process.stderr.write(`${PROG}: no reference table for tokenizer.json sha256 ${sha256}; table check skipped\n`);
  }
  if (args['check-only']) return;

  const rows = readJsonl(PROG, args.strings);
  const out = [];
  let tokens = 0;
  for (const { line, obj } of rows) {
    if (obj === null || typeof obj !== 'object' || typeof obj.text !== 'string') die(PROG, `${args.strings}:${line}: expected {"text": string}`);
    let r;
    try {
      r = reference(tok, obj.text);
    } catch (e) {
      die(PROG, `${args.strings}:${line}: ${e.message}`, 1);
    }
    tokens += r.ids.length;
    out.push(asciiJson(r));
  }
  writeLinesAtomic(args.out, out);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stderr.write(`${PROG}: ${family || 'unknown'}: ${rows.length} strings, ${tokens} tokens -> ${args.out} (${s.toFixed(1)} s)\n`);
}

main();
