#!/usr/bin/env bash
# System calls per session of weft's epoll backend (issue 46): weft (one processor, epoll) on
# core 0, weft-load on core 1 offering RATE sessions/s of 1..5 calls for SECONDS (Zipf s = 1
# over the generated "small" set, below saturation: every session completes), while perf
# counts the server's epoll_ctl, epoll_pwait2, accept4 and all system calls. Prints each per
# completed session. WEFT=BINARY picks the build (default build/release's); WEFT_B=BINARY
# adds a second one, alternated with the first in every round, for an A/B; BACKEND (epoll)
# picks the backend of both.
# Usage (root, for perf): [WEFT=..] [WEFT_B=..] scripts/bench/syscalls_per_session.sh \
#   [RATE] [SECONDS] [ROUNDS]
# Needs build/release and www-fixtures/generated/small (www-fixtures/generate.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-500}
secs=${2:-4}
rounds=${3:-2}
port=19010
# shellcheck source=scripts/bench/capped_lib.sh
source scripts/bench/capped_lib.sh
capped_binaries syscalls_per_session.sh
capped_setup $port 0 syscalls
builds=("$weft")
[[ -n ${WEFT_B:-} ]] && builds+=("$WEFT_B")
events=syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_accept4,raw_syscalls:sys_enter

# run_one BINARY: one measured run; prints "epoll_ctl pwait2 accept4 all" per session.
run_one() {
  weft_toml $port "$files" 1 "${BACKEND:-epoll}" > "$work/weft.toml"
  (echo $BASHPID > "$group/tasks"; exec taskset -c 0 "$1" -c "$work/weft.toml") &
  pid=$!
  wait_listening $port || { echo "server did not start" >&2; exit 1; }
  perf stat -e "$events" -p "$pid" -x, -o "$work/perf.txt" &
  local perf_pid=$!
  sleep 0.2
  taskset -c 1 "$load" --server 127.0.0.1 --port $port --zipf 1.0 --files "$files/MANIFEST" \
    --num-calls 1..5 --rate "$rate" --duration "$secs" --timeout 2 --seed 1 --threads 1 \
    --json "$work/load.json" --quiet
  kill -INT $perf_pid
  wait $perf_pid || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
  python3 - "$work/load.json" "$work/perf.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j = j[0] if isinstance(j, list) else j
done = max(j["sessions"]["completed"], 1)
counts = {}
for line in open(sys.argv[2]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].isdigit():
        counts[f[2].split(":")[-1]] = int(f[0])
print("sessions %d (failed %d)  per session: epoll_ctl %.2f  epoll_pwait2 %.2f  accept4 %.2f  "
      "all %.1f" % (done, j["sessions"]["failed"], counts.get("sys_enter_epoll_ctl", 0) / done,
                    counts.get("sys_enter_epoll_pwait2", 0) / done,
                    counts.get("sys_enter_accept4", 0) / done, counts.get("sys_enter", 0) / done))
PY
}

for r in $(seq "$rounds"); do
  order=("${builds[@]}")
  # Reversed every other round, so that neither build always runs first.
  if (( r % 2 == 0 )) && (( ${#builds[@]} == 2 )); then order=("${builds[1]}" "${builds[0]}"); fi
  for b in "${order[@]}"; do
    printf 'round %d  %-40s ' "$r" "$b"
    run_one "$b"
  done
done
