#!/usr/bin/env bash
# TRL's SFT data formats (docs/commands.md): a conversation under "messages" whose last message is the assistant's
# (the answer; the turns before it are the prompt) and "prompt"/"completion" (strings, or message lists) read as the
# same row as {"prompt", "responses": [answer]}: the same log-probs, and ppa sft on either file writes the same bytes.
# Usage: tests/test_sft_formats.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_sft_formats
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
has() { grep -qF -- "$2" "$1"; }
# the same model with a chat template of its own (roles, an end-of-turn token after each message)
mkdir mt && cp m/* mt/
printf '%s\n' '{"chat_template": "{% for m in messages %}{{ m[\"role\"] }}: {{ m[\"content\"] }}</s>{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}", "eos_token": "</s>"}' > mt/tokenizer_config.json
Q='Name a fruit.' A='A pear.' S='Answer briefly.'
cat > native.jsonl <<J
{"prompt": "$Q", "responses": ["$A"]}
{"system": "$S", "prompt": "$Q", "responses": ["$A"]}
J
cat > messages.jsonl <<J
{"messages": [{"role": "user", "content": "$Q"}, {"role": "assistant", "content": "$A"}]}
{"messages": [{"role": "system", "content": "$S"}, {"role": "user", "content": "$Q"}, {"role": "assistant", "content": "$A"}]}
J
cat > completion.jsonl <<J
{"prompt": "$Q", "completion": "$A"}
{"prompt": [{"role": "system", "content": "$S"}, {"role": "user", "content": "$Q"}], "completion": [{"role": "assistant", "content": "$A"}]}
J
for tpl in none own; do
  T=(--model m --template none); [ $tpl = own ] && T=(--model mt)
  "$ppa" logprobs "${T[@]}" --data native.jsonl > native.$tpl 2> err; st=$?
  expect "the native rows score (template $tpl; exit $st)" test $st -eq 0 -a -s native.$tpl
  for f in messages completion; do
    "$ppa" logprobs "${T[@]}" --data $f.jsonl > $f.$tpl 2> err; st=$?
    expect "$f rows: the native rows' log-probs (template $tpl; exit $st: $(tail -1 err))" sh -c "test $st -eq 0 && cmp -s native.$tpl $f.$tpl"
  done
done
expect "the system turn changes the prompt (the two rows differ)" test "$(sed -n 1p native.own)" != "$(sed -n 2p native.own)"
# ppa sft on each file: the same weights, byte for byte
for f in native messages completion; do
  for i in 1 2 3 4; do cat $f.jsonl; done > $f.x4.jsonl
  "$ppa" sft --model mt --data $f.x4.jsonl --batch-size 4 --lr 0.01 --out sft_$f > /dev/null 2> err; st=$?
  expect "sft on $f rows (exit $st: $(tail -1 err))" test $st -eq 0
done
expect "sft: messages rows train the native rows' weights" cmp -s sft_native/model.safetensors sft_messages/model.safetensors
expect "sft: prompt/completion rows train the native rows' weights" cmp -s sft_native/model.safetensors sft_completion/model.safetensors
# --assistant-only-loss (TRL's name): each assistant turn of a "messages" row is a row of its own, the conversation
# before it the prompt (with the generation prompt); a trailing user turn is no target
/usr/bin/python3 - <<'P'
import json
S, U, A = "system", "user", "assistant"
convs = [[(S, "Be brief."), (U, "Name a fruit."), (A, "A pear."), (U, "Another?"), (A, "A plum, ripe."), (U, "And a nut?"),
          (A, "An almond \u00e9\u2603.")],
         [(U, "Count to two."), (A, "One, two."), (U, "Now three."), (A, "One, two, three."), (U, "Thanks!")],
         [(U, "Say hi."), (A, "Hi.")]]
msg = lambda c: [{"role": r, "content": t} for r, t in c]
with open("conv.jsonl", "w") as f, open("prefixes.jsonl", "w") as p, open("tok_in.jsonl", "w") as t:
    for c in convs:
        f.write(json.dumps({"messages": msg(c)}) + "\n")
        for i, (r, _) in enumerate(c):
            if r == A:  # the row of this turn, as a last-turn row; ppa tokenize renders its prompt and the whole
                p.write(json.dumps({"messages": msg(c[:i + 1])}) + "\n")
                t.write(json.dumps({"messages": msg(c[:i])}) + "\n" + json.dumps({"messages": msg(c[:i + 1])}) + "\n")
P
# the same model with room for the conversations (RoPE: no weights depend on the positions)
mkdir ml && cp mt/* ml/ && /usr/bin/python3 -c '
import json; c = json.load(open("ml/config.json")); c["max_position_embeddings"] = 256; json.dump(c, open("ml/config.json", "w"))'
sft_run() { local out=$1; shift; "$ppa" sft --model ml --lr 0.01 --seed 3 --out "$out" "$@" > "$out.log" 2> "$out.err"; }
sft_run turns --data conv.jsonl --assistant-only-loss --batch-size 2; st=$?
expect "sft --assistant-only-loss on conversations (exit $st: $(tail -1 turns.err))" test $st -eq 0
expect "... one row a turn: 6 rows" has turns.err 'ppa sft: 6 rows,'
sft_run prefixes --data prefixes.jsonl --batch-size 2; st=$?
expect "sft on the turns written out as last-turn rows (exit $st: $(tail -1 prefixes.err))" test $st -eq 0
expect "... the expanded rows train the same weights, byte for byte" cmp -s turns/model.safetensors prefixes/model.safetensors
loss_of() { grep '^{"step"' "$1" | sed 's/, "tokens_per_s".*//'; } # the steps' lines, less their speed
expect "... and log the same losses and token counts (3 steps)" \
  test "$(loss_of turns.log | wc -l)" -eq 3 -a "$(loss_of turns.log)" = "$(loss_of prefixes.log)"
