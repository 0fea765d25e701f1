#!/usr/bin/env bash
# Installs exactly the Debian packages weft's build, tests and benchmarks need.
# Idempotent: when every package is already installed, apt is not touched at all.
# Usage: scripts/setup.sh [--with-containers | --build-only | --run]
#   --with-containers  also the container tools (podman, buildah, runc, debootstrap, ...)
#   --build-only       only what building the weft binary needs (the Dockerfile's build stage)
#   --run              what scripts/run.sh needs: the binary's build, curl, the MIME fallback
set -euo pipefail

# Build: compiler, CMake, and the libraries the weft binary links.
BUILD_PKGS=(
  g++ cmake ninja-build pkg-config make
  dpkg-dev              # dpkg-shlibdeps: the .deb's library dependencies (scripts/package.sh)
  liburing-dev          # io_uring (runtime/)
  node-llhttp           # llhttp C sources, built as a static library (server/)
  libspdlog-dev libfmt-dev
  libtomlplusplus-dev libcli11-dev
  nlohmann-json3-dev    # weft-load merge reads JSON reports back
  libssl-dev            # TLS (server/tls/): OpenSSL 3, as Debian's NGINX
  libnghttp2-dev        # HTTP/2 framing and HPACK (server/h2/): nghttp2 1.52
  libzstd-dev libbrotli-dev zlib1g-dev   # compression on the fly (server/compress/)
)
# Build of the test suite and benchmark programs, and the MIME fallback the tests see.
TEST_BUILD_PKGS=(
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  libboost-fiber-dev libboost-context-dev   # runtime benchmarks' peer
  media-types           # /etc/mime.types fallback
)
# Tests: real clients and sanitizer/fuzzer runtimes. clang with libclang-rt-14-dev builds the
# libFuzzer targets (scripts/fuzz.sh); llvm-14 brings llvm-symbolizer, which clang's
# sanitizers need to name the functions in a crash report.
TEST_PKGS=(
  curl openssl python3 python3-yaml clang
  python3-brotli python3-zstandard   # tests decode br and zstd responses
  libclang-rt-14-dev llvm-14 procps iproute2
  python3-kubernetes    # the Kubernetes API's models: deploy/k8s checked against its schema
  debootstrap           # the package test installs the .deb into a fresh Debian root
  nghttp2-client        # h2load and nghttp, HTTP/2 clients of the e2e tests
  python3-h2            # hand-made HTTP/2 frames in the e2e tests
)
# Benchmarks and comparisons: the peers and the clients that measure them.
BENCH_PKGS=(
  nginx-light lighttpd h2o wrk httperf apache2-utils gnuplot-nox
)
# Containers: only with --with-containers (the container test is a separate command).
CONTAINER_PKGS=(
  podman buildah runc debootstrap uidmap slirp4netns fuse-overlayfs
  catatonit             # the pause binary of the pods `podman kube play` makes
)

case "${1:-}" in
  "") want=("${BUILD_PKGS[@]}" "${TEST_BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${BENCH_PKGS[@]}") ;;
  --with-containers)
    want=("${BUILD_PKGS[@]}" "${TEST_BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${BENCH_PKGS[@]}"
          "${CONTAINER_PKGS[@]}") ;;
  --build-only) want=("${BUILD_PKGS[@]}") ;;
  --run) want=("${BUILD_PKGS[@]}" curl media-types) ;;
  *) echo "usage: scripts/setup.sh [--with-containers | --build-only | --run]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#want[@]} packages present"
  exit 0
fi

echo "setup: installing ${#missing[@]} missing packages: ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx-light/lighttpd/h2o would start system services on install; weft's harness
# runs them unprivileged from its own folders, so keep the packaged services off.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
