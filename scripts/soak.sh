#!/usr/bin/env bash
# Soak test: weft for MINUTES (default 10) under mixed, bounded load, sampling its RSS, open
# descriptors and threads every second; writes a report (results/soak-<timestamp>.md, or the
# --report given) and exits non-zero unless all three stay flat after warm-up and no valid
# request failed. What it runs and checks: the top of scripts/soak.py.
# Usage: scripts/soak.sh [MINUTES] [scripts/soak.py options, e.g. --report FILE --backend epoll]
# Builds the release preset first unless --weft is given (ctest runs a 1-minute version:
# the test soak.short, label soak).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-10}"
shift || true
if [[ " $* " != *" --weft "* ]]; then
  scripts/build.sh release >/dev/null
fi
exec python3 scripts/soak.py --minutes "$minutes" "$@"
