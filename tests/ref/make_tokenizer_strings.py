#!/usr/bin/python3
"""Writes tests/fixtures/tokenizer_strings.jsonl: the test strings for the tokenizer.

One {"text": ...} object per line. Every string is generated here from word lists and
fragments written for this file (no corpus text), with a fixed seed, so the output is the
same bytes on every run. The file is pure ASCII: json.dumps escapes every non-ASCII
character (astral characters as surrogate pairs), so no reader can mistake U+0085, U+2028
or U+2029 inside a string for a line break. U+0000 is left out on purpose (C string APIs),
and so are lone surrogates (not valid UTF-8).

    /usr/bin/python3 tests/ref/make_tokenizer_strings.py            # (re)write the fixture
    /usr/bin/python3 tests/ref/make_tokenizer_strings.py --check    # exit 1 if it is stale

Standard library only.
"""
import argparse
import json
import os
import random
import sys

SEED = 20261122
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "fixtures", "tokenizer_strings.jsonl"))

# ---------------------------------------------------------------------------------------
# English word lists (written for this file)
# ---------------------------------------------------------------------------------------
NAMES = ["Alice", "Bob", "Carol", "Dmitri", "Eve", "Farah", "Gustav", "Hana", "Ines", "Jonas",
         "Kofi", "Lena", "Mateo", "Nora", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tomoko"]
PLACES = ["the harbour", "the old mill", "Lisbon", "the north ridge", "a small cafe", "the library",
          "the station", "Toronto", "the river bank", "the lab", "Nairobi", "the garden"]
NOUNS = ["model", "river", "token", "window", "garden", "engine", "letter", "bridge", "cloud",
         "kettle", "signal", "ladder", "answer", "question", "market", "lantern", "compiler",
         "pattern", "forest", "teacher", "record", "pencil", "village", "harbour", "moment",
         "matrix", "network", "violin", "journey", "blanket", "orchard", "theory", "mirror"]
VERBS = ["reads", "builds", "finds", "carries", "paints", "counts", "measures", "opens", "writes",
         "follows", "repairs", "ignores", "explains", "borrows", "sorts", "tests", "watches"]
VERBS_PAST = ["read", "built", "found", "carried", "painted", "counted", "measured", "opened",
              "wrote", "followed", "repaired", "ignored", "explained", "borrowed", "sorted"]
ADJS = ["quiet", "bright", "narrow", "heavy", "curious", "ancient", "gentle", "broken", "rapid",
        "careful", "golden", "hollow", "patient", "strange", "tiny", "enormous", "lucky", "plain"]
ADVS = ["slowly", "quickly", "rarely", "carefully", "always", "never", "almost", "suddenly",
        "quietly", "barely", "openly", "often"]
CONNECT = ["and", "but", "because", "although", "so", "while", "unless", "until", "since", "or"]
TIMES = ["yesterday", "on Monday", "at dawn", "last week", "in 1998", "after lunch",
         "before the storm", "every morning", "at 7:45", "on 2024-03-15"]
PUNCT_END = [".", ".", ".", "!", "?", "...", "?!", ";", ":", ""]
INTERJ = ["Well,", "Oh,", "Honestly,", "Look:", "Hmm...", "Yes!", "No;", "OK -", "So,"]

CONTRACTIONS = ["I'm", "don't", "can't", "won't", "it's", "they're", "we've", "you'll", "she'd",
                "he's", "isn't", "let's", "we'd", "they'll", "I've", "you're", "that's",
                "wouldn't", "shouldn't", "there's"]


def sentence(r):
    """An English prose-like sentence."""
    form = r.randrange(9)
    n1, n2 = r.choice(NOUNS), r.choice(NOUNS)
    a1, a2 = r.choice(ADJS), r.choice(ADJS)
    name = r.choice(NAMES)
    if form == 0:
        s = f"The {a1} {n1} {r.choice(VERBS)} the {n2} {r.choice(TIMES)}"
    elif form == 1:
        s = f"{name} {r.choice(VERBS_PAST)} a {a1} {n1} near {r.choice(PLACES)}"
    elif form == 2:
        s = (f"{r.choice(INTERJ)} {name.lower() if r.random() < 0.2 else name} "
             f"{r.choice(ADVS)} {r.choice(VERBS)} every {n1}")
    elif form == 3:
        s = (f"When the {n1} is {a1}, {name} {r.choice(VERBS)} it, "
             f"{r.choice(CONNECT)} the {n2} stays {a2}")
    elif form == 4:
        s = f"\"{r.choice(CONTRACTIONS).capitalize()} {a1},\" said {name}, \"{r.choice(CONTRACTIONS)} not a {n1}.\""
    elif form == 5:
        s = f"{name}'s {n1} ({a1}, {a2}) {r.choice(VERBS)} {r.randint(2, 999)} {n2}s"
    elif form == 6:
        s = f"Why {r.choice(['does', 'did', 'would', 'should'])} the {n1} {r.choice(VERBS_PAST)} {r.choice(PLACES)}"
    elif form == 7:
        s = (f"{a1.capitalize()} {n1}s and {a2} {n2}s: {r.choice(NAMES)}, {r.choice(NAMES)} "
             f"and {r.choice(NAMES)} {r.choice(CONNECT)} {r.choice(ADVS)} {r.choice(VERBS_PAST)} them")
    else:
        s = f"It {r.choice(['was', 'is', 'seems'])} {r.choice(ADVS)} {a1} - {r.choice(CONTRACTIONS)} {r.choice(ADVS)} {a2}"
    s = s[0].upper() + s[1:] if s[0].isalpha() else s
    return s + r.choice(PUNCT_END)


def prose(r):
    out = []
    for _ in range(600):
        k = r.choice([1, 1, 1, 2, 2, 3, 5])
        sep = r.choice([" ", " ", " ", "  ", "\n", "\n\n"])
        s = sep.join(sentence(r) for _ in range(k))
        v = r.random()
        if v < 0.05:
            s = s.upper()
        elif v < 0.10:
            s = s.lower()
        elif v < 0.13:
            s = s.title()
        out.append(s)
    # short fixed forms
    out += ["Hello, world!", "Hello world", "hello", " hello", "Hello", "HELLO", "hELLO",
            "The quick brown fox.", "a", "A.", "I", "I.", "OK", "e.g. this", "i.e., that",
            "Mr. Smith & Mrs. Jones", "U.S.A.", "--", "-- dash --", "well-known", "state-of-the-art",
            "co-operate", "re-entry", "(parenthesis)", "[brackets]", "{braces}", "'single'",
            "\"double\"", "`backtick`", "semi;colon", "colon: value", "a/b/c", "path\\to\\file",
            "email@example.com", "https://example.com/a?b=c&d=e#f", "#hashtag", "@mention",
            "50% off", "C++ and C#", "x + y = z", "x==y", "a != b", "i++", "--flag", "~/.bashrc"]
    return out


# ---------------------------------------------------------------------------------------
# Code snippets
# ---------------------------------------------------------------------------------------
IDENTS = ["count", "buf", "len", "idx", "total", "node", "ctx", "value", "tmp", "result",
          "item", "offset", "width", "height", "name", "path", "data", "key", "tokenizer",
          "mergeRank", "byte_fallback", "MAX_LEN", "kVocabSize", "_private", "__init__", "x1"]
TYPES_C = ["int", "size_t", "double", "float", "char *", "const char *", "uint8_t", "int64_t",
           "struct node *", "void *", "bool"]


def c_snippet(r):
    f = r.choice(IDENTS)
    a, b = r.sample(IDENTS, 2)
    t = r.choice(TYPES_C)
    ind = r.choice(["    ", "\t", "  ", "        "])
    n = r.randint(0, 4096)
    forms = [
        f"{t} {f}({t} {a}, size_t {b})\n{{\n{ind}if ({a} == NULL) return 0;\n{ind}for (size_t i = 0; i < {b}; i++) {{\n{ind}{ind}{a}[i] += {n};\n{ind}}}\n{ind}return {a};\n}}\n",
        f"#include <stdio.h>\n\nint main(void) {{\n{ind}printf(\"%d\\n\", {n});\n{ind}return 0;\n}}",
        f"static inline {t} {f}(void) {{ return ({t}){n}; }}",
        f"/* {f}: {r.choice(ADJS)} {r.choice(NOUNS)} */\n#define {f.upper()} {n}\n",
        f"while (*{a}++ != '\\0') {{\n{ind}{b}--;\n}}",
        f"typedef struct {{\n{ind}{t} {a};\n{ind}size_t {b};\n}} {f}_t;",
        f"if ({a} >= {n} && {b} <= -{n} || !{f}) {{ {a} <<= 2; {b} ^= 0x{n:x}; }}",
        f"switch ({a}) {{\ncase {n}:\n{ind}{b} = {a} % 7;\n{ind}break;\ndefault:\n{ind}abort();\n}}",
        f"{a}->{b} = &{f}[{n}]; // {r.choice(CONTRACTIONS)} {r.choice(ADVS)} safe",
    ]
    return r.choice(forms)


def py_snippet(r):
    f = r.choice(IDENTS).lower()
    a, b = r.sample(IDENTS, 2)
    ind = r.choice(["    ", "\t", "  "])
    n = r.randint(0, 100000)
    forms = [
        f"def {f}({a}, {b}=None):\n{ind}\"\"\"{sentence(r)}\"\"\"\n{ind}if {b} is None:\n{ind}{ind}{b} = []\n{ind}return [{a} * i for i in range({n})]\n",
        f"class {f.title()}:\n{ind}def __init__(self, {a}):\n{ind}{ind}self.{a} = {a}\n\n{ind}def __repr__(self):\n{ind}{ind}return f\"{f.title()}({{self.{a}!r}})\"\n",
        f"import os, sys\nfrom collections import defaultdict\n\n{a} = defaultdict(int)\nfor line in sys.stdin:\n{ind}{a}[line.strip()] += 1\n",
        f"{a} = {{'{b}': {n}, \"{f}\": [1, 2.5, None, True]}}  # {r.choice(ADJS)}",
        f"with open('{f}.txt', 'rb') as fh:\n{ind}data = fh.read()[{n % 64}:]\n",
        f"lambda {a}, {b}: {a} ** 2 + {b} // 3 - ({a} @ {b})",
        f"try:\n{ind}{f}()\nexcept (ValueError, KeyError) as e:\n{ind}print(e, file=sys.stderr)\nfinally:\n{ind}pass",
        f">>> {f}({n})\n{n * 2}\n>>> ",
        f"    {a} = {b}  \n\t{a} += 1\t\n",
    ]
    return r.choice(forms)


def json_snippet(r):
    a, b, c = r.sample(IDENTS, 3)
    n = r.randint(-1000, 1000000)
    compact = r.random() < 0.4
    obj = {a: n, b: [r.random() < 0.5, None, round(r.uniform(-1e3, 1e3), r.randint(0, 6))],
           c: {"name": r.choice(NAMES), "tags": r.sample(NOUNS, 3), "note": sentence(r)}}
    if compact:
        return json.dumps(obj, separators=(",", ":"))
    return json.dumps(obj, indent=r.choice([2, 4, "\t"]))


def sh_snippet(r):
    f = r.choice(IDENTS).lower()
    n = r.randint(1, 64)
    ind = r.choice(["  ", "    ", "\t"])
    forms = [
        f"#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n{ind}wc -l \"$f\" | awk '{{print $1}}'\ndone\n",
        f"cd \"$(dirname \"$0\")/..\" && make -j{n} {f} 2>&1 | tee build.log",
        f"if [ -z \"${{{f.upper()}:-}}\" ]; then\n{ind}echo \"missing {f}\" >&2; exit {n % 3 + 1}\nfi",
        f"grep -rn '{f}' src/ | sed -e 's/foo/bar/g' | sort -u > /tmp/{f}.out",
        f"export PATH=\"$HOME/.local/bin:$PATH\"; {f}() {{ local x=$1; echo $((x * {n})); }}",
        f"$ ls -la ~/{f}\ntotal {n}\ndrwxr-xr-x  2 user user 4096 Jan  {n % 28 + 1} 12:00 .\n",
        f"curl -fsSL \"https://example.org/{f}?n={n}\" | jq '.items[] | .name'",
    ]
    return r.choice(forms)


def other_code(r):
    a, b = r.sample(IDENTS, 2)
    forms = [
        f"<div class=\"{a}\" id='{b}'>\n  <p>{sentence(r)}</p>\n</div>",
        f"SELECT {a}, COUNT(*) FROM {b} WHERE {a} <> '' GROUP BY {a} ORDER BY 2 DESC;",
        f"fn {a.lower()}(x: &[u8]) -> Option<usize> {{\n    x.iter().position(|&c| c == b'\\n')\n}}",
        f"const {a} = ({b}) => {b}?.map(x => x * 2) ?? [];",
        f"## {a.title()}\n\n- item one\n- item **two**\n\n```\ncode block\n```\n",
        f"{a}:\n  - {b}: true\n    port: 8080\n  - name: \"{r.choice(NAMES)}\"\n",
        f"\\begin{{equation}} \\sum_{{i=1}}^{{n}} x_i^2 = \\frac{{a}}{{b}} \\end{{equation}}",
        f"[{a}]\n{b} = \"value\"\nenabled = false\n",
    ]
    return r.choice(forms)


def code(r):
    out = []
    for _ in range(70):
        out.append(c_snippet(r))
    for _ in range(70):
        out.append(py_snippet(r))
    for _ in range(45):
        out.append(json_snippet(r))
    for _ in range(45):
        out.append(sh_snippet(r))
    for _ in range(40):
        out.append(other_code(r))
    out += ["{}", "[]", "{\"a\":1}", "()", "{{}}", "}}}", "{{{", "\t{\n\t\t}\n", "x\t=\t1",
            "\tindented with tab", "    indented with four spaces", "\t \t mixed", "a\tb\tc\td",
            "if(x){y();}else{z();}", "i<j&&j>k||!m", "/**/", "//", "#", "#!", "0x7fffffff",
            "\"\\\\\"", "'\\n'", "a\\nb", "\\t\\r\\n", "%s %d %%", "$((1+2))", "${HOME}"]
    return out


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------
def digit_run(r, n):
    return "".join(r.choice("0123456789") for _ in range(n))


def numbers(r):
    out = []
    for n in range(1, 21):                       # every length 1-20, several forms each
        out.append(digit_run(r, n))
        out.append(digit_run(r, n))
        out.append(" " + digit_run(r, n))
        out.append(f"x{digit_run(r, n)}y")
        out.append(f"total {digit_run(r, n)} items")
        out.append("1" * n)
        out.append("0" * n)
    out += ["3.14159", "2.718281828459045", "1,000,000", "12345678901234567890", "1.000.000,50",
            "1 000 000", "1'000'000", "-42", "+7", "-0.5", "0.0001", ".5", "5.", "6.02e23",
            "1.6E-19", "1e-9", "0xFF", "0xdeadBEEF", "0b1011", "0o755", "1_000_000", "$1,234.56",
            "EUR 99,95", "\u20ac12.50", "\u00a3300", "\u00a51000", "50%", "12.5 %", "v1.2.3",
            "1.2.3-rc.4+build.5", "192.168.0.1", "::1", "2001:db8::ff00:42:8329", "2024-03-15",
            "15/03/2024", "03.15.24", "12:34:56.789", "T+00:05", "+1 (555) 123-4567",
            "ISBN 978-3-16-148410-0", "4111 1111 1111 1111", "3/4", "1/2 + 1/3 = 5/6", "10^6",
            "2**64 = 18446744073709551616", "NaN", "Infinity", "-inf", "1e309", "007", "000123",
            "42nd", "1st 2nd 3rd 4th", "99bottles", "abc123def456", "a1b2c3", "H2O", "CO2",
            "1,2,3,4,5", "1;2;3", "1-2-3", "1..10", "0.1 + 0.2 = 0.30000000000000004"]
    # other Unicode digits: Arabic-Indic, Extended Arabic-Indic, Devanagari, fullwidth,
    # Thai, superscripts/subscripts and fractions (category No), Roman numerals (Nl)
    out += ["\u0661\u0662\u0663\u0664\u0665", "\u0660", "\u0669\u0668\u0667\u0666\u0665\u0664\u0663\u0662\u0661\u0660",
            "\u0627\u0644\u0639\u062f\u062f \u0664\u0662", "\u06f1\u06f2\u06f3\u06f4", "\u0967\u0968\u0969 \u0966",
            "\uff11\uff12\uff13\uff14\uff15", "\u0e51\u0e52\u0e53", "x\u00b2 + y\u00b2 = z\u00b2",
            "H\u2082O", "\u00bd \u00bc \u00be", "\u2155\u2156", "\u2160\u2161\u2162\u2163", "\u2460\u2461\u2462",
            "\U0001d7ce\U0001d7cf\U0001d7d0", "12\u0663\u0664"]
    for _ in range(80):                         # random formatted numbers
        k = r.randrange(6)
        v = r.randint(0, 10 ** r.randint(1, 15))
        if k == 0:
            out.append(f"{v:,}")
        elif k == 1:
            out.append(f"{r.uniform(-1e6, 1e6):.{r.randint(1, 9)}f}")
        elif k == 2:
            out.append(f"{r.uniform(1e-30, 1e30):e}")
        elif k == 3:
            out.append(f"The {r.choice(NOUNS)} costs ${v:,}.{r.randint(0, 99):02d} ({r.randint(1, 99)}% off)")
        elif k == 4:
            out.append(" ".join(str(r.randint(0, 10 ** r.randint(1, 6))) for _ in range(r.randint(2, 8))))
        else:
            out.append(f"{v:x}")
    return out


# ---------------------------------------------------------------------------------------
# Whitespace
# ---------------------------------------------------------------------------------------
def whitespace(r):
    out = []
    for n in range(1, 17):
        out += [" " * n, "\t" * n, "\n" * n, f"a{' ' * n}b", f"{' ' * n}a", f"a{' ' * n}",
                f"a{chr(9) * n}b", f"a{chr(10) * n}b"]
    out += ["\r\n", "\r\n\r\n", "a\r\nb", "a\r\n\r\nb\r\n", "\r", "a\rb", "\n\r", "a\n\rb",
            "\n\n\n", "a\n\n\nb", " \n", "\n ", " \n ", "a \nb", "a\n b", "a \n b", "  \n  \n",
            "\t\n", "\n\t", "a\t\nb", " \t \t", "\t \t ", "\x0b", "\x0c", "a\x0bb", "a\x0cb",
            "trailing spaces   ", "   leading spaces", "  both  ", "word \n", "\n\nword\n\n",
            "line1\nline2\nline3", "line1\r\nline2\r\nline3\r\n", "para one.\n\npara two.\n\n\npara three.",
            "  def f():\n      return 1\n", "x  =  1", "a    b     c      d", " a b c ",
            "\u00a0", "\u3000", "\u2003", "\u0085", "\u2028", "\u2029", "\ufeff", "\u200b",
            " \u00a0 ", "\u00a0\u00a0", "\u3000\u3000", "\n\u0085\n", " \u2028 ", "\t\u00a0\t"]
    ws = [" ", " ", " ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u0085", "\u2028", "\u2009",
          "\ufeff", "\u200b", "\x0b", "\x0c"]
    for _ in range(60):                          # random whitespace runs, with and without words
        run = "".join(r.choice(ws) for _ in range(r.randint(1, 12)))
        k = r.randrange(4)
        w = r.choice(NOUNS)
        out.append([run, run + w, w + run, w + run + r.choice(NOUNS)][k])
    return out


# ---------------------------------------------------------------------------------------
# Scripts (short words and phrases written for this file)
# ---------------------------------------------------------------------------------------
SCRIPT_WORDS = {
    "latin_acc": ["caf\u00e9", "na\u00efve", "r\u00e9sum\u00e9", "fa\u00e7ade", "ni\u00f1o", "\u00fcber", "Stra\u00dfe",
                  "\u00e5ngstr\u00f6m", "\u0142\u00f3d\u017a", "\u010de\u0161tina", "\u00e9t\u00e9", "cr\u00e8me", "br\u00fbl\u00e9e",
                  "S\u00e3o", "Paulo", "cora\u00e7\u00e3o", "\u00f8l", "\u00e6ble", "\u0131\u015f\u0131k", "\u011f\u00fcn",
                  "Ti\u1ebfng", "Vi\u1ec7t", "\u0111\u01b0\u1eddng", "Dvo\u0159\u00e1k", "\u00c9COLE", "\u00c0", "\u0152uvre"],
    "greek": ["\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1", "\u03ba\u03cc\u03c3\u03bc\u03b5", "\u03bb\u03cc\u03b3\u03bf\u03c2",
              "\u03b8\u03ac\u03bb\u03b1\u03c3\u03c3\u03b1", "\u0391\u0398\u0397\u039d\u0391", "\u03b1\u03b2\u03b3",
              "\u03c8\u03c5\u03c7\u03ae", "\u03bd\u03b5\u03c1\u03cc", "\u1f08\u03c1\u03b9\u03c3\u03c4\u03bf\u03c4\u03ad\u03bb\u03b7\u03c2"],
    "cyrillic": ["\u041f\u0440\u0438\u0432\u0435\u0442", "\u043c\u0438\u0440", "\u0441\u043b\u043e\u0432\u043e", "\u0434\u043e\u043c",
                 "\u041c\u041e\u0421\u041a\u0412\u0410", "\u0451\u043b\u043a\u0430", "\u0457\u0436\u0430\u043a",
                 "\u0449\u0443\u043a\u0430", "\u0431\u044a\u043b\u0433\u0430\u0440\u0441\u043a\u0438", "\u0452\u0430\u043a"],
    "arabic": ["\u0645\u0631\u062d\u0628\u0627", "\u0628\u0627\u0644\u0639\u0627\u0644\u0645", "\u0643\u062a\u0627\u0628",
               "\u0627\u0644\u0633\u0644\u0627\u0645", "\u0639\u0644\u064a\u0643\u0645", "\u0634\u0643\u0631\u0627\u064b",
               "\u0645\u064f\u062d\u064e\u0645\u0651\u064e\u062f", "\u0663\u0664\u0665", "\u0642\u0647\u0648\u0629"],
    "hebrew": ["\u05e9\u05dc\u05d5\u05dd", "\u05e2\u05d5\u05dc\u05dd", "\u05e1\u05e4\u05e8", "\u05ea\u05d5\u05d3\u05d4",
               "\u05d1\u05b0\u05bc\u05e8\u05b5\u05d0\u05e9\u05b4\u05c1\u05d9\u05ea", "\u05de\u05d9\u05dd"],
    "devanagari": ["\u0928\u092e\u0938\u094d\u0924\u0947", "\u0926\u0941\u0928\u093f\u092f\u093e", "\u0939\u093f\u0928\u094d\u0926\u0940",
                   "\u0915\u093f\u0924\u093e\u092c", "\u0927\u0928\u094d\u092f\u0935\u093e\u0926", "\u0936\u094d\u0930\u0940",
                   "\u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f", "\u0966\u0967\u0968"],
    "cjk": ["\u4f60\u597d", "\u4e16\u754c", "\u6c49\u5b57", "\u6f22\u5b57", "\u4e2d\u6587", "\u6e2c\u8a66",
            "\u5206\u8bcd\u5668", "\u673a\u5668\u5b66\u4e60", "\u5927\u5bb6\u597d", "\u3002", "\uff0c", "\u300c\u5f15\u7528\u300d",
            "\U00020000", "\u9f98"],
    "japanese": ["\u3053\u3093\u306b\u3061\u306f", "\u3042\u308a\u304c\u3068\u3046", "\u30ab\u30bf\u30ab\u30ca",
                 "\u30c6\u30ad\u30b9\u30c8", "\u65e5\u672c\u8a9e", "\u3072\u3089\u304c\u306a", "\u30c8\u30fc\u30af\u30f3",
                 "\uff76\uff80\uff76\uff85", "\u3067\u3059", "\u307e\u3059", "\u30fc"],
    "korean": ["\uc548\ub155\ud558\uc138\uc694", "\uc138\uacc4", "\ud55c\uad6d\uc5b4", "\ud1a0\ud070", "\uac10\uc0ac\ud569\ub2c8\ub2e4",
               "\ud14c\uc2a4\ud2b8", "\ubc25"],
    "thai": ["\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", "\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01", "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
             "\u0e02\u0e2d\u0e1a\u0e04\u0e38\u0e13", "\u0e19\u0e49\u0e33"],
    "other": ["\u0533\u0561\u0580\u0578", "\u10e1\u10d0\u10e5\u10d0\u10e0\u10d7\u10d5\u10d4\u10da\u10dd", "\u1200\u1208\u1218",
              "\u0bb5\u0ba3\u0b95\u0bcd\u0b95\u0bae\u0bcd", "\u0986\u09ae\u09bf", "\u1780\u1798\u17d2\u1796\u17bb\u1787\u17b6",
              "\u0f56\u0f7c\u0f51", "\u13e3\u13b3\u13a9", "\u1826\u1823\u1829\u182d\u1823\u182f"],
}
SCRIPT_PUNCT = {"cjk": ["\u3002", "\uff0c", "\uff01", ""], "japanese": ["\u3002", "\u3001", ""],
                "arabic": ["\u060c", "\u061f", "."], "devanagari": ["\u0964", ""], "thai": ["", " "],
                "greek": [";", ".", ","]}


def scripts(r):
    out = []
    for name, words in SCRIPT_WORDS.items():
        out += words                              # every word alone
        joiner = "" if name in ("cjk", "japanese", "thai") else " "
        for _ in range(22):
            k = r.randint(2, 7)
            s = joiner.join(r.choice(words) for _ in range(k))
            s += r.choice(SCRIPT_PUNCT.get(name, [".", "!", "?", ""]))
            if r.random() < 0.3:                 # mixed with English
                s = f"{sentence(r)} {s}" if r.random() < 0.5 else f"{s} {r.choice(NOUNS)} {r.randint(0, 999)}"
            out.append(s)
    # NFC / NFD variants: Qwen normalises to NFC, Llama 3 and Mistral do not
    out += ["e\u0301", "\u00e9", "cafe\u0301", "caf\u00e9", "Cafe\u0301 nai\u0308ve", "n\u0303", "A\u030a",
            "\u212b", "\u2126", "o\u0308\u0304", "a\u0323\u0302", "\u1ec7", "e\u0323\u0302",
            "\u1100\u1161\u11a8", "\u1112\u1161\u11ab\u1100\u1173\u11af", "\u0915\u093c", "\u0958",
            "\u05e9\u05c1", "\ufb2a", "\u0627\u0653", "\u0622", "i\u0307", "\u0130stanbul", "\u03a9\u0301",
            "x\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308", "\u0301", "\u0301\u0301 leading combining",
            "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324A\u0360\u0365\u0310L\u0310\u0305G\u0311\u0367O",
            "\ufb01le \ufb02ow", "\u00bd", "\u2460", "\uff21\uff22\uff23", "\u3392", "\u2122", "\u0133",
            "\u1e9b\u0323", "\u00c5\u212b\u0041\u030a"]
    for _ in range(40):                          # random accented Latin via combining marks
        base = r.choice("aeiounAEIOUcszy")
        marks = "".join(chr(r.choice([0x300, 0x301, 0x302, 0x303, 0x308, 0x30a, 0x327, 0x328, 0x323]))
                        for _ in range(r.randint(1, 3)))
        out.append(f"{r.choice(NOUNS)}{base}{marks}{r.choice(NOUNS)}")
    return out


# ---------------------------------------------------------------------------------------
# Emoji
# ---------------------------------------------------------------------------------------
EMOJI = ["\U0001f642", "\U0001f600", "\U0001f602", "\u2764\ufe0f", "\u2764", "\U0001f44d", "\U0001f680", "\U0001f389",
         "\U0001f914", "\U0001f525", "\u2728", "\u2705", "\u274c", "\u2b50", "\U0001f4a9", "\U0001f9e0",
         "\u263a\ufe0f", "\u00a9\ufe0f", "\u2122\ufe0f", "\U0001f1fa\U0001f1f8", "\U0001f1ef\U0001f1f5",
         "\U0001f1e9\U0001f1ea", "\U0001f1fa\U0001f1e6", "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
         "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466", "\U0001f469\u200d\U0001f4bb",
         "\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f441\ufe0f\u200d\U0001f5e8\ufe0f", "\U0001f9d1\U0001f3fd\u200d\U0001f52c",
         "\U0001f44b\U0001f3fb", "\U0001f44b\U0001f3fc", "\U0001f44b\U0001f3fd", "\U0001f44b\U0001f3fe", "\U0001f44b\U0001f3ff",
         "\U0001f469\U0001f3fe\u200d\U0001f91d\u200d\U0001f468\U0001f3fb", "1\ufe0f\u20e3", "#\ufe0f\u20e3", "*\u20e3",
         "\U0001f3fb", "\U0001f1e6", "\u200d", "\ufe0f", "\U0001fae0", "\U0001f972", "\U0001f9d1\u200d\U0001f384"]


def emoji(r):
    out = list(EMOJI)
    out += ["\U0001f642 ok", "ok \U0001f642", "\U0001f642\U0001f642\U0001f642", "I \u2764\ufe0f NY",
            "flags: \U0001f1eb\U0001f1f7\U0001f1ee\U0001f1f9\U0001f1ea\U0001f1f8", "\U0001f1fa\U0001f1f8\U0001f1fa",
            "family \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 photo",
            "\u270c\U0001f3fe peace", "\u2764\ufe0f\u200d\U0001f525", "\U0001f44d\U0001f3fb\U0001f44d\U0001f3ff"]
    for _ in range(110):
        k = r.randint(1, 6)
        parts = [r.choice(EMOJI) for _ in range(k)]
        sep = r.choice(["", " ", "", "\u200d", " and "])
        s = sep.join(parts)
        v = r.random()
        if v < 0.4:
            s = f"{sentence(r)} {s}"
        elif v < 0.6:
            s = f"{s}{r.choice(NOUNS)}"
        out.append(s)
    return out


# ---------------------------------------------------------------------------------------
# Special characters
# ---------------------------------------------------------------------------------------
SPECIAL_CHARS = ["\u0085", "\u00a0", "\u3000", "\ufeff", "\u200d", "\u200b", "\u200c", "\u2028", "\u2029",
                 "\u00ad", "\u200e", "\u200f", "\u202a", "\u202e", "\u2060", "\u2000", "\u2002", "\u2009",
                 "\u200a", "\u202f", "\u205f", "\u1680", "\u180e", "\u0001", "\u0007", "\u0008", "\u001b",
                 "\u001f", "\u007f", "\u0080", "\u009f", "\ufffd", "\ue000", "\U000f0000", "\U0010fffd",
                 "\ufff9", "\U0001d400", "\U0001d538", "\u2603", "\u00b7", "\u2026", "\u2014", "\u2013",
                 "\u2018", "\u2019", "\u201c", "\u201d", "\u00ab", "\u00bb", "\u2039", "\u203a", "\u00bf",
                 "\u00a1", "\u00a7", "\u00b6", "\u2020", "\u00b0", "\u00b1", "\u00d7", "\u00f7", "\u221e",
                 "\u2211", "\u221a", "\u2248", "\u2260", "\u2264", "\u2192", "\u21d2", "\u2500", "\u2588",
                 "\u25cf", "\u2713", "\u266b", "\u20bf", "\uff5e", "\u30fb", "\ufe0f", "\u034f", "\u0300"]


def special_chars(r):
    out = []
    for c in SPECIAL_CHARS:
        out += [c, f"a{c}b", f" {c} ", f"{c}{c}", f"word{c}", f"{c}word", f"x {c}\n"]
    out += ["\u2018quoted\u2019 and \u201cdouble\u201d", "em\u2014dash", "en\u2013dash 1\u20132",
            "ellipsis\u2026", "don\u2019t", "it\u2019s", "na\u00afve", "soft\u00adhyphen",
            "zero\u200bwidth\u200bspace", "join\u200derrr", "nbsp\u00a0between\u00a0words",
            "ideographic\u3000space", "bom\ufefffirst", "\ufeffBOM at start", "line\u2028sep",
            "para\u2029sep", "nel\u0085here", "rtl \u202eoverride\u202c back", "\u200fRTL mark",
            "\U0001d54b\U0001d556\U0001d569\U0001d565", "\U0001d581\U0001d586\U0001d588", "\ufb03", "\ufdfd"]
    for _ in range(60):
        k = r.randint(1, 5)
        s = "".join(r.choice([r.choice(SPECIAL_CHARS), r.choice(NOUNS), " ", r.choice(SPECIAL_CHARS)])
                    for _ in range(k * 2))
        out.append(s)
    return out


# ---------------------------------------------------------------------------------------
# Special / added tokens inside text
# ---------------------------------------------------------------------------------------
SPECIAL_TOKENS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
                  "</tool_call>", "<|fim_prefix|>", "<|vision_start|>", "<|begin_of_text|>", "<|end_of_text|>",
                  "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>",
                  "<|finetune_right_pad_id|>", "<s>", "</s>", "<unk>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
                  "<|system|>", "<|user|>", "<|assistant|>"]
