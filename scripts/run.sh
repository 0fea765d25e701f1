#!/usr/bin/env bash
# The README's first command: installs what is missing, builds the weft binary (only it and
# what it links, not the tests and benchmarks), and starts weft on the bundled site
# (www-fixtures/site) with conf/weft.toml. Once the server answers, prints its URL (by
# default http://127.0.0.1:8080/). Extra arguments go to weft (e.g. --listen '[::1]:8080').
# Ctrl-C stops it gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --run
# The `server` preset (build/server): tests and benchmarks off, so neither their packages
# nor their compile time stand between a newcomer and the page.
cmake --preset server -DWEFT_WERROR="${WEFT_WERROR:-OFF}" >/dev/null
cmake --build --preset server -j "$(nproc)" --target weft

# The address to announce: the last --listen given, else the shipped config's.
listen=$(sed -nE 's/^listen = \["([^"]+)".*/\1/p' conf/weft.toml | head -1)
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --listen) listen="${args[i + 1]:-$listen}" ;;
    --listen=*) listen="${args[i]#--listen=}" ;;
  esac
done
host="${listen%:*}" port="${listen##*:}"
case "$host" in "*" | 0.0.0.0) host=127.0.0.1 ;; "[::]") host="[::1]" ;; esac

build/server/server/weft -c conf/weft.toml "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM
# Wait for the listener itself (bounded: 20 s), then say where it is.
for _ in $(seq 200); do
  kill -0 "$pid" 2>/dev/null || break
  if curl -s -o /dev/null --max-time 1 "http://$host:$port/"; then
    echo "weft is serving http://$host:$port/ (Ctrl-C stops it)"
    break
  fi
  sleep 0.1
done
# `wait` returns early when a trapped signal arrives: wait again until weft has exited.
status=0
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid" && status=0 || status=$?
done
exit "$status"
