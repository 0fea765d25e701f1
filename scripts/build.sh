#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release). Usage: scripts/build.sh [PRESET] [-- extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
[[ "${1:-}" == "--" ]] && shift
cmake --preset "$preset" -DWEFT_WERROR="${WEFT_WERROR:-OFF}" "$@" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
