# lib.sh: sourced by the CLI tests (tests/test_*.sh) after they set NAME.
# Gives a temporary folder $tmp (removed on exit), the counted checks ok, bad
# and expect with the closing summary line (report), tiny_model_files and letter_lists.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $NAME: $*" >&2; }
expect() { # expect DESCRIPTION COMMAND...: command must succeed
  local d=$1; shift
  if "$@"; then ok; else bad "$d"; fi
}
# the closing line that tests/run.sh adds up, and the exit status
report() {
  echo "$NAME: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

# tiny_model_files DIR writes a byte-level tokenizer.json (ids 0..255 are the
# bytes, no merges; "<s>" 256 and "</s>" 257 special) and the config.json of
# a 2-layer Llama with GQA and tied embeddings, the inputs of `ppa init`.
tiny_model_files() {
  local dir=$1
  {
    printf '{"added_tokens": [{"id": 256, "content": "<s>", "special": true}, {"id": 257, "content": "</s>", "special": true}],'
    printf ' "pre_tokenizer": {"type": "ByteLevel", "use_regex": true}, "decoder": {"type": "ByteLevel"},'
    printf ' "model": {"type": "BPE", "merges": [], "vocab": {'
    local b k x cp
    for b in $(seq 0 255); do
      if { [ "$b" -ge 33 ] && [ "$b" -le 126 ]; } || { [ "$b" -ge 161 ] && [ "$b" -le 172 ]; } || [ "$b" -ge 174 ]; then cp=$b; else
        k=0; for x in $(seq 0 $((b - 1))); do { [ "$x" -ge 33 ] && [ "$x" -le 126 ]; } || { [ "$x" -ge 161 ] && [ "$x" -le 172 ]; } || [ "$x" -ge 174 ] || k=$((k + 1)); done
        cp=$((256 + k)); fi
      [ "$b" -gt 0 ] && printf ', '
      printf '"\\u%04x": %d' "$cp" "$b"
    done
    printf '}}}'
  } > "$dir/tokenizer.json"
  cat > "$dir/config.json" <<'J'
{"model_type": "llama", "vocab_size": 260, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
 "tie_word_embeddings": true, "bos_token_id": 256, "eos_token_id": 257}
J
}

# letter_lists: 24 prompts with 5 answers of 1-4 letters; the label is the share of a's (JSON Lines on stdout)
letter_lists() {
  awk 'BEGIN { srand(11); for (i = 0; i < 24; i++) {
  printf "{\"prompt\": \"q%d\", \"responses\": [", i; sc = ""
  for (k = 0; k < 5; k++) { n = 1 + int(rand() * 4); r = ""; a = 0
    for (j = 0; j < n; j++) { c = substr("abcde", 1 + int(rand() * 5), 1); r = r c; a += c == "a" }
    printf "%s\"%s\"", k ? ", " : "", r; sc = sc sprintf("%s%.4f", k ? ", " : "", a / n) }
  printf "], \"scores\": [%s]}\n", sc } }'
}