NEAR_MISSES = ["<|im_start|", "|im_start|>", "<im_start>", "<|im_start |>", "<| im_start|>", "<|IM_START|>",
               "<|im_start|>>", "<<|im_start|>", "<|im_sta rt|>", "< s>", "<s >", "<S>", "<s", "s>", "</s",
               "< /s>", "<\\s>", "<unk", "<UNK>", "<think", "<think >", "</ think>", "<thinking>",
               "<|eot_id|", "<|eot_id>", "<|begin_of_text", "<|start_header_id|", "<|end_of_text||>",
               "<|endoftext|", "<endoftext>", "<|endoftext |>", "<||>", "<|>", "<>", "</>", "[INST", "INST]",
               "<|im_end|\n>", "<|im_\u00a0end|>", "\uff1c|im_start|\uff1e"]


def special_tokens(r):
    out = []
    for t in SPECIAL_TOKENS:
        out += [t, t + t, f" {t}", f"{t} ", f"a{t}b", f" a {t} b ", f"{t}\n", f"\n{t}\n", f"{t}hello",
                f"Hello{t}", f"x {t}{t} y", f"{t}{t}{t}"]
    for t in NEAR_MISSES:
        out += [t, f"a{t}b", f"{t} text", f"text {t}"]
    out += ["<|im_start|>user\nHi<|im_end|>\n", "<think>x</think>", "<s>hi</s>", "<s> hi </s>",
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat's 2+2?<|im_end|>\n<|im_start|>assistant\n",
            "<|im_start|>assistant\n<think>\n\n</think>\n\nFour.<|im_end|>\n",
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nQ?<|eot_id|>",
            "<s>[INST] Hello [/INST] Hi there</s>[INST] Bye [/INST]", "<s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nq [/INST] a </s>",
            "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\n", "</s><s>", "<s><s><s>", "<unk><unk>",
            "<|im_end|><|im_start|>", "<|endoftext|><|endoftext|>", "<|im_start|><|im_start|>|>",
            "<<s>>", "<</s>>", "<s>></s>", "<|<|im_start|>|>", "<think></think>", "<think>\n\n</think>\n\n",
            "a<think>b</think>c<think>d</think>"]
    toks = SPECIAL_TOKENS + NEAR_MISSES
    for _ in range(80):
        parts = []
        for _ in range(r.randint(2, 6)):
            parts.append(r.choice(toks) if r.random() < 0.5 else r.choice([sentence(r), r.choice(NOUNS), " ", "\n", ""]))
        out.append("".join(parts))
    return out


