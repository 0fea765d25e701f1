#!/usr/bin/env bash
# The README's second command (and what CI runs): installs what is missing, builds with
# warnings as errors, and runs the whole test suite:
#   1. the release build: every unit and end-to-end test;
#   2. the asan preset (ASan+UBSan): every test again;
#   3. the tsan preset: the runtime's tests and a few of the server's (label tsan: the
#      connection and its slots, and an end-to-end run of concurrent clients, a reload and a
#      shutdown; a few minutes on 2 cores);
#   4. fuzz: each libFuzzer target for WEFT_FUZZ_SECONDS (default 60) from its seed corpus
#      (scripts/fuzz.sh).
# Each stage ends with one line "STAGE: N passed, M failed[, K skipped]"; the last two lines
# count the stages and add up the tests ("total: ..."). The exit status is non-zero when any
# stage failed. Set WEFT_TEST_STAGES to a subset ("release asan tsan fuzz") to run fewer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
stages="${WEFT_TEST_STAGES:-release asan tsan fuzz}"
jobs="$(nproc)"
logs="build/test-logs"
mkdir -p "$logs"
stages_passed=0 stages_failed=0 total_passed=0 total_failed=0 total_skipped=0
summary=()

# Reads ctest's closing lines from log $1 into the globals passed/failed/skipped.
count_ctest() {
  local line
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1 || true)
  if [[ -z "$line" ]]; then
    passed=0 failed=1 skipped=0  # ctest did not get to its summary: count the stage as failed
    return
  fi
  local total
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$1" || true)
  passed=$((total - failed - skipped))
}

# Reads scripts/fuzz.sh's log $1: one test per target, failed when it says FAILED.
count_fuzz() {
  failed=$(grep -cE '^fuzz: .* FAILED' "$1" || true)
  passed=$(grep -cE '^== fuzz: ' "$1" || true)
  passed=$((passed - failed))
  skipped=0
}

for stage in $stages; do
  echo "== test stage: $stage"
  log="$logs/$stage.log"
  ok=1
  if [[ "$stage" == fuzz ]]; then
    WEFT_WERROR=ON scripts/fuzz.sh "${WEFT_FUZZ_SECONDS:-60}" 2>&1 | tee "$log" || ok=0
    count_fuzz "$log"
  else
    filter=()
    [[ "$stage" == tsan ]] && filter=(-L 'runtime|tsan')
    if ! WEFT_WERROR=ON scripts/build.sh "$stage" 2>&1 | tee "$log.build"; then
      ok=0 passed=0 failed=1 skipped=0
    else
      ctest --preset "$stage" -j "$jobs" "${filter[@]}" --timeout 600 2>&1 | tee "$log" || ok=0
      count_ctest "$log"
    fi
  fi
  ((failed == 0)) || ok=0
  line="$stage: $passed passed, $failed failed"
  ((skipped == 0)) || line+=", $skipped skipped"
  echo "$line"
  summary+=("$line")
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
  if ((ok)); then
    stages_passed=$((stages_passed + 1))
  else
    stages_failed=$((stages_failed + 1))
  fi
done

echo "== summary"
printf '%s\n' "${summary[@]}"
echo "stages: $stages_passed passed, $stages_failed failed"
line="total: $total_passed passed, $total_failed failed"
((total_skipped == 0)) || line+=", $total_skipped skipped"
echo "$line"
((stages_failed == 0))
