# bench/lib.sh: what the benchmark scripts share (sourced).

# random_lists N K P R V: N pre-tokenized lists of K responses of R tokens to a P-token prompt, ids in 3..V-1,
# labels in [0, 1), JSON Lines on stdout; the same lists on every run (awk's srand(5))
random_lists() {
  awk -v n="$1" -v k="$2" -v p="$3" -v r="$4" -v V="$5" 'BEGIN { srand(5)
    for (i = 0; i < n; i++) {
      printf "{\"prompt_ids\": ["; for (t = 0; t < p; t++) printf "%s%d", t ? ", " : "", 3 + int(rand() * (V - 3))
      printf "], \"response_ids\": ["
      for (j = 0; j < k; j++) { printf "%s[", j ? ", " : ""; for (t = 0; t < r; t++) printf "%s%d", t ? ", " : "", 3 + int(rand() * (V - 3)); printf "]" }
      printf "], \"scores\": ["; for (j = 0; j < k; j++) printf "%s%.6f", j ? ", " : "", rand(); printf "]}\n" } }'
}

# torch_settings: PyTorch's best settings on this machine (bench_step_torch.py's docstring) in the array torch_env:
# passive OpenMP waiting, glibc malloc keeping freed memory, and OPENBLAS_CORETYPE=$coretype (CORETYPE if set, else
# the avx512 kernels the CPU has, which OpenBLAS 0.3.21 does not always pick itself)
torch_settings() {
  if [ -z "${CORETYPE+x}" ]; then
    if grep -qw avx512_bf16 /proc/cpuinfo; then coretype=Cooperlake
    elif grep -qw avx512f /proc/cpuinfo; then coretype=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then coretype=Haswell
    else coretype=; fi
  else
    coretype=$CORETYPE
  fi
  torch_env=(OMP_WAIT_POLICY=passive MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736)
}
