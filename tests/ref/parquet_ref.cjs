// parquet_ref.cjs: Parquet fixtures written by an independent, maintained writer (parquet-wasm: arrow-rs's Parquet
// writer compiled to WebAssembly, with apache-arrow's JavaScript tables), each with the JSON Lines file of exactly
// the rows it holds, for tests/test_parquet.c and tests/test_parquet.sh.
//   node tests/ref/parquet_ref.cjs --modules cache/npm/node_modules --out cache/parquetref
// Writes OUT/*.parquet, OUT/*.jsonl (the twins), OUT/shards/train-0000N-of-00003.parquet (one data set in three
// files, the twin OUT/shards.jsonl) and OUT/manifest.jsonl: {"file", "jsonl", "codec", "version", "dictionary",
// "expect": "ok" or the feature ppa must name when it refuses the file}. Every file is read back with parquet-wasm's
// own reader and compared with its rows before it is listed (a fixture that does not hold its twin fails here).
'use strict';
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
const opt = (k) => { const i = args.indexOf(k); if (i < 0 || i + 1 >= args.length) throw new Error(`${k} is required`); return args[i + 1]; };
const mods = path.resolve(opt('--modules')), out = path.resolve(opt('--out'));
const arrow = require(path.join(mods, 'apache-arrow'));
const pw = require(path.join(mods, 'parquet-wasm', 'node', 'parquet_wasm.js'));
const {vectorFromArray, Utf8, LargeUtf8, Float64, Float32, Int64, Int32, Uint32, Bool, List, Field, Struct, Table, Map_} = arrow;
fs.mkdirSync(path.join(out, 'shards'), {recursive: true});
for (const dir of [out, path.join(out, 'shards')]) // a fixture set of an older version of this script must not linger
  for (const f of fs.readdirSync(dir)) if (/\.(parquet|jsonl)$/.test(f)) fs.unlinkSync(path.join(dir, f));

let seed = 20261129;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const WORDS = ['the', 'a', 'fruit', 'answer', 'pear', 'is', 'red', 'Paris', 'café', 'naïve', '東京', '🙂', 'x\ty', 'quote"d',
               'back\\slash', 'line\nbreak', 'zero', 'one', 'two'];
