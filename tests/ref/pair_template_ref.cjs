#!/usr/bin/env node
'use strict';
// The RLHFlow pair-preference judge's input, built the way its reference code does
// (RLHFlow/pair-preference-model-LLaMA3-8B model card; RewardBench rewardbench/models/pairpm.py),
// with @huggingface/jinja@0.5.11 for the two chat templates and @huggingface/tokenizers@0.2.0
// for the ids, for a fixed list of (prompt, response A, response B):
//
//   context = plain chat template over [{user: prompt}]
//   message = "[CONTEXT] {context} [RESPONSE A] {response_A} [RESPONSE B] {response_B} \n"
//   text    = Llama 3 chat template over [{user: message}], "<|begin_of_text|>" removed
//   ids     = encode(text, {add_special_tokens: false})
//
//   node tests/ref/pair_template_ref.cjs --tokenizer DIR --out FILE
//
// DIR: a Llama 3 tokenizer folder (tokenizer.json, tokenizer_config.json; cache/tokenizers/llama3_1).
// The Llama 3 template is the config's, rendered with add_generation_prompt true. The reference
// calls it without add_generation_prompt, on a checkpoint whose template (Meta's of April 2024,
// below) always ends with the assistant header: the script asserts that both give the same text.
// Output, one pure-ASCII JSON line per case: {"name", "prompt", "response_a", "response_b", "text", "ids"}.
// test_pair_judge compares ppa's rendering of examples/pair_templates/rlhflow_llama3.txt with it.
// Cases whose response B ends in whitespace are left out: the Llama 3 template's trim removes
// that whitespace, which a literal template file cannot (src/judge/pair_judge.h).

const { die, parseArgs, requireCached, loadTokenizer, asciiJson, writeLinesAtomic, JINJA_JS } = require('./refcommon.cjs');

const PROG = 'pair_template_ref';
const USAGE = 'usage: node tests/ref/pair_template_ref.cjs --tokenizer DIR --out FILE\n';

// the model card's strings
const PLAIN = "\n{% for message in messages %}{% if loop.index0 % 2 == 0 %}\n\n<turn> user\n {{ message['content'] }}" +
  "{% else %}\n\n<turn> assistant\n {{ message['content'] }}{% endif %}{% endfor %}\n\n\n";
const PROMPT = (context, a, b) => `[CONTEXT] ${context} [RESPONSE A] ${a} [RESPONSE B] ${b} \n`;
// Meta-Llama-3-8B-Instruct's chat_template as released (April 2024): the header at the end is unconditional
const LLAMA3_APRIL_2024 = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = " +
  "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}" +
  "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}" +
  "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}";

const CASES = [
  ['short', 'What is 2+2?', '4', 'Five.'],
  ['multiline', 'Write a haiku\nabout rain.', 'Soft rain on the roof\nthe gutter hums a low tune\nsleep comes easily',
    'Rain.\n\nIt is wet.'],
  ['prompt_whitespace', '  Tell me a joke.\n', 'Why did the chicken cross the road?', 'No.'],
  ['leading_space_a', 'Hi', '   indented answer', 'plain answer'],
  ['braces', 'Format {x} with {{y}}', 'Use {x} and }{', 'print(f"{x}")'],
  ['special_text', 'x', 'a <|eot_id|> b', 'c<|start_header_id|>d'],
  ['unicode', 'Übersetze: café ☕', 'Kaffee — 咖啡', '🙂 emoji ok'],
  ['code', 'Sum a list in Python.', 'def s(xs):\n    return sum(xs)', 'sum(xs)'],
  ['digits', 'Compute 12345 * 6789.', '83810205', '83,810,205.'],
  ['long', 'Explain gravity. '.repeat(30), 'Mass attracts mass. '.repeat(40) + 'End.', 'Things fall down.'],
];

function main() {
  const args = parseArgs(PROG, process.argv.slice(2), { tokenizer: 'string', out: 'string' }, USAGE);
  if (!args.tokenizer || !args.out) die(PROG, `missing arguments\n${USAGE}`);
  const { Template } = requireCached(PROG, JINJA_JS);
  const { tokenizer: tok, config } = loadTokenizer(PROG, args.tokenizer);
  if (typeof config.chat_template !== 'string') die(PROG, `${args.tokenizer}: no chat_template`);
  const plain = new Template(PLAIN), llama3 = new Template(config.chat_template), april = new Template(LLAMA3_APRIL_2024);
  const bos = typeof config.bos_token === 'string' ? config.bos_token : config.bos_token.content;

  // the rendering the pair-pm README's data example shows: one newline before " [RESPONSE A]"
  const ctx = plain.render({ messages: [{ role: 'user', content: 'Q' }] });
  if (ctx !== '\n\n<turn> user\n Q\n') die(PROG, `plain template: got ${JSON.stringify(ctx)}, want "\\n\\n<turn> user\\n Q\\n"`, 1);

  const out = [];
  for (const [name, prompt, a, b] of CASES) {
    if (/\s$/.test(b)) die(PROG, `case ${name}: response B ends in whitespace (see the header)`);
    const context = plain.render({ messages: [{ role: 'user', content: prompt }] });
    const messages = [{ role: 'user', content: PROMPT(context, a, b) }];
    const text = llama3.render({ messages, bos_token: bos, add_generation_prompt: true }).replace(bos, '');
    const old = april.render({ messages, bos_token: bos }).replace(bos, '');
    if (text !== old) die(PROG, `case ${name}: the config's template and Meta's April 2024 template differ`, 1);
    const ids = tok.encode(text, { add_special_tokens: false }).ids;
    out.push(asciiJson({ name, prompt, response_a: a, response_b: b, text, ids }));
  }
  writeLinesAtomic(args.out, out);
  process.stderr.write(`${PROG}: ${CASES.length} pairs -> ${args.out}\n`);
}

main();
