'use strict';
// Shared helpers for the JavaScript reference scripts (tokenizer_ref.cjs, chat_ref.cjs,
// bench/bench_tokenize_ref.cjs). The npm packages are loaded by absolute path from the
// git-ignored cache that scripts/fetch-fixtures.sh fills; nothing is installed into the repo.

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const ROOT = path.resolve(__dirname, '..', '..');
const CACHE = path.join(ROOT, 'cache');
const NPM = path.join(CACHE, 'npm');
const TOKENIZERS_JS = path.join(NPM, 'huggingface-tokenizers-0.2.0', 'dist', 'tokenizers.cjs');
const JINJA_JS = path.join(NPM, 'huggingface-jinja-0.5.11', 'dist', 'index.cjs');

// sha256 of the three tokenizer.json files (shared/spec/formats.md section c) -> family name
const KNOWN_TOKENIZERS = {
  aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4: 'qwen3',
  e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7: 'llama3_1',
  fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc: 'mistral',
};

function die(prog, msg, code = 2) {
  process.stderr.write(`${prog}: ${msg}\n`);
  process.exit(code);
}

// --name value pairs and --flag booleans; `spec` maps a name to 'string', 'bool' or 'list'.
function parseArgs(prog, argv, spec, usage) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      process.stdout.write(usage);
      process.exit(0);
    }
    if (!a.startsWith('--') || !(a.slice(2) in spec)) die(prog, `unknown argument '${a}'\n${usage}`);
    const name = a.slice(2);
    if (spec[name] === 'bool') {
      out[name] = true;
      continue;
    }
    if (i + 1 >= argv.length) die(prog, `${a} needs a value`);
    const v = argv[++i];
    if (spec[name] === 'list') (out[name] = out[name] || []).push(v);
    else out[name] = v;
  }
  return out;
}

function requireCached(prog, file) {
  if (!fs.existsSync(file)) {
    die(prog, `${path.relative(process.cwd(), file) || file} is missing: run scripts/fetch-fixtures.sh first`);
  }
  return require(file);
}

function sha256(buf) {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

// Loads DIR/tokenizer.json and DIR/tokenizer_config.json. Returns the Tokenizer, the parsed
// config, the sha256 of tokenizer.json and the family it identifies (or null).
function loadTokenizer(prog, dir) {
  const { Tokenizer } = requireCached(prog, TOKENIZERS_JS);
  const tjPath = path.join(dir, 'tokenizer.json');
  const tcPath = path.join(dir, 'tokenizer_config.json');
  for (const p of [tjPath, tcPath]) if (!fs.existsSync(p)) die(prog, `${p} not found (run scripts/fetch-fixtures.sh)`);
  const raw = fs.readFileSync(tjPath);
  const hash = sha256(raw);
  const config = JSON.parse(fs.readFileSync(tcPath, 'utf8'));
  const tokenizer = new Tokenizer(JSON.parse(raw.toString('utf8')), config);
  return { tokenizer, config, sha256: hash, family: KNOWN_TOKENIZERS[hash] || null };
}

// JSON with every non-ASCII UTF-16 unit escaped (\uXXXX, astral characters as surrogate
// pairs): the files are pure ASCII, and no reader can split a line at a raw U+2028/U+0085.
function asciiJson(obj) {
  return JSON.stringify(obj).replace(/[\u007f-\uffff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

// Reads JSON Lines; returns [{line, obj}], failing with FILE:LINE on a bad line.
function readJsonl(prog, file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    die(prog, `${file}: ${e.message}`);
  }
  const rows = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] === '' && i === lines.length - 1) break;
    try {
      rows.push({ line: i + 1, obj: JSON.parse(lines[i]) });
    } catch (e) {
      die(prog, `${file}:${i + 1}: ${e.message}`);
    }
  }
  return rows;
}

// Writes `lines` (strings without '\n') to `file` through a temporary file and a rename, so
// a reader (or the staleness stamp of fetch-fixtures.sh) never sees a half-written file.
function writeLinesAtomic(file, lines) {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, lines.length ? lines.join('\n') + '\n' : '');
  fs.renameSync(tmp, file);
}

module.exports = {
  ROOT, CACHE, NPM, TOKENIZERS_JS, JINJA_JS, KNOWN_TOKENIZERS,
  die, parseArgs, requireCached, sha256, loadTokenizer, asciiJson, readJsonl, writeLinesAtomic,
};