const text = (n) => Array.from({length: 1 + Math.floor(rnd() * n)}, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ');
const score = () => Math.round(rnd() * 100) / 10;
const msg = (role, content) => ({content, role}); // the Hub's order of the struct's fields
const list = (t) => new List(new Field('item', t, true));
const MSG = new Struct([new Field('content', new Utf8(), true), new Field('role', new Utf8(), true)]);

// data sets: rows (what the twin holds) and column types (what the Parquet file holds)
const sets = {};
{ // ListUltraFeedback: prompt, all_responses, overall_scores
  const rows = Array.from({length: 40}, (_, i) => {
    const k = 2 + (i % 4);
    return {prompt: `Question ${i}: ${text(12)}`, all_responses: Array.from({length: k}, () => text(20)),
            overall_scores: Array.from({length: k}, score)};
  });
  sets.lists = {rows, types: {prompt: new Utf8(), all_responses: list(new Utf8()), overall_scores: list(new Float64())}};
}
{ // ppa's native schema: prompt, responses, scores (what ppa generate and ppa judge write)
  const rows = Array.from({length: 12}, (_, i) => ({id: `n${i}`, prompt: `Say ${text(5)}`, responses: [text(8), text(8), text(8)],
                                                    scores: [score(), i % 4 ? score() : null, score()]}));
  sets.native = {rows, types: {id: new Utf8(), prompt: new Utf8(), responses: list(new Utf8()), scores: list(new Float64())}};
}
{ // HuggingFaceH4/ultrafeedback_binarized: chosen/rejected message lists
  const rows = Array.from({length: 30}, (_, i) => {
    const p = `Prompt ${i}: ${text(10)}`, c = text(15), r = text(15);
    return {prompt: p, prompt_id: `id${i}`, chosen: [msg('user', p), msg('assistant', c)],
            rejected: [msg('user', p), msg('assistant', r)], messages: [msg('user', p), msg('assistant', c)],
            score_chosen: 5 + score() / 2, score_rejected: score() / 2};
  });
  sets.binarized = {rows, types: {prompt: new Utf8(), prompt_id: new Utf8(), chosen: list(MSG), rejected: list(MSG),
                                  messages: list(MSG), score_chosen: new Float64(), score_rejected: new Float64()}};
}
{ // openbmb/UltraFeedback: completions with nested structs
  const ANN = new Struct([new Field('Rating', new Utf8(), true), new Field('Rationale', new Utf8(), true)]);
  const COMP = new Struct([new Field('model', new Utf8(), true), new Field('response', new Utf8(), true),
                           new Field('overall_score', new Float64(), true),
                           new Field('annotations', new Struct([new Field('helpfulness', ANN, true)]), true)]);
  const rows = Array.from({length: 20}, (_, i) => ({
    source: ['evol_instruct', 'sharegpt', 'flan'][i % 3], instruction: `Instruction ${i}: ${text(10)}`,
    models: ['m1', 'm2', 'm3', 'm4'],
    completions: Array.from({length: 4}, (_, j) => ({model: `m${j + 1}`, response: text(20), overall_score: score(),
      annotations: {helpfulness: {Rating: String(1 + (j % 5)), Rationale: text(8)}}}))}));
  sets.ultrafeedback = {rows, types: {source: new Utf8(), instruction: new Utf8(), models: list(new Utf8()), completions: list(COMP)}};
}
{ // TRL SFT: messages; prompt/completion
  const rows = Array.from({length: 25}, (_, i) => ({messages: [msg('system', 'Be brief.'), msg('user', `Q${i} ${text(8)}`),
    msg('assistant', text(10)), msg('user', text(5)), msg('assistant', text(10))].slice(i % 2 ? 1 : 0)}));
  sets.sft_messages = {rows, types: {messages: list(MSG)}};
  const rows2 = Array.from({length: 25}, (_, i) => ({prompt: `Q${i} ${text(8)}`, completion: text(12)}));
  sets.sft_completion = {rows: rows2, types: {prompt: new Utf8(), completion: new Utf8()}};
}
{ // AlpacaEval-like prompts
  const rows = Array.from({length: 15}, (_, i) => ({instruction: `Tell me ${text(6)}`, dataset: ['helpful_base', 'koala', 'oasst'][i % 3]}));
  sets.prompts = {rows, types: {instruction: new Utf8(), dataset: new Utf8()}};
}
{ // every kind of value: nulls, empty lists, null elements, nested lists, integers, floats, booleans, long strings
  const rows = Array.from({length: 1000}, (_, i) => ({
    i64: i % 7 === 0 ? null : (i * 1000003) % 2000000 - 1000000, i32: (i * 37) % 500 - 250, u32: (i * 2654435761) % 4294967296,
    f32: [0.1, 0.5, -2.25, 1e-8, 3.4e38][i % 5], f64: i % 11 === 0 ? null : (i % 13 === 0 ? NaN : i / 7),
    flag: i % 5 === 0 ? null : i % 3 === 0, word: i % 9 === 0 ? null : WORDS[i % WORDS.length],
    long: i % 500 === 1 ? 'long '.repeat(4000) + i : `r${i}`, tags: i % 4 === 0 ? [] : (i % 6 === 0 ? null : [WORDS[i % 5], WORDS[(i + 1) % 7]]),
    nums: i % 8 === 0 ? [] : [i, null, i / 2], grid: i % 10 === 0 ? null : [[i, i + 1], [], [i + 2]]}));
  sets.types = {rows, types: {i64: new Int64(), i32: new Int32(), u32: new Uint32(), f32: new Float32(), f64: new Float64(),
                              flag: new Bool(), word: new Utf8(), long: new LargeUtf8(), tags: list(new Utf8()),
                              nums: list(new Float64()), grid: list(list(new Int64()))}};
}

const toArrow = (v, t) => {
  if (v === null || v === undefined) return null;
  if (t instanceof Int64) return BigInt(v);
  if (t instanceof List) return v.map((x) => toArrow(x, t.children[0].type));
  if (t instanceof Struct) { const o = {}; for (const f of t.children) o[f.name] = toArrow(v[f.name], f.type); return o; }
  return v;
};
const table = (set) => {
  const cols = {};
  for (const [name, t] of Object.entries(set.types)) cols[name] = vectorFromArray(set.rows.map((r) => toArrow(r[name], t)), t);
  return new Table(cols);
};
// the twin: what JSON says of the row (NaN -> null, as JSON.stringify writes it; float32 as the float's shortest decimal)
const f32 = (x) => { const f = Math.fround(x); for (let d = 1; d <= 9; d++) { const s = Number(f.toPrecision(d)); if (Math.fround(s) === f) return s; } return f; };
const twinRow = (r, types) => {
  const o = {};
  for (const [name, t] of Object.entries(types)) o[name] = t instanceof Float32 && r[name] !== null ? f32(r[name]) : r[name];
  return o;
};
const sameAsJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const readBack = (bytes) => {
  const t = arrow.tableFromIPC(pw.readParquet(bytes).intoIPCStream());
  return t.toArray().map((r) => JSON.parse(JSON.stringify(r.toJSON(), (k, v) => (typeof v === 'bigint' ? Number(v) : v))));
};
const norm = (v) => { // arrow rows: Struct rows and Vectors as plain JSON
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map(norm);
  if (typeof v === 'object') { const o = {}; for (const k of Object.keys(v)) o[k] = norm(v[k]); return o; }
  return typeof v === 'number' && Number.isNaN(v) ? null : v;
};

const CODECS = {uncompressed: pw.Compression.UNCOMPRESSED, snappy: pw.Compression.SNAPPY, gzip: pw.Compression.GZIP, zstd: pw.Compression.ZSTD};
const manifest = [];
const write = (file, set, o) => {
  let b = new pw.WriterPropertiesBuilder().setCompression(o.codec).setWriterVersion(o.v2 ? pw.WriterVersion.V2 : pw.WriterVersion.V1)
    .setDictionaryEnabled(o.dict).setMaxRowGroupSize(o.group || 1000).setDataPageSizeLimit(o.page || 1024 * 1024);
  for (const [col, enc] of o.encodings || []) b = b.setColumnEncoding(col, enc);
  const bytes = pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table(set), 'stream')), b.build());
  fs.writeFileSync(path.join(out, file), bytes);
  return bytes;
};
const check = (file, bytes, twin) => {
  const back = readBack(bytes).map(norm);
  if (back.length !== twin.length) throw new Error(`${file}: parquet-wasm reads ${back.length} rows, the twin has ${twin.length}`);
  for (let i = 0; i < twin.length; i++) {
    const want = JSON.parse(JSON.stringify(twin[i]));
    const got = back[i];
    for (const k of Object.keys(want)) if (typeof want[k] === 'number' && typeof got[k] === 'number' && Math.fround(want[k]) === Math.fround(got[k])) got[k] = want[k];
    if (!sameAsJson(got, want)) throw new Error(`${file} row ${i + 1}: parquet-wasm reads ${JSON.stringify(got).slice(0, 300)}, the twin says ${JSON.stringify(want).slice(0, 300)}`);
  }
};

