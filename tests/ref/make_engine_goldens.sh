#!/bin/sh
# Regenerates the engine goldens: for each config of tests/fixtures/engine/,
# the seeded rows (rows_<c>.jsonl) and the float64 PyTorch reference's
# log-probs and gradients (golden_<c>/logps.jsonl, golden_<c>/grads.safetensors)
# on the model folder `ppa init` writes with seed 11, std 0.3, --init-all, and
# what PyTorch's autocast bf16 gets on the same inputs (golden_<c>/*_autocast_bf16.*:
# the yardstick of tests/test_bf16.c).
# The model folders are not committed: ppa init is deterministic (checked
# here by initialising twice), so the C test regenerates them.
# Run from anywhere after `make`; the same bytes on every run.
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
PPA=./ppa
DIR=tests/fixtures/engine
[ -x "$PPA" ] || { echo "make_engine_goldens: build ppa first (make)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

seed=0
for c in llama_untied qwen2_tied_gqa llama3_rope mistral_gqa; do
    seed=$((seed + 1))
    echo "== $c"
    $PPA init --config "$DIR/$c.json" --out "$TMP/$c" --seed 11 --init-std 0.3 --init-all >/dev/null
    $PPA init --config "$DIR/$c.json" --out "$TMP/$c.again" --seed 11 --init-std 0.3 --init-all >/dev/null
    for f in config.json model.safetensors; do
        cmp "$TMP/$c/$f" "$TMP/$c.again/$f" || { echo "make_engine_goldens: ppa init is not deterministic ($f)" >&2; exit 1; }
    done
    $PY tests/ref/engine_ref.py --make-rows --config "$DIR/$c.json" --seed "$seed" --out "$DIR/rows_$c.jsonl"
    $PY tests/ref/engine_ref.py --model "$TMP/$c" --rows "$DIR/rows_$c.jsonl" --out "$DIR/golden_$c" \
        --shared-prefix --check --autocast-bf16
done
du -cb "$DIR"/rows_*.jsonl "$DIR"/golden_*/* | tail -1
