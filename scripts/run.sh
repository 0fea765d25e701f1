#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and starts weft on the bundled
# site (www-fixtures/site) with conf/weft.toml, on http://127.0.0.1:8080/. Extra arguments go
# to weft (e.g. --listen '[::1]:8080').
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
exec build/release/server/weft -c conf/weft.toml "$@"