# ---------------------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------------------
def contractions(r):
    out = []
    suffixes = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]
    bases = {"'s": ["it", "he", "she", "that", "John", "what"], "'t": ["don", "can", "won", "isn", "didn"],
             "'re": ["you", "we", "they"], "'ve": ["I", "we", "could"], "'m": ["I"], "'ll": ["I", "you", "it"],
             "'d": ["I", "she", "we"]}
    for suf in suffixes:
        variants = {suf, suf.upper(), suf[0] + suf[1:].capitalize()}
        if len(suf) == 3:
            variants.add(suf[0] + suf[1] + suf[2].upper())
        for v in sorted(variants):
            for b in bases[suf]:
                out += [b + v, (b + v).upper(), f" {b}{v} ", f"{b}{v}{r.choice(PUNCT_END)}"]
            out += [v, " " + v, v + " x", "x" + v + v, v + v]
    out += ["I'M", "DON'T", "I'm", "i'm", "Don't", "WE'LL", "We'Ll", "THEY'RE", "they'Re", "YOU'VE", "SHE'D",
            "IT'S", "it'S", "CAN'T", "won'T", "'S", "'s", "''s", "'''", "'", "' s", "'st", "'sx", "'ss",
            "'ll've", "y'all", "rock 'n' roll", "o'clock", "O'Neill", "'90s", "the '80s", "James's",
            "students'", "'quoted'", "'tis", "ma'am", "it\u2019s", "DON\u2019T", "it`s", "it\u00b4s",
            "I'M SURE YOU'LL SEE THEY'RE RIGHT AND WE'VE WON'T'VE", "she'd've", "shouldn't've",
            "'M", "'LL", "'VE", "'RE", "'D", "'T", "x'S", "x'T"]
    for _ in range(40):
        words = []
        for _ in range(r.randint(3, 9)):
            w = r.choice(CONTRACTIONS + NOUNS)
            words.append(w.upper() if r.random() < 0.3 else w)
        out.append(" ".join(words) + r.choice(PUNCT_END))
    return out


