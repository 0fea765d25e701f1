#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan+UBSan) and runs each one for
# SECONDS (default 60) from its seed corpus in fuzz/corpus/<target>/. Fails when a target
# finds a crash, a leak, a timeout or a broken invariant; the input that did it is saved as
# build/fuzz/crashers/<target>/crash-<sha1> (replay: build/fuzz/fuzz/<target> FILE).
# Inputs that found new coverage go to build/fuzz/corpus/<target>/ (not committed; copy
# the interesting ones into fuzz/corpus/ by hand).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (CI: the `fuzz` stage of scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_request fuzz_range fuzz_tls_hello fuzz_h2_frames)

scripts/build.sh fuzz
status=0
for t in "${targets[@]}"; do
  work="build/fuzz/corpus/$t"
  crashers="build/fuzz/crashers/$t"
  mkdir -p "$work" "$crashers"
  echo "== fuzz: $t for ${seconds}s (seeds: fuzz/corpus/$t, $(ls "fuzz/corpus/$t" | wc -l) files)"
  log="build/fuzz/$t.log"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a leak or blow-up.
  if build/fuzz/fuzz/"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$crashers/" "$work" "fuzz/corpus/$t" >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$log" || true
  else
    status=1
    echo "fuzz: $t FAILED; last lines of $log:"
    tail -40 "$log"
    echo "fuzz: crashers saved in $crashers/:"
    ls -l "$crashers"
  fi
done
exit $status
