#!/bin/sh
# Regenerates the LoRA goldens: for three cases, a seeded non-zero PEFT LoRA
# adapter folder (tests/fixtures/engine/lora_<case>/: adapter_config.json,
# adapter_model.safetensors, as PEFT writes them) on the model folder
# `ppa init` writes for an engine config with seed 11, std 0.3, --init-all,
# and the float64 PyTorch reference's results with that adapter applied on the
# engine rows rows_<c>.jsonl (tests/fixtures/engine/golden_lora_<case>/):
# logps.jsonl, grads.safetensors (dL/dA and dL/dB of every adapter tensor
# under its PEFT name, the base frozen), the autocast bf16 pair
# (logps_autocast_bf16.jsonl, grads_autocast_bf16.safetensors) and
# merged.safetensors (W + s B A in F32 under the base's name for every target
# weight).  Every run checks the shared-prefix layout and finite differences
# and stops when a check fails.
#   lora_llama:   llama_untied,   r 4, alpha 8,  all seven targets,                rslora off, seed 21
#   lora_qwen2:   qwen2_tied_gqa, r 2, alpha 3,  q_proj,v_proj,o_proj,down_proj,  rslora on,  seed 22
#   lora_mistral: mistral_gqa,    r 8, alpha 16, all seven targets,                rslora off, seed 23
# The base model folders are not committed (ppa init is deterministic, checked
# here by initialising twice; so is the adapter, written twice and compared).
# Run from anywhere after `make` (or with PPA=/path/to/ppa); the same bytes on
# every run.
set -eu
if [ -n "${PPA:-}" ]; then
    case $PPA in
    /*) ;;
    */*) PPA=$(pwd)/$PPA ;;  # a relative $PPA is relative to the caller's directory
    esac
fi
cd "$(dirname "$0")/../.."
PPA=${PPA:-./ppa}
PY=/usr/bin/python3
DIR=tests/fixtures/engine
command -v "$PPA" >/dev/null 2>&1 || { echo "make_lora_goldens: build ppa first (make), or set PPA" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

ALL=q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
for case in llama qwen2 mistral; do
    case $case in
    llama)   c=llama_untied;   r=4; alpha=8;  targets=$ALL;                            rs=;         seed=21 ;;
    qwen2)   c=qwen2_tied_gqa; r=2; alpha=3;  targets=q_proj,v_proj,o_proj,down_proj; rs=--rslora; seed=22 ;;
    mistral) c=mistral_gqa;    r=8; alpha=16; targets=$ALL;                            rs=;         seed=23 ;;
    esac
    echo "== lora_$case (base $c)"
    # the base folder is named after its config: the adapter's base_model_name_or_path is that name
    mkdir -p "$TMP/a" "$TMP/b"
    $PPA init --config "$DIR/$c.json" --out "$TMP/a/$c" --seed 11 --init-std 0.3 --init-all >/dev/null
    $PPA init --config "$DIR/$c.json" --out "$TMP/b/$c" --seed 11 --init-std 0.3 --init-all >/dev/null
    for f in config.json model.safetensors; do
        cmp "$TMP/a/$c/$f" "$TMP/b/$c/$f" ||
            { echo "make_lora_goldens: ppa init is not deterministic ($f)" >&2; exit 1; }
    done
    ad=$DIR/lora_$case
    out=$DIR/golden_lora_$case
    rm -rf "$ad" "$out"
    # shellcheck disable=SC2086  # $rs: empty or --rslora
    $PY tests/ref/engine_ref.py --make-adapter --model "$TMP/a/$c" --out "$ad" \
        --seed "$seed" --r "$r" --alpha "$alpha" --targets "$targets" $rs
    # shellcheck disable=SC2086
    $PY tests/ref/engine_ref.py --make-adapter --model "$TMP/b/$c" --out "$TMP/lora_$case.again" \
        --seed "$seed" --r "$r" --alpha "$alpha" --targets "$targets" $rs >/dev/null
    for f in adapter_config.json adapter_model.safetensors; do
        cmp "$ad/$f" "$TMP/lora_$case.again/$f" ||
            { echo "make_lora_goldens: --make-adapter is not deterministic ($f)" >&2; exit 1; }
    done
    $PY tests/ref/engine_ref.py --model "$TMP/a/$c" --adapter "$ad" --rows "$DIR/rows_$c.jsonl" --out "$out" \
        --shared-prefix --check --autocast-bf16 --merge-out "$out/merged.safetensors"
    rm -rf "$TMP/a" "$TMP/b"
done
du -cb "$DIR"/lora_*/* "$DIR"/golden_lora_*/* | tail -1
