#!/usr/bin/env bash
# Measures the image recorded in docs/containers.md: its size, and the time from
# `ENGINE run` to the first successful request (200 for GET /), RUNS times each with and
# without the io_uring seccomp profile; prints every sample and the medians.
# Usage: scripts/container-measure.sh [IMAGE [RUNS]]   (default weft:test, 7; build it first,
# e.g. with scripts/container-test.sh). Engine: $WEFT_CONTAINER_ENGINE, else podman, else docker.
set -euo pipefail
cd "$(dirname "$0")/.."
image="${1:-weft:test}"
runs="${2:-7}"
engine="${WEFT_CONTAINER_ENGINE:-}"
if [[ -z "$engine" ]]; then
  if command -v podman >/dev/null; then engine=podman; else engine=docker; fi
fi
# These VMs refuse the engine's default (higher) RLIMIT_NOFILE/NPROC; see docs/containers.md.
read -r -a run_flags <<<"${WEFT_CONTAINER_RUN_FLAGS:---ulimit nofile=16384:16384 --ulimit nproc=4096:4096}"

size=$("$engine" image inspect --format '{{.Size}}' "$image")
echo "image $image: $size bytes ($(awk -v s="$size" 'BEGIN{printf "%.1f MB", s/1e6}'))"

# Seconds from `run` until GET / answers 200 on the published port; the container is removed.
startup() {
  local port=$1
  shift
  local t0 t1 id
  t0=$(date +%s.%N)
  id=$("$engine" run -d --no-healthcheck -p "127.0.0.1:$port:8080" "${run_flags[@]}" "$@" "$image")
  for _ in $(seq 3000); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.005
  done
  t1=$(date +%s.%N)
  "$engine" rm -f "$id" >/dev/null
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f\n", b-a}'
}

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

port=$((18000 + RANDOM % 1000))
for variant in default io_uring; do
  flags=()
  [[ $variant == io_uring ]] && flags=(--security-opt "seccomp=$PWD/conf/seccomp-io_uring.json")
  samples=()
  for _ in $(seq "$runs"); do samples+=("$(startup "$port" "${flags[@]}")"); done
  echo "run -> first 200, $variant seccomp profile: ${samples[*]} s; median" \
    "$(printf '%s\n' "${samples[@]}" | median) s"
done
