#!/bin/sh
# Regenerates the engine goldens: for each config of tests/fixtures/engine/,
# the seeded rows (rows_<c>.jsonl) and the float64 PyTorch reference's
# log-probs and gradients (golden_<c>/logps.jsonl, golden_<c>/grads.safetensors)
# on the model folder `ppa init` writes with seed 11, std 0.3, --init-all, and
# what PyTorch's autocast bf16 gets on the same inputs (golden_<c>/*_autocast_bf16.*:
# the yardstick of tests/test_bf16.c).  The reward models (reward_*.json) get
# golden_<c>/rewards.jsonl and rewards_autocast_bf16.jsonl instead of the
# log-probs; they are made only when `ppa init` accepts their config (a note
# otherwise), so this script runs before ppa supports reward models.
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
for c in llama_untied qwen2_tied_gqa llama3_rope mistral_gqa reward_llama reward_qwen2 reward_armo; do
    seed=$((seed + 1))
    echo "== $c"
    case $c in
    reward_*)
        if ! $PPA init --config "$DIR/$c.json" --out "$TMP/$c" --seed 11 --init-std 0.3 --init-all \
                >/dev/null 2>"$TMP/$c.err"; then
            echo "make_engine_goldens: note: $c skipped, ppa init refuses its config:" >&2
            sed 's/^/    /' "$TMP/$c.err" >&2
            continue
        fi ;;
    *) $PPA init --config "$DIR/$c.json" --out "$TMP/$c" --seed 11 --init-std 0.3 --init-all >/dev/null ;;
    esac
    $PPA init --config "$DIR/$c.json" --out "$TMP/$c.again" --seed 11 --init-std 0.3 --init-all >/dev/null
    for f in config.json model.safetensors; do
        cmp "$TMP/$c/$f" "$TMP/$c.again/$f" || { echo "make_engine_goldens: ppa init is not deterministic ($f)" >&2; exit 1; }
    done
    $PY tests/ref/engine_ref.py --make-rows --config "$DIR/$c.json" --seed "$seed" --out "$DIR/rows_$c.jsonl"
    $PY tests/ref/engine_ref.py --model "$TMP/$c" --rows "$DIR/rows_$c.jsonl" --out "$DIR/golden_$c" \
        --shared-prefix --check --autocast-bf16
done
# BF16 checkpoints, as the paper's models ship: the same weights written by `ppa init --save-dtype bf16`, whose bf16
# values the float64 reference and autocast read exactly, so no method's error comes from rounding the weights.
# Only the log-probs are kept: golden_<c>/bf16_checkpoint_logps.jsonl and ..._logps_autocast_bf16.jsonl
# (tests/test_bf16.c: ppa's bf16 log-probs against autocast's on these).
for c in llama_untied qwen2_tied_gqa llama3_rope mistral_gqa; do
    echo "== $c (BF16 checkpoint)"
    $PPA init --config "$DIR/$c.json" --out "$TMP/$c.bf16" --seed 11 --init-std 0.3 --init-all --save-dtype bf16 >/dev/null
    $PY tests/ref/engine_ref.py --model "$TMP/$c.bf16" --rows "$DIR/rows_$c.jsonl" --out "$TMP/$c.bf16.out" \
        --shared-prefix --autocast-bf16
    for f in logps logps_autocast_bf16; do cp "$TMP/$c.bf16.out/$f.jsonl" "$DIR/golden_$c/bf16_checkpoint_$f.jsonl"; done
done
du -cb "$DIR"/rows_*.jsonl "$DIR"/golden_*/* | tail -1
