#!/usr/bin/env node
'use strict';
// Renders a checkpoint's real chat_template with @huggingface/jinja@0.5.11, the way
// transformers' apply_chat_template does (trim_blocks and lstrip_blocks are built into the
// package's Template), for every conversation of a cases file, with and without the
// generation prompt.
//
//   node tests/ref/chat_ref.cjs --tokenizer DIR --cases FILE --out FILE
//
// DIR holds tokenizer_config.json (its chat_template, bos_token, eos_token) and tokenizer.json.
// FILE is a JSON array of {"name", "messages": [{"role", "content"}]}. Output, one line per
// conversation and add_generation_prompt in (false, true), pure ASCII JSON:
//   {"name", "messages", "add_generation_prompt", "text", "ids_nospecial"}
// text          Template(chat_template).render({messages, bos_token, eos_token, add_generation_prompt})
// ids_nospecial @huggingface/tokenizers encode(text, {add_special_tokens: false}): the template
//               already writes BOS where the family uses one (formats.md section d, rule 4).
// bos_token / eos_token are passed as the config has them; a null one is left undefined, as
// transformers leaves it out of the render context.
//
// Before writing, renderings quoted in shared/spec/formats.md section d are asserted for the
// tokenizer (recognised by the sha256 of its tokenizer.json). A mismatch exits with 1.

const { die, parseArgs, requireCached, loadTokenizer, asciiJson, writeLinesAtomic, JINJA_JS } = require('./refcommon.cjs');
const fs = require('fs');

const PROG = 'chat_ref';
const USAGE = 'usage: node tests/ref/chat_ref.cjs --tokenizer DIR --cases FILE --out FILE\n';

const U = (c) => ({ role: 'user', content: c });
const A = (c) => ({ role: 'assistant', content: c });
const S = (c) => ({ role: 'system', content: c });
const L3 = (role, c) => `<|start_header_id|>${role}<|end_header_id|>\n\n${c}<|eot_id|>`;

// [messages, add_generation_prompt, expected text]
const CHECKS = {
  llama3_1: [
    // formats.md section d, "Rendered check"
    [[S('S.'), U('Q?'), A('A.')], false, '<|begin_of_text|>' + L3('system', 'S.') + L3('user', 'Q?') + L3('assistant', 'A.')],
    [[U('Q?')], true, '<|begin_of_text|>' + L3('user', 'Q?') + '<|start_header_id|>assistant<|end_header_id|>\n\n'],
    // content is trimmed; no default system block, no "Cutting Knowledge Date" (a Llama 3.0 template)
    [[U('  Q?\n')], false, '<|begin_of_text|>' + L3('user', 'Q?')],
  ],
  qwen3: [
    // no default system; the last assistant turn gets an empty think block
    [[U('Q?')], true, '<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n'],
    [[U('Q?'), A('A.')], false, '<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA.<|im_end|>\n'],
    [[S('S.'), U('Q?')], false, '<|im_start|>system\nS.<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n'],
  ],
};

function specialToken(v) {
  if (v === null || v === undefined) return undefined;
  return typeof v === 'string' ? v : v.content; // older configs store {"content": ...}
}

function main() {
  const args = parseArgs(PROG, process.argv.slice(2), { tokenizer: 'string', cases: 'string', out: 'string' }, USAGE);
  if (!args.tokenizer || !args.cases || !args.out) die(PROG, `missing arguments\n${USAGE}`);
  const { Template } = requireCached(PROG, JINJA_JS);
  const { tokenizer: tok, config, family } = loadTokenizer(PROG, args.tokenizer);

  let tpl = config.chat_template;
  if (Array.isArray(tpl)) tpl = (tpl.find((t) => t.name === 'default') || {}).template;
  if (typeof tpl !== 'string') die(PROG, `${args.tokenizer}/tokenizer_config.json has no chat_template`);
  const template = new Template(tpl);
  const bos_token = specialToken(config.bos_token);
  const eos_token = specialToken(config.eos_token);
  const render = (messages, add_generation_prompt) => {
    const ctx = { messages, add_generation_prompt };
    if (bos_token !== undefined) ctx.bos_token = bos_token;
    if (eos_token !== undefined) ctx.eos_token = eos_token;
    return template.render(ctx);
  };

  const fails = [];
  for (const [messages, agp, want] of CHECKS[family] || []) {
    const got = render(messages, agp);
    if (got !== want) fails.push(`${JSON.stringify(messages)} agp=${agp}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
  if (fails.length) die(PROG, `${family}: renderings of formats.md section d FAILED:\n  ${fails.join('\n  ')}`, 1);
  if (family) process.stderr.write(`${PROG}: ${family}: formats.md renderings OK (${CHECKS[family].length} checks)\n`);

  let cases;
  try {
    cases = JSON.parse(fs.readFileSync(args.cases, 'utf8'));
  } catch (e) {
    die(PROG, `${args.cases}: ${e.message}`);
  }
  if (!Array.isArray(cases)) die(PROG, `${args.cases}: expected a JSON array of {"name", "messages"}`);
  const out = [];
  const dated = [];
  cases.forEach((c, i) => {
    if (!c || !Array.isArray(c.messages)) die(PROG, `${args.cases}: case ${i}: no "messages" list`);
    for (const agp of [false, true]) {
      let text;
      try {
        text = render(c.messages, agp);
      } catch (e) {
        die(PROG, `${args.cases}: case ${c.name ?? i}: render failed: ${e.message}`, 1);
      }
      if (text.includes('Cutting Knowledge Date')) dated.push(c.name ?? i);
      const ids_nospecial = text.length ? tok.encode(text, { add_special_tokens: false }).ids : [];
      out.push(asciiJson({ name: c.name ?? String(i), messages: c.messages, add_generation_prompt: agp, text, ids_nospecial }));
    }
  });
  writeLinesAtomic(args.out, out);
  process.stderr.write(`${PROG}: ${family || 'unknown'}: ${cases.length} conversations x 2 -> ${args.out}` +
    `; default system block with a date: ${dated.length ? 'yes (' + dated.length + ' renderings)' : 'none'}\n`);
}

main();
