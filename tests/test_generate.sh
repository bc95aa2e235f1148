#!/usr/bin/env bash
# CLI behaviour of `ppa generate` on a tiny random Llama with a byte-level
# tokenizer: output shape, determinism, --out, errors, --skip-invalid, and the
# output read back by `ppa logprobs`.
# Usage: tests/test_generate.sh PPA_BINARY. Prints "test_generate: N passed, N failed".
ppa=${1:-./ppa}
NAME=test_generate
. "$(dirname "$0")/lib.sh"

# -- a tiny Llama with a byte-level tokenizer.json (ids 0..255 the bytes, <s> 256, </s> 257)
tiny_model_files "$tmp"
"$ppa" init --config "$tmp/config.json" --tokenizer "$tmp/tokenizer.json" --out "$tmp/m" --seed 5 --init-std 0.3 > /dev/null 2>&1
expect "a tiny model" test -s "$tmp/m/model.safetensors"

# -- prompts in every accepted form; a blank line; a training line (extra keys ignored)
cat > "$tmp/p.jsonl" <<'J'
{"id": "a", "prompt": "hi", "system": "be brief"}
{"messages": [{"role": "user", "content": "why?"}], "prompt_id": "b"}

{"prompt_ids": [256, 104, 105]}
{"prompt": "hello", "responses": ["yes", "no"], "scores": [1, 0], "template": "none"}
{"instruction": "say \"x\"\n"}
J
n_prompts=5
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 12 > "$tmp/g1" 2> "$tmp/err"
expect "generate exits 0" test $? -eq 0
expect "one line per prompt" test "$(wc -l < "$tmp/g1")" -eq $n_prompts
expect "the summary line on stderr" grep -q "ppa generate: $n_prompts prompts, $n_prompts responses" "$tmp/err"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 12 > "$tmp/g2" 2> /dev/null
expect "greedy twice gives identical bytes" cmp -s "$tmp/g1" "$tmp/g2"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 12 --threads 1 > "$tmp/g2" 2> /dev/null
expect "greedy on 1 thread gives the same bytes" cmp -s "$tmp/g1" "$tmp/g2"
expect "prompt fields kept as given" grep -q '^{"id":"a","prompt":"hi","system":"be brief", "responses": \["' "$tmp/g1"
expect "messages and prompt_id kept" grep -q '^{"messages":\[{"role":"user","content":"why?"}\],"prompt_id":"b", "responses"' "$tmp/g1"
expect "pre-tokenized prompts get response_ids" grep -q '^{"prompt_ids":\[256,104,105\], "response_ids": \[\[' "$tmp/g1"
expect "training fields dropped, template kept" grep -q '^{"prompt":"hello","template":"none", "responses"' "$tmp/g1"
expect "an alias of prompt kept" grep -q '^{"instruction":"say \\"x\\"\\n", "responses"' "$tmp/g1"

# -- the structure of every line, checked with python3 (JSON valid, lengths agree)
check_json() { # check_json FILE K MAX_NEW
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, K, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    o = json.loads(line)
    fin, nt = o["finished"], o["n_tokens"]
    resp = o.get("response_ids", o.get("responses"))
    assert len(resp) == len(fin) == len(nt) == K, (n, "K")
    for j in range(K):
        assert 1 <= nt[j] <= cap, (n, j, "n_tokens", nt[j])
        assert nt[j] == cap or fin[j], (n, j, "stopped early without a stop token")
        if "response_ids" in o:
            ids = o["response_ids"][j]
            assert len(ids) == nt[j], (n, j, "len")
            assert (ids[-1] == 257) == fin[j], (n, j, "stop token appended iff finished")
            assert 257 not in ids[:-1], (n, j, "stop token inside")
PY
}
expect "greedy output: valid JSON, one response each" check_json "$tmp/g1" 1 12
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 30 -n 3 --temperature 1 --seed 7 > "$tmp/s1" 2> "$tmp/err"
expect "-n 3 --temperature 1 exits 0" test $? -eq 0
expect "-n 3: three responses per line" check_json "$tmp/s1" 3 30
expect "some sampled response ends on EOS" grep -q 'true' "$tmp/s1"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 30 --n 3 --temperature 1 --seed 7 > "$tmp/s2" 2> /dev/null
expect "sampling with the same seed (--n) gives identical bytes" cmp -s "$tmp/s1" "$tmp/s2"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 30 --num-samples 3 --temperature 1 --seed 8 > "$tmp/s3" 2> /dev/null
differ() { ! cmp -s "$1" "$2"; }
expect "another seed gives other samples" differ "$tmp/s1" "$tmp/s3"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 30 -n 3 --temperature 0.8 --top-p 0.9 > "$tmp/s4" 2> /dev/null
expect "--top-p accepted" check_json "$tmp/s4" 3 30
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 4 -n 2 > /dev/null 2> "$tmp/err"
expect "greedy with -n 2 prints a note" grep -q "all equal" "$tmp/err"