# ---------------------------------------------------------------------------------------
# Long words (no spaces): the heap-based merge path
# ---------------------------------------------------------------------------------------
def long_words(r):
    out = []
    lower = "abcdefghijklmnopqrstuvwxyz"
    for n in (500, 513, 777, 1000, 1500, 2048, 3000, 5000, 10000):
        out.append("".join(r.choice(lower) for _ in range(n)))
    out += ["a" * 500, "a" * 1023, "a" * 4096, "ab" * 300, "abc" * 400, "the" * 250, "ha" * 600,
            "0" * 600, "9" * 1000, "1234567890" * 60, "!" * 512, "-" * 800, "=" * 2000, "." * 700,
            "\u00e9" * 500, "e\u0301" * 300, "\u4e2d" * 600, "\u65e5\u672c\u8a9e" * 200, "\u0645\u0631\u062d\u0628\u0627" * 120,
            "\U0001f642" * 500, "\U0001f468\u200d\U0001f469\u200d\U0001f467" * 120, "\u0915\u094d\u0937" * 200,
            " " * 600, "\n" * 520, "\t" * 512, " \n" * 300, "x" + " " * 700 + "y"]
    for _ in range(10):                          # mixed-script runs without spaces
        pool = lower + lower.upper() + "0123456789_-" + "\u00e9\u00fc\u00f1\u03b1\u03b2\u0434\u0436\u4e2d\u6587\u3042\u30a2\ud55c\u0e01"
        n = r.randint(500, 3000)
        out.append("".join(r.choice(pool) for _ in range(n)))
    for _ in range(6):                           # long concatenated English words (camel case)
        n = 0
        parts = []
        while n < 600:
            w = r.choice(NOUNS + ADJS + VERBS)
            w = w.capitalize() if r.random() < 0.5 else w
            parts.append(w)
            n += len(w)
        out.append("".join(parts))
    return out