# each row's tokens against ppa tokenize: the prompt's ids a prefix of the turn's, the rest the scored tokens
"$ppa" tokenize --tokenizer ml --input tok_in.jsonl > tok_out.jsonl 2> err; st=$?
expect "ppa tokenize renders every prefix (exit $st: $(tail -1 err))" test $st -eq 0
/usr/bin/python3 - > want_tokens <<'P'
import json
rows = [json.loads(l)["ids"] for l in open("tok_out.jsonl")]
for prompt, full in zip(rows[0::2], rows[1::2]):
    assert full[:len(prompt)] == prompt and len(full) > len(prompt), (prompt, full)
    print(len(full) - len(prompt))
P
expect "... each prompt's ids begin its turn's" test -s want_tokens
"$ppa" logprobs --model ml --data prefixes.jsonl > lp 2> err; st=$?
expect "the turns' scored tokens are ppa tokenize's (exit $st) (the turn's text and end of turn)" \
  test "$(/usr/bin/python3 -c 'import json,sys; [print(n) for l in open("lp") for n in json.loads(l)["n_tokens"]]')" = "$(cat want_tokens)"
sft_run turns1 --data conv.jsonl --assistant-only-loss --batch-size 1 --epochs 1
expect "sft --assistant-only-loss, one row a step: the steps' token counts are the turns'" \
  test "$(/usr/bin/python3 -c 'import json; print(sorted(json.loads(l)["tokens"] for l in open("turns1.log") if l.startswith("{\"step\"")))')" = \
       "$(/usr/bin/python3 -c 'print(sorted(int(l) for l in open("want_tokens")))')"
# one assistant turn a row: the flag changes nothing; prompt/completion and native rows are not expanded
sft_run one --data native.x4.jsonl --batch-size 4
for f in messages completion native; do
  sft_run one_$f --data $f.x4.jsonl --batch-size 4 --assistant-only-loss; st=$?
  expect "sft --assistant-only-loss on single-turn $f rows: the weights without it (exit $st)" cmp -s one/model.safetensors one_$f/model.safetensors
done
# refusals with the line
printf '%s\n' '{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}' \
  '{"messages": [{"role": "user", "content": "q"}]}' > noturn.jsonl
sft_run x --data noturn.jsonl --assistant-only-loss; st=$?
expect "--assistant-only-loss: a conversation without an assistant turn is refused (exit $st)" \
  sh -c "test $st -eq 2 && grep -q 'noturn.jsonl:2: \"messages\" has no assistant turn' x.err"
printf '%s\n' '{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]}' > order.jsonl
sft_run y --data order.jsonl --assistant-only-loss; st=$?
expect "... turns out of order are refused (exit $st)" sh -c "test $st -eq 2 && grep -q 'order.jsonl:1: message 2 has role' y.err"
printf '%s\n' '{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a</s>b"}, {"role": "user", "content": "r"}, {"role": "assistant", "content": "c"}]}' > eot.jsonl
sft_run z --data eot.jsonl --assistant-only-loss; st=$?
expect "... an earlier turn holding the end-of-turn text is refused, naming its message (exit $st)" \
  sh -c "test $st -eq 2 && grep -q 'eot.jsonl:1: the assistant turn of message 1: response 1 contains the end-of-turn text' z.err"
"$ppa" logprobs --model ml --data conv.jsonl --assistant-only-loss > /dev/null 2> err; st=$?
expect "--assistant-only-loss is sft's only (logprobs refuses it, exit $st)" test $st -eq 2
"$ppa" sft --help > help 2>&1
expect "sft --help lists --assistant-only-loss" has help '--assistant-only-loss'
# refusals with the file and line
printf '%s\n' '{"prompt": "q", "completion": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]}' > bad.jsonl
"$ppa" logprobs --model m --template none --data bad.jsonl > /dev/null 2> err; st=$?
expect "a completion of two messages: refused (exit 2)" test $st -eq 2
expect "... naming the line and the format" has err 'bad.jsonl:1: "completion" must be a string or a list of one assistant message'
printf '%s\n' '{"messages": [{"role": "user", "content": "q"}]}' > noanswer.jsonl
"$ppa" logprobs --model m --template none --data noanswer.jsonl > /dev/null 2> err; st=$?
expect "messages without an assistant answer: refused (exit 2)" sh -c "test $st -eq 2 && grep -q 'noanswer.jsonl:1: expected \"responses\"' err"
report
