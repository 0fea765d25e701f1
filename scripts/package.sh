#!/usr/bin/env bash
# Builds weft's Debian package: a release build of weft and weft-load configured for the
# /usr prefix (so weft looks for /etc/weft/weft.toml and /usr/share/weft), installed by
# CPack into build/package/weft_VERSION_ARCH.deb. Prints the package's path last.
# Usage: scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build-only >&2
cmake -S . -B build/package -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF \
  -DWEFT_WERROR="${WEFT_WERROR:-OFF}" >&2
cmake --build build/package --target weft weft-load >&2
(cd build/package && cpack -G DEB >&2)
ls -1 build/package/weft_*.deb | tail -1
