#!/usr/bin/env bash
# The README's second command (and what CI runs): installs what is missing, builds with
# warnings as errors, and runs the whole test suite:
#   1. the release build: every unit and end-to-end test;
#   2. the asan preset (ASan+UBSan): every test again;
#   3. the tsan preset: the runtime's tests;
#   4. fuzz: each libFuzzer target for WEFT_FUZZ_SECONDS (default 60) from its seed corpus
#      (scripts/fuzz.sh).
# Set WEFT_TEST_STAGES to a subset ("release asan tsan fuzz") to run fewer stages.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
stages="${WEFT_TEST_STAGES:-release asan tsan fuzz}"
jobs="$(nproc)"
status=0
for stage in $stages; do
  echo "== test stage: $stage"
  if [[ "$stage" == fuzz ]]; then
    WEFT_WERROR=ON scripts/fuzz.sh "${WEFT_FUZZ_SECONDS:-60}" || status=1
    continue
  fi
  WEFT_WERROR=ON scripts/build.sh "$stage"
  filter=()
  [[ "$stage" == tsan ]] && filter=(-L runtime)
  if ! ctest --preset "$stage" -j "$jobs" "${filter[@]}" --timeout 600; then
    status=1
  fi
done
exit $status