# ---------------------------------------------------------------------------------------
# Empty and single characters
# ---------------------------------------------------------------------------------------
def singles():
    out = [""]
    out += [chr(c) for c in range(0x20, 0x7f)]             # every printable ASCII character
    out += [chr(c) for c in range(0x01, 0x20)]             # C0 controls except NUL
    out += [chr(c) for c in range(0xa1, 0x100)]            # Latin-1 supplement (bytes 161-255 of bytes_to_unicode)
    out += ["\u0100", "\u0120", "\u0121", "\u0143", "\u2581", "\u0101", "\u4e00", "\uac00", "\u3042", "\u05d0",
            "\u0627", "\u0905", "\u0e01", "\u03a9", "\u0416", "\U0001f600", "\U00010000", "\U0010fffd",
            "\ufffd", "\u1100", "\u11a8"]
    return out


# ---------------------------------------------------------------------------------------
# Random mixes of everything above
# ---------------------------------------------------------------------------------------
def mixes(r, pools):
    out = []
    seps = ["", " ", " ", "\n", "\t", "  ", "\r\n", "\u00a0", ", ", ". "]
    for _ in range(520):
        k = r.randint(2, 6)
        parts = []
        for _ in range(k):
            pool = r.choice(pools)
            s = r.choice(pool)
            if len(s) > 300:
                s = s[:r.randint(1, 300)]
            parts.append(s)
        out.append("".join(p + r.choice(seps) for p in parts).rstrip(" ") if r.random() < 0.5
                   else r.choice(seps).join(parts))
    return out


