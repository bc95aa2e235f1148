#!/usr/bin/python3
"""Derives tokenizer.json variants from the fetched real files, so that the
components no fetched file uses are checked against the reference encoder too:

  mistral_metaspace        Mistral with the newer SentencePiece conversion: no normalizer and a
                           Metaspace(prepend_scheme "first", split false) pre-tokenizer (the
                           decoder stays Replace/ByteFallback/Fuse/Strip, as in those files)
  llama3_digits            Llama 3's vocabulary behind SmolLM's pre-tokenizer:
                           Sequence[Digits(individual_digits), ByteLevel(use_regex)]

Usage: /usr/bin/python3 tests/ref/make_variant_tokenizers.py CACHE_DIR   (run by scripts/fetch-fixtures.sh)
Writes CACHE_DIR/tokenizers/<variant>/{tokenizer.json,tokenizer_config.json}; never committed.
"""
import json
import os
import shutil
import sys

META = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False}


def variant(cache, base, name, edit):
    src = os.path.join(cache, "tokenizers", base)
    dst = os.path.join(cache, "tokenizers", name)
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    edit(tok)
    tmp = os.path.join(dst, "tokenizer.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    os.replace(tmp, os.path.join(dst, "tokenizer.json"))
    shutil.copyfile(os.path.join(src, "tokenizer_config.json"), os.path.join(dst, "tokenizer_config.json"))


def metaspace(scheme, split):
    def edit(tok):
        tok["normalizer"] = None
        tok["pre_tokenizer"] = dict(META, prepend_scheme=scheme, split=split)
    return edit


def digits(tok):
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}


def main():
    cache = sys.argv[1]
    variant(cache, "mistral", "mistral_metaspace", metaspace("first", False))
    variant(cache, "llama3_1", "llama3_digits", digits)


if __name__ == "__main__":
    main()
