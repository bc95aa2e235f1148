#!/usr/bin/env bash
# Runs the libFuzzer harnesses of a build (BUILD/fuzz/fuzz_NAME). For each:
#   1. every committed input, once: the seeds tests/fuzz/corpus/NAME and the
#      findings tests/fuzz/regressions/NAME (a fixed bug must stay fixed);
#   2. SECONDS of fuzzing. New inputs go to BUILD/corpus/NAME, kept between
#      runs; the committed folders are only read. A crashing input lands in
#      BUILD/artifacts/NAME/.
# Prints libFuzzer's closing line (executions, cov, ft, corpus) and its final
# statistics per harness, and exits nonzero if any input crashed, leaked,
# tripped UBSan, ran out of memory or timed out.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [NAME ...]   (default: every harness)
set -u
build=${1:-build-fuzz}
seconds=${2:-600}
shift 2 2>/dev/null
only=" $* "
cd "$(dirname "$0")/../.."
# the harnesses' temporary files (tests/fuzz/fuzz_common.h), in memory when
# possible; a crashing input leaves its folder behind, removed here with the rest
base=/dev/shm
[ -w "$base" ] || base=${TMPDIR:-/tmp}
TMPDIR=$(mktemp -d "$base/ppa-fuzz-run.XXXXXX") || exit 1
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
failed=()
n_run=0
start=$SECONDS
for bin in "$build"/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  case $bin in *.d) continue ;; esac
  name=${bin##*/fuzz_}
  [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
  n_run=$((n_run + 1))
  dirs=("tests/fuzz/corpus/$name")
  [ -d "tests/fuzz/regressions/$name" ] && dirs+=("tests/fuzz/regressions/$name")
  mkdir -p "$build/corpus/$name" "$build/artifacts/$name" "$build/logs"
  log=$build/logs/$name.log
  mapfile -t files < <(find "${dirs[@]}" -type f | sort)
  if ! "$bin" -timeout=30 -rss_limit_mb=2048 -artifact_prefix="$build/artifacts/$name/" "${files[@]}" >"$log.replay" 2>&1; then
    echo "fuzz $name: a committed input fails (log $log.replay):"
    grep -E 'ERROR|runtime error|^fuzz:|Running:' "$log.replay" | tail -n 5
    failed+=("$name")
    continue
  fi
  echo "fuzz $name: ${#files[@]} committed inputs pass; fuzzing ${seconds}s"
  # -close_fd_mask=3: the parsers' notes are not shown (sanitizer reports are);
  # -timeout: no input of these sizes may take that long
  "$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 -close_fd_mask=3 \
    -artifact_prefix="$build/artifacts/$name/" "$build/corpus/$name" "${dirs[@]}" >"$log" 2>&1
  status=$?
  # the closing line, or after a crash the last status line before it
  { grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -n 1
    grep -E 'stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log"; } | sed "s/^/fuzz $name: /"
  if [ $status -ne 0 ]; then
    echo "fuzz $name: FAILED (exit status $status, log $log):"
    grep -E 'ERROR|runtime error|^fuzz:|Test unit written' "$log" | head -n 5
    failed+=("$name")
  fi
done
echo "fuzz: $((SECONDS - start))s${failed[*]:+, failed: ${failed[*]}}"
# the closing line CI reads: harnesses that ran clean, and those that did not
echo "fuzz: $((n_run - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