# -- independence from the other prompts: a prompt's samples depend on (seed, its line, j) only
head -n 1 "$tmp/p.jsonl" > "$tmp/one.jsonl"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/one.jsonl" --max-new-tokens 30 -n 3 --temperature 1 --seed 7 > "$tmp/s5" 2> /dev/null
expect "prompt 1 alone = prompt 1 among others" cmp -s "$tmp/s5" <(head -n 1 "$tmp/s1")

# -- continuous batching: --max-seqs 3 decodes one prompt's 3 samples at a time, the next prompt starting as one's
#    samples all end (they end at different steps on EOS above): the same bytes
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 30 -n 3 --temperature 1 --seed 7 --max-seqs 3 > "$tmp/s7" 2> /dev/null
expect "--max-seqs 3 (continuous batching) = every prompt at once" cmp -s "$tmp/s1" "$tmp/s7"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 30 -n 3 --temperature 1 --seed 7 --max-seqs 7 > "$tmp/s7" 2> /dev/null
expect "--max-seqs 7 (two prompts' samples at a time) = every prompt at once" cmp -s "$tmp/s1" "$tmp/s7"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-seqs -1 > /dev/null 2> "$tmp/err"
expect "--max-seqs -1 refused naming the option" sh -c "test $? -eq 2 && grep -q 'max-seqs' '$tmp/err'"

# -- ppa bench generate: the sampling timed on one loaded model (warm-up, then the fastest of --repeat calls)
printf '{"prompt_ids": [256, 104, 105]}\n{"prompt_ids": [256, 33]}\n' > "$tmp/pi.jsonl"
"$ppa" bench generate --model "$tmp/m" --prompts "$tmp/pi.jsonl" --max-new-tokens 5 -n 2 --repeat 1 --json > "$tmp/bg" 2> "$tmp/err"
expect "bench generate: one JSON line, 2 prompts x 2 samples, the exact sampler on the CPU" \
  sh -c "test $? -eq 0 && grep -q '\"prompts\": 2, \"samples\": 4,' '$tmp/bg' && grep -q '\"sampler\": \"exact\"' '$tmp/bg'"
"$ppa" bench generate --model "$tmp/m" --prompts "$tmp/pi.jsonl" --sampler device > /dev/null 2> "$tmp/err"
expect "bench generate --sampler device on the CPU: refused naming why" sh -c "test $? -eq 2 && grep -q 'draws on the GPU' '$tmp/err'"

# -- --out: atomic file, same bytes as stdout
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 12 --out "$tmp/out.jsonl" > "$tmp/stdout" 2> /dev/null
expect "--out exits 0" test $? -eq 0
expect "--out writes the file" cmp -s "$tmp/out.jsonl" "$tmp/g1"
expect "--out leaves stdout empty" test ! -s "$tmp/stdout"
expect "--out leaves no temporary file" test "$(ls "$tmp" | grep -c 'out.jsonl.tmp')" -eq 0

# -- the output is a data file: ppa logprobs scores it as it is (short responses: the random model's bytes are
# not valid UTF-8, and their text takes more tokens when read back, which must still fit the 64 positions)
"$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" --max-new-tokens 10 -n 3 --temperature 1 --seed 7 > "$tmp/s6" 2> /dev/null
"$ppa" logprobs --model "$tmp/m" --data "$tmp/s6" > "$tmp/lp" 2> "$tmp/err"
expect "ppa logprobs accepts the output" test $? -eq 0
expect "ppa logprobs: one line per prompt" test "$(wc -l < "$tmp/lp")" -eq $n_prompts
expect "pre-tokenized responses are scored as generated" \
  test "$(sed -n 3p "$tmp/lp" | sed -E 's/.*"n_tokens": (\[[^]]*\]).*/\1/')" = "$(sed -n 3p "$tmp/s6" | sed -E 's/.*"n_tokens": (\[[^]]*\]).*/\1/')"
sed -E 's/"finished": \[[^]]*\]/"scores": [3, 2, 1]/' "$tmp/s6" > "$tmp/scored.jsonl"
"$ppa" logprobs --model "$tmp/m" --data "$tmp/scored.jsonl" > /dev/null 2> "$tmp/err"
expect "with scores added too" test $? -eq 0