for (const [name, set] of Object.entries(sets)) {
  const twin = set.rows.map((r) => twinRow(r, set.types));
  fs.writeFileSync(path.join(out, `${name}.jsonl`), twin.map((r) => JSON.stringify(r)).join('\n') + '\n');
  // every codec x page version x dictionary for the value-rich sets, one rotating variant for the others
  const all = name === 'types' || name === 'binarized';
  let k = 0;
  for (const [cname, codec] of Object.entries(CODECS))
    for (const v2 of [false, true])
      for (const dict of [true, false]) {
        if (!all && k++ % 4 !== Object.keys(sets).indexOf(name) % 4) continue;
        const file = `${name}-${cname}-${v2 ? 'v2' : 'v1'}-${dict ? 'dict' : 'plain'}.parquet`;
        const bytes = write(file, set, {codec, v2, dict, group: name === 'types' ? 300 : 7, page: name === 'types' ? 2048 : 512});
        check(file, bytes, twin);
        manifest.push({file, jsonl: `${name}.jsonl`, codec: cname, version: v2 ? 2 : 1, dictionary: dict, expect: 'ok'});
      }
}
{ // explicit encodings: DELTA_* for integers and strings, BYTE_STREAM_SPLIT for floats
  const E = pw.Encoding, set = sets.types, twin = set.rows.map((r) => twinRow(r, set.types));
  for (const [tag, encodings] of [['delta', [['i64', E.DELTA_BINARY_PACKED], ['i32', E.DELTA_BINARY_PACKED], ['word', E.DELTA_BYTE_ARRAY], ['long', E.DELTA_LENGTH_BYTE_ARRAY]]],
                                  ['split', [['f32', E.BYTE_STREAM_SPLIT], ['f64', E.BYTE_STREAM_SPLIT]]]]) {
    const file = `types-${tag}.parquet`;
    const bytes = write(file, set, {codec: pw.Compression.SNAPPY, v2: true, dict: false, group: 1000, page: 4096, encodings});
    check(file, bytes, twin);
    manifest.push({file, jsonl: 'types.jsonl', codec: 'snappy', version: 2, dictionary: false, encodings: tag, expect: 'ok'});
  }
}
{ // one data set in three shards
  const set = sets.lists, twin = set.rows.map((r) => twinRow(r, set.types));
  fs.writeFileSync(path.join(out, 'shards.jsonl'), twin.map((r) => JSON.stringify(r)).join('\n') + '\n');
  for (let s = 0; s < 3; s++) {
    const part = {rows: set.rows.filter((_, i) => i % 3 === s ? false : true).filter(() => true), types: set.types};
    part.rows = set.rows.slice(Math.floor((s * set.rows.length) / 3), Math.floor(((s + 1) * set.rows.length) / 3));
    const file = `shards/train-0000${s}-of-00003.parquet`;
    const bytes = write(file, part, {codec: pw.Compression.SNAPPY, v2: false, dict: true, group: 5});
    check(file, bytes, part.rows.map((r) => twinRow(r, set.types)));
  }
}
{ // what ppa refuses by name
  const set = sets.lists;
  for (const [cname, codec, expect] of [['brotli', pw.Compression.BROTLI, 'Brotli'], ['lz4raw', pw.Compression.LZ4_RAW, 'LZ4_RAW']]) {
    const file = `refused-${cname}.parquet`;
    write(file, set, {codec, v2: false, dict: true});
    manifest.push({file, codec: cname, version: 1, dictionary: true, expect});
  }
  const M = new Map_(new Field('entries', new Struct([new Field('key', new Utf8(), false), new Field('value', new Float64(), true)]), false));
  const maps = {rows: [{m: new Map([['a', 1]])}, {m: new Map([['b', 2], ['c', null]])}], types: {m: M}};
  const t = new Table({m: vectorFromArray(maps.rows.map((r) => r.m), M)});
  fs.writeFileSync(path.join(out, 'refused-map.parquet'), pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(t, 'stream'))));
  manifest.push({file: 'refused-map.parquet', codec: 'snappy', version: 1, dictionary: true, expect: 'a map'});
}
fs.writeFileSync(path.join(out, 'manifest.jsonl'), manifest.map((m) => JSON.stringify(m)).join('\n') + '\n');
console.log(`parquet_ref: ${manifest.length} files and 3 shards in ${out}`);
