#!/usr/bin/env python3
"""Chat-template renderings by Python's Jinja2 in the environment transformers builds in
apply_chat_template (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the
loopcontrols extension; its tojson, raise_exception and strftime_now; a {% generation %} block
rendering its body, as transformers' AssistantTracker does), for ppa's renderer to be checked
against (tests/test_jinja.c).

  python3 tests/ref/jinja_ref.py --cases tests/fixtures/jinja_cases.json --out tests/fixtures/jinja_golden.jsonl
      every template of the cases file on the conversations it names, with and without the
      generation prompt (as it lists); bos_token "<s>", eos_token "</s>"
  python3 tests/ref/jinja_ref.py --tokenizer DIR --chat tests/fixtures/chat_cases.json --out FILE
      DIR's tokenizer_config.json chat_template (the entry named "default" of a list) on every
      conversation of chat_cases.json, with the config's special tokens, as chat_ref.cjs does

One JSON line per rendering, pure ASCII: {"name", "conv", "add_generation_prompt", "text"} or
"error" (the exception's type and message) in place of "text". strftime_now is given but the
cases never print its value (it is today's date).
"""
import argparse
import datetime
import json
import os
import sys

try:
    import jinja2
    import jinja2.ext
    from jinja2 import nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("jinja_ref: python3 has no jinja2 module (Debian: python3-jinja2)\n")
    sys.exit(3)


class Generation(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %} renders its body (transformers' AssistantTracker)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    # ppa renders a fixed day (SOURCE_DATE_EPOCH, else 2024-07-26, UTC) where transformers takes today
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or 1721952000)
    day = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    env.globals["strftime_now"] = lambda fmt: day.strftime(fmt)
    return env


def render(env, template, messages, agp, specials):
    try:
        t = env.from_string(template)
        return {"text": t.render(messages=messages, tools=None, documents=None, add_generation_prompt=agp, **specials)}
    except Exception as e:  # noqa: BLE001 - every failure is an outcome to compare
        return {"error": f"{type(e).__name__}: {e}"}


def special_tokens(config):
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        v = config.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, str):
            out[key] = v
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases")
    ap.add_argument("--tokenizer")
    ap.add_argument("--chat")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    env = environment()
    lines = []
    if a.cases:
        spec = json.load(open(a.cases, encoding="utf-8"))
        convs = spec["conversations"]
        for t in spec["templates"]:
            for ci in t.get("convs", range(len(convs))):
                for agp in t.get("gens", [False, True]):
                    r = render(env, t["template"], convs[ci], agp, {"bos_token": "<s>", "eos_token": "</s>"})
                    lines.append({"name": t["name"], "conv": ci, "add_generation_prompt": agp, **r})
    elif a.tokenizer and a.chat:
        config = json.load(open(os.path.join(a.tokenizer, "tokenizer_config.json"), encoding="utf-8"))
        tpl = config.get("chat_template")
        if isinstance(tpl, list):
            tpl = next((x["template"] for x in tpl if x.get("name") == "default"), None)
        if not isinstance(tpl, str):
            sys.exit(f"jinja_ref: {a.tokenizer}/tokenizer_config.json has no chat_template")
        for i, c in enumerate(json.load(open(a.chat, encoding="utf-8"))):
            for agp in (False, True):
                r = render(env, tpl, c["messages"], agp, special_tokens(config))
                lines.append({"name": c.get("name", str(i)), "messages": c["messages"], "add_generation_prompt": agp, **r})
    else:
        ap.error("give --cases, or --tokenizer and --chat")
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        for x in lines:
            f.write(json.dumps(x, ensure_ascii=True) + "\n")
    os.replace(tmp, a.out)
    sys.stderr.write(f"jinja_ref: {len(lines)} renderings ({sum('error' in x for x in lines)} errors) -> {a.out}\n")


if __name__ == "__main__":
    main()