# -- bad input: FILE:LINE, exit 2; --skip-invalid counts
cat > "$tmp/bad.jsonl" <<'J'
{"prompt": "fine"}
{"prompt": 3}
{"prompt": "fine again"
{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
{"prompt_ids": [256, 999]}
{"responses": ["no prompt"]}
{"instruction": "y", "question": "z"}
{"prompt": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
{"prompt_ids": []}
{"id": "last", "prompt": "ok"}
J
"$ppa" generate --model "$tmp/m" --prompts "$tmp/bad.jsonl" > "$tmp/out" 2> "$tmp/err"
expect "a malformed prompt exits 2" test $? -eq 2
expect "and names FILE:LINE and the field" grep -q 'bad.jsonl:2: "prompt" must be a string or a message list' "$tmp/err"
expect "nothing written on error" test ! -s "$tmp/out"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/bad.jsonl" --out "$tmp/bad_out.jsonl" > /dev/null 2>&1
expect "--out not created on error" test ! -e "$tmp/bad_out.jsonl"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/bad.jsonl" --skip-invalid --max-new-tokens 3 > "$tmp/out" 2> "$tmp/err"
expect "--skip-invalid exits 0" test $? -eq 0
expect "--skip-invalid keeps the valid lines" test "$(wc -l < "$tmp/out")" -eq 2
expect "--skip-invalid counts" grep -q "skipped 8 of 10 lines" "$tmp/err"
expect "invalid JSON named" grep -q "bad.jsonl:3: skipped: invalid JSON" "$tmp/err"
expect "a conversation must end with a user turn" grep -q "bad.jsonl:4: skipped: " "$tmp/err"
expect "ids outside the vocabulary named" grep -q 'bad.jsonl:5: skipped: "prompt_ids"\[1\] is not a token id below 260' "$tmp/err"
expect "a line without a prompt named" grep -q 'bad.jsonl:6: skipped: no prompt' "$tmp/err"
expect "two aliases named" grep -q 'bad.jsonl:7: skipped: fields "instruction" and "question"' "$tmp/err"
expect "a prompt at the model's length named" grep -q 'bad.jsonl:8: skipped: the prompt has 76 tokens: the model allows 64' "$tmp/err"
expect "an empty prompt_ids named" grep -q 'bad.jsonl:9: skipped: "prompt_ids" must be a non-empty' "$tmp/err"
expect "the last valid line is written" grep -q '^{"id":"last"' "$tmp/out"

# -- the model's maximum length ends responses: prompt + response <= 64 tokens
printf '{"prompt_ids": [%s]}\n' "$(seq -s, 60)" > "$tmp/long.jsonl"
"$ppa" generate --model "$tmp/m" --prompts "$tmp/long.jsonl" --max-new-tokens 100 > "$tmp/out" 2> "$tmp/err"
expect "a response stops at the model's maximum length" grep -Eq '"n_tokens": \[[1-4]\]' "$tmp/out"

expect "the resolved settings on stderr" grep -q "format jsonl, template none, stop ids \[257\], 0 stop strings, temperature 0 (greedy), top-k 0, top-p 1, n 1, max-new-tokens 100, seed 42" "$tmp/err"

# -- a real chat tokenizer (npm fixture, when fetched): its own Jinja template, whose end of turn <|im_end|> stops
qwen=$(dirname "$0")/../cache/tokenizers/qwen3/tokenizer.json
if [ -s "$qwen" ]; then
  cat > "$tmp/qconfig.json" <<'J'
{"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
 "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
 "tie_word_embeddings": true, "eos_token_id": 151643}
J
  "$ppa" init --config "$tmp/qconfig.json" --tokenizer "$qwen" --out "$tmp/q" --seed 2 --init-std 0.3 > /dev/null 2>&1
  printf '%s\n' '{"id": "q1", "prompt": "Hello there"}' '{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}' > "$tmp/qp.jsonl"
  "$ppa" generate --model "$tmp/q" --prompts "$tmp/qp.jsonl" --max-new-tokens 6 -n 2 --temperature 1 > "$tmp/qout" 2> "$tmp/err"
  expect "qwen3 tokenizer: generate exits 0" test $? -eq 0
  expect "qwen3 tokenizer: its Jinja template, <|im_end|> (151645) added to the stop ids" grep -Eq "template jinja-[0-9a-f]{16}, stop ids \[151643, 151645\]" "$tmp/err"
  expect "qwen3 tokenizer: valid output" check_json "$tmp/qout" 2 6
  "$ppa" logprobs --model "$tmp/q" --data "$tmp/qout" > "$tmp/lp" 2> "$tmp/err"
  expect "qwen3 tokenizer: ppa logprobs accepts the output" test $? -eq 0 -a "$(wc -l < "$tmp/lp")" -eq 2
else
  echo "test_generate: SKIP the chat-tokenizer checks: $qwen not fetched (make fixtures)"
fi

# -- options
for args in "--top-p 0" "--top-p 1.5" "--temperature -1" "--temperature nan" "--max-new-tokens 0" "-n 0" "--n x" "--seed -1" "--bogus" "--template nope"; do
  # shellcheck disable=SC2086
  "$ppa" generate --model "$tmp/m" --prompts "$tmp/p.jsonl" $args > /dev/null 2> "$tmp/err"
  expect "bad option '$args' exits 2" test $? -eq 2
done
"$ppa" generate --prompts "$tmp/p.jsonl" > /dev/null 2> "$tmp/err"
expect "--model is required" test $? -eq 2
"$ppa" generate --model "$tmp/m" --prompts "$tmp/missing.jsonl" > /dev/null 2> "$tmp/err"
expect "a missing prompts file exits 2" test $? -eq 2
expect "and is named" grep -q "missing.jsonl: cannot open" "$tmp/err"
expect "ppa generate --help" "$ppa" generate --help > /dev/null
expect "ppa help lists generate" sh -c "'$ppa' help | grep -q '^  generate'"

report
