#!/usr/bin/env bash
# `ppa generate` for the general benchmarks (docs/commands.md): AlpacaEval's JSON array in, its model_outputs array
# out (every input field kept, "output" and "generator"); FastChat's MT-Bench question.jsonl in, its answer lines out
# (question_id, answer_id, model_id, choices[].turns, tstamp), each later turn asked after the model's own answer
# through the chat template; --stop, --top-k, the formats' defaults, same seed same bytes, and bad inputs.
# Usage: tests/test_eval_formats.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_eval_formats
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
export SOURCE_DATE_EPOCH=1700000000 # FastChat's tstamp: reproducible bytes
tiny_model_files "$tmp"
sed -i 's/"max_position_embeddings": 64/"max_position_embeddings": 512/' config.json # room for two turns
"$ppa" init --config config.json --tokenizer tokenizer.json --out mt --seed 7 --init-std 0.3 > /dev/null
# a chat template of its own (roles, an end-of-turn token after each message), as test_sft_formats.sh gives it
printf '%s\n' '{"chat_template": "{% for m in messages %}{{ m[\"role\"] }}: {{ m[\"content\"] }}</s>{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}", "eos_token": "</s>"}' > mt/tokenizer_config.json
py() { /usr/bin/python3 - "$@"; }
has() { grep -qF -- "$2" "$1"; }
G=(generate --model mt --max-new-tokens 12)
# the same model cut to 64 positions (RoPE: no position table), where the formats' long defaults end quickly
mkdir m64 && cp mt/* m64/ && sed -i 's/"max_position_embeddings": *512/"max_position_embeddings": 64/' m64/config.json

# ---- AlpacaEval: the evaluation set's layout (instruction, output and generator of the reference, dataset), an
# element without output/generator and with an extra field, non-ASCII text
cat > alpaca.json <<'J'
[
  {"dataset": "helpful_base", "instruction": "Name a fruit.", "output": "An apple.", "generator": "gpt4_1106_preview"},
  {"instruction": "Say hi.", "dataset": "oasst", "extra": [1, 2.5, null, {"k": "v"}]},
  {"instruction": "Übersetze: \"Katze\"\n", "dataset": "koala", "output": null, "generator": "x"}
]
J
"$ppa" "${G[@]}" --prompts alpaca.json --out a.json 2> err; st=$?
expect "a JSON array: generate exits 0 (exit $st: $(tail -1 err))" test $st -eq 0
expect "a JSON array is AlpacaEval's format by default, generator = the model folder's name" has err "format alpaca_eval,"
alpaca_check() { # alpaca_check OUTPUT GENERATOR: AlpacaEval's model_outputs against its input, field by field
  py alpaca.json "$1" "$2" <<'PY'
import json, sys
src, out, gen = json.load(open(sys.argv[1])), json.load(open(sys.argv[2], encoding="utf-8")), sys.argv[3]
assert isinstance(out, list) and len(out) == len(src), "one object per instruction"
for i, (s, o) in enumerate(zip(src, out)):
    assert isinstance(o, dict), i
    # AlpacaEval's judge reads instruction, output, generator (and dataset): all present, the right types
    for k in ("instruction", "output", "generator", "dataset"):
        assert k in o, (i, k)
    assert isinstance(o["output"], str) and o["generator"] == gen, (i, o["generator"])
    assert o["instruction"] == s["instruction"], (i, "array order")
    # every input field kept as given, in its order; output and generator replaced in place or added at the end
    keys = list(s) + [k for k in ("output", "generator") if k not in s]
    assert list(o) == keys, (i, list(o), keys)
    for k in s:
        if k not in ("output", "generator"):
            assert o[k] == s[k], (i, k)
PY
}
expect "AlpacaEval's fields, every input field kept in order, array order" alpaca_check a.json mt
"$ppa" "${G[@]}" --prompts alpaca.json --generator my-run > a2.json 2> /dev/null
expect "--generator names the generator" alpaca_check a2.json my-run
"$ppa" "${G[@]}" --prompts alpaca.json --format jsonl > native.jsonl 2> /dev/null
expect "the outputs are the responses ppa's own rows get" py a.json native.jsonl <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
n = [json.loads(l) for l in open(sys.argv[2])]
assert [o["output"] for o in a] == [r["responses"][0] for r in n]
PY
"$ppa" generate --model m64 --prompts alpaca.json --out /dev/null 2> err
expect "AlpacaEval's default max-new-tokens is 2048 (its model configs)" has err "max-new-tokens 2048,"
"$ppa" "${G[@]}" --prompts alpaca.json -n 2 > /dev/null 2> err; st=$?
expect "-n 2 with AlpacaEval's format: refused (exit 2)" sh -c "test $st -eq 2 && grep -q 'one output per instruction' err"
printf '%s\n' '{"instruction": "Name a fruit.", "dataset": "d"}' > rows.jsonl
"$ppa" "${G[@]}" --prompts rows.jsonl --format alpaca_eval > a3.json 2> /dev/null
expect "--format alpaca_eval on JSON Lines: an array" py a3.json <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
assert len(a) == 1 and list(a[0]) == ["instruction", "dataset", "output", "generator"]
PY
printf '[]\n' > empty.json
"$ppa" "${G[@]}" --prompts empty.json > a4.json 2> /dev/null
expect "an empty array gives an empty array" sh -c "test \"\$(cat a4.json)\" = '[]'"

# ---- MT-Bench: FastChat's question.jsonl (a reference on one, a question of one turn)
cat > question.jsonl <<'J'
{"question_id": 81, "category": "writing", "turns": ["Write a poem.", "Make it shorter."]}
{"question_id": 111, "category": "math", "turns": ["What is 2+2?", "And 3+3?"], "reference": ["4", "6"]}
{"question_id": 160, "category": "stem", "turns": ["One turn only."]}
J
"$ppa" "${G[@]}" --prompts question.jsonl -n 2 --out mt1.jsonl 2> err; st=$?
expect "question.jsonl: generate exits 0 (exit $st: $(tail -1 err))" test $st -eq 0
expect "rows with turns are MT-Bench's format by default, FastChat's temperatures" has err "format mt_bench, template jinja-"
expect "... with FastChat's temperatures per category" has err "temperature FastChat's per category"
expect "FastChat's answer lines: fields, types, choices and turns" py question.jsonl mt1.jsonl <<'PY'
import json, sys
qs = [json.loads(l) for l in open(sys.argv[1])]
lines = open(sys.argv[2], encoding="utf-8").read().split("\n")
assert lines[-1] == "" and len(lines) - 1 == len(qs), "one line per question"
alphabet = set("23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")  # shortuuid's
ids = set()
for q, line in zip(qs, lines):
    a = json.loads(line)
    # what fastchat/llm_judge/gen_model_answer.py writes, in its order
    assert list(a) == ["question_id", "answer_id", "model_id", "choices", "tstamp"], list(a)
    assert a["question_id"] == q["question_id"] and type(a["question_id"]) is int
    assert isinstance(a["answer_id"], str) and len(a["answer_id"]) == 22 and set(a["answer_id"]) <= alphabet
    ids.add(a["answer_id"])
    assert a["model_id"] == "mt"
    assert isinstance(a["tstamp"], float) and a["tstamp"] == 1700000000.0
    assert [c["index"] for c in a["choices"]] == [0, 1]
    for c in a["choices"]:
        assert list(c) == ["index", "turns"]
        assert len(c["turns"]) == len(q["turns"]) and all(isinstance(t, str) for t in c["turns"])
        assert all(t == t.strip() for t in c["turns"]), "stripped, as FastChat writes them"
        assert "ERROR" not in c["turns"]
assert len(ids) == len(qs), "distinct answer ids"
PY
expect "math (temperature 0): the two choices are equal; writing (0.7): they differ" py mt1.jsonl <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
assert a[1]["choices"][0] == dict(a[1]["choices"][1], index=0)
assert a[0]["choices"][0]["turns"] != a[0]["choices"][1]["turns"]
PY
"$ppa" "${G[@]}" --prompts question.jsonl -n 2 > mt2.jsonl 2> /dev/null
expect "MT-Bench: the same seed gives the same bytes" cmp -s mt1.jsonl mt2.jsonl
"$ppa" "${G[@]}" --prompts question.jsonl -n 2 --seed 43 > mt3.jsonl 2> /dev/null
expect "... another seed other samples (and answer ids)" sh -c "! cmp -s mt1.jsonl mt3.jsonl"
"$ppa" "${G[@]}" --prompts question.jsonl -n 2 --temperature 0 > mt4.jsonl 2> /dev/null
expect "--temperature 0 replaces FastChat's: writing's choices are equal" py mt4.jsonl <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
assert a[0]["choices"][0]["turns"] == a[0]["choices"][1]["turns"]
PY
"$ppa" generate --model m64 --prompts question.jsonl --out /dev/null --temperature 0 2> err
expect "MT-Bench's default max-new-tokens is 1024 (FastChat's)" has err "max-new-tokens 1024,"
# the second turn is asked after the first answer: greedy, its answer is the greedy answer to the conversation
# [user q1, assistant a1, user q2] through the template (ppa's own rows with "messages"), not to q2 alone
py mt4.jsonl > conv.jsonl <<'PY'
import json, sys
a = json.loads(open(sys.argv[1]).readline())
t = a["choices"][0]["turns"]
print(json.dumps({"messages": [{"role": "user", "content": "Write a poem."}, {"role": "assistant", "content": t[0]},
                               {"role": "user", "content": "Make it shorter."}]}))
print(json.dumps({"prompt": "Make it shorter."}))
PY
"$ppa" "${G[@]}" --prompts conv.jsonl --temperature 0 > conv.out 2> /dev/null
expect "turn 2 = the template's render of [q1, a1, q2], generated; not of q2 alone" py mt4.jsonl conv.out <<'PY'
import json, sys
t = json.loads(open(sys.argv[1]).readline())["choices"][0]["turns"]
r = [json.loads(l)["responses"][0].strip() for l in open(sys.argv[2])]
assert t[1] == r[0], (t[1], r[0])
assert t[1] != r[1], "the first answer changes the second"
PY
head -n 1 conv.jsonl > conv1.jsonl
"$ppa" tokenize --tokenizer mt < conv1.jsonl > render.out 2> /dev/null
expect "... and that render is the template's text around q1, a1 and q2 (ppa tokenize)" py mt4.jsonl render.out <<'PY'
import json, sys
a1 = json.loads(open(sys.argv[1]).readline())["choices"][0]["turns"][0]
text = json.loads(open(sys.argv[2]).readline())["text"]
assert text == "user: Write a poem.</s>assistant: " + a1 + "</s>user: Make it shorter.</s>assistant: ", text
PY

# ---- --stop: the response ends where its text first holds a stop string, the string cut off
printf '%s\n' '{"prompt": "Tell me a story."}' > p.jsonl
"$ppa" generate --model mt --prompts p.jsonl --max-new-tokens 24 --template none > free.out 2> /dev/null
stops=$(py free.out <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())["responses"][0]
# a later stop string and an earlier one, each starting where it first occurs
a, b = r[9:11], r[4:6]
assert r.find(a) > r.find(b) > 0, r
print(a); print(b)
PY
)
expect "a long enough free response to cut" test -n "$stops"
A=$(sed -n 1p <<< "$stops") B=$(sed -n 2p <<< "$stops")
"$ppa" generate --model mt --prompts p.jsonl --max-new-tokens 24 --template none --stop "$A" > cut1.out 2> /dev/null
"$ppa" generate --model mt --prompts p.jsonl --max-new-tokens 24 --template none --stop "$A" --stop "$B" > cut2.out 2> /dev/null
expect "--stop cuts before the first occurrence, of the first of several strings; generation stopped there" \
  py free.out cut1.out cut2.out "$A" "$B" <<'PY'
import json, sys
full, c1, c2 = (json.loads(open(p).readline()) for p in sys.argv[1:4])
a, b = sys.argv[4], sys.argv[5]
r = full["responses"][0]
assert c1["responses"][0] == r[: r.find(a)], (c1, r, a)
assert c2["responses"][0] == r[: r.find(b)], (c2, r, b)
assert c1["finished"] == [True] and c2["finished"] == [True]
assert c2["n_tokens"][0] < c1["n_tokens"][0] < full["n_tokens"][0], "generation stopped, not only the text cut"
PY

# ---- --top-k
"$ppa" "${G[@]}" --prompts question.jsonl --temperature 0 > greedy.out 2> /dev/null
"$ppa" "${G[@]}" --prompts question.jsonl --temperature 1 --top-k 1 > k1.out 2> /dev/null
"$ppa" "${G[@]}" --prompts question.jsonl --temperature 1 > k0.out 2> /dev/null
expect "--top-k 1 at temperature 1 gives the greedy answers" cmp -s greedy.out k1.out
expect "... which sampling without it does not" sh -c "! cmp -s greedy.out k0.out"

# ---- bad inputs: FILE and element or line named, exit 2
refused() { # refused DESCRIPTION MESSAGE ARGS...: exit 2 with MESSAGE on stderr
  local d=$1 m=$2; shift 2
  "$ppa" "$@" > /dev/null 2> err; local st=$?
  expect "$d (exit $st: $(tail -1 err))" sh -c "test $st -eq 2 && grep -qF -- '$m' err"
}
printf '{"instruction": "a",\n "dataset": "d"}\n' > object.json
refused "not an array (an object over lines): the file and line" "object.json:1:" "${G[@]}" --prompts object.json --format alpaca_eval
printf '[{"instruction": "a", "dataset": "d"},\n "b"]\n' > notobj.json
refused "an element that is not an object: the file and element" "notobj.json:element 2: a prompt line must be a JSON object" "${G[@]}" --prompts notobj.json
printf '[{"instruction": "a"}, {"dataset": "d"}]\n' > noinstr.json
refused "an element without an instruction: the file and element" "noinstr.json:element 2: no prompt" "${G[@]}" --prompts noinstr.json
printf '[{"instruction": "a"},\n {"instruction": "b",}]\n' > broken.json
refused "a broken array: the file and line" "broken.json: line 2:" "${G[@]}" --prompts broken.json
printf '%s\n' '{"question_id": 1, "turns": ["a"]}' '{"question_id": 2, "turns": ["a", 3]}' > badturn.jsonl
refused "turns not a list of strings: the file, line and field" 'badturn.jsonl:2: "turns"[1] must be a string' "${G[@]}" --prompts badturn.jsonl
printf '%s\n' '{"question_id": 1, "turns": "a"}' > turnstr.jsonl
refused "turns a string: the file, line and field" 'turnstr.jsonl:1: "turns" must be a non-empty list of strings' "${G[@]}" --prompts turnstr.jsonl
printf '%s\n' '{"question_id": 1, "turns": ["a"]}' '{"prompt": "b"}' > mixed.jsonl
refused "an MT-Bench file with a row without turns" 'mixed.jsonl:2: no "turns"' "${G[@]}" --prompts mixed.jsonl
printf '%s\n' '{"category": "math", "turns": ["a"]}' > noqid.jsonl
refused "a question without question_id" 'noqid.jsonl:1: no "question_id"' "${G[@]}" --prompts noqid.jsonl
refused "turns rows with --format jsonl" 'question.jsonl:1: "turns"' "${G[@]}" --prompts question.jsonl --format jsonl
refused "an unknown --format" "--format must be jsonl, alpaca_eval or mt_bench" "${G[@]}" --prompts p.jsonl --format alpaca
refused "an empty --stop" "--stop must not be empty" "${G[@]}" --prompts p.jsonl --stop ""
refused "a negative --top-k" "--top-k must be >= 0" "${G[@]}" --prompts p.jsonl --top-k -1
SOURCE_DATE_EPOCH=soon refused "a bad SOURCE_DATE_EPOCH, before any work" "SOURCE_DATE_EPOCH=soon" "${G[@]}" --prompts question.jsonl
report