def clean(s):
    # No lone surrogates (cannot occur with the literals above, but slicing could only split
    # between code points in Python, so this is a guard) and no NUL.
    for ch in s:
        o = ord(ch)
        if 0xD800 <= o <= 0xDFFF or o == 0:
            raise ValueError(f"bad code point U+{o:04X} in {s!r}")
    return s


def build():
    r = random.Random(SEED)
    groups = [
        ("prose", prose(r)),
        ("code", code(r)),
        ("numbers", numbers(r)),
        ("whitespace", whitespace(r)),
        ("scripts", scripts(r)),
        ("emoji", emoji(r)),
        ("special_chars", special_chars(r)),
        ("special_tokens", special_tokens(r)),
        ("contractions", contractions(r)),
        ("long_words", long_words(r)),
        ("singles", singles()),
    ]
    pools = [g for name, g in groups if name not in ("long_words",)]
    groups.append(("mixes", mixes(r, pools)))
    seen = set()
    out = []
    counts = {}
    for name, items in groups:
        n = 0
        for s in items:
            clean(s)
            if s in seen:
                continue
            seen.add(s)
            out.append(s)
            n += 1
        counts[name] = n
    return out, counts


def render(strings):
    return "".join(json.dumps({"text": s}, ensure_ascii=True) + "\n" for s in strings)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = ap.parse_args()
    strings, counts = build()
    data = render(strings)
    summary = ", ".join(f"{k} {v}" for k, v in counts.items())
    if args.check:
        try:
            with open(args.out, encoding="ascii") as f:
                old = f.read()
        except OSError as e:
            print(f"make_tokenizer_strings: {e}", file=sys.stderr)
            return 1
        if old != data:
            print(f"make_tokenizer_strings: {args.out} is stale; rerun without --check", file=sys.stderr)
            return 1
        print(f"make_tokenizer_strings: {args.out} up to date ({len(strings)} strings)")
        return 0
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        f.write(data)
    os.replace(tmp, args.out)
    print(f"make_tokenizer_strings: wrote {len(strings)} strings to {os.path.relpath(args.out)} ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
