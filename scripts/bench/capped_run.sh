#!/usr/bin/env bash
# One weft run under a CPU cap, for A/B runs of weft's own overload mechanisms, faster to
# repeat and interleave than a scripts/compare.py sweep: weft (one processor) on core 0 in a
# cgroup v1 group capped at QUOTA_US per 10 ms (default 1000: 10% of a core), weft-load on
# core 1 offering RATE sessions/s of 1..5 calls for SECONDS (Zipf s = 1 over the generated
# "small" set, timeout 2 s, as compare.py). Every 0.5 s it samples the listen queue
# (Recv-Q/backlog), the connections established and half-open on the port, and the
# kernel's ListenOverflows. It prints p99 (from schedule), replies, replies/s, failed
# sessions by class and as a share of those started, weft's CPU per reply (utime+stime) and
# the per-second timeline.
# Usage (root): [WEFT=BINARY] [PROCS=N] [HELP_AGE=D] [QUOTA_US=Q] [BACKEND=B] \
#   scripts/bench/capped_run.sh RATE SECONDS [weft extra TOML lines...]
# PROCS processors (default 1) all share the capped core 0; HELP_AGE, when set, is runtime.help_age
# ("0s" turns helping off: the fairness A/B); BACKEND is io.backend (auto, io_uring or epoll;
# default auto).
#   e.g. scripts/bench/capped_run.sh 2400 6 '[limits]' 'max_queue_wait = "0s"'
# Needs build/release and the generated set (python3 www-fixtures/generate.py --preset small).
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:?RATE}
secs=${2:-6}
shift 2 || true
port=19000
# shellcheck source=scripts/bench/capped_lib.sh
source scripts/bench/capped_lib.sh
capped_binaries capped_run.sh
capped_setup $port "${QUOTA_US:-1000}" capped

# The settings compare.py gives weft, then the extra lines (a later key wins in weft's TOML
# only once per table, so extra lines name their own table).
help_line=
[[ -n ${HELP_AGE:-} ]] && help_line="help_age = \"$HELP_AGE\""
weft_toml $port "$files" "${PROCS:-1}" "${BACKEND:-auto}" "$help_line" > "$work/weft.toml"
printf '%s\n' "$@" >> "$work/weft.toml"

(echo $BASHPID > "$group/tasks"; exec taskset -c 0 "$weft" -c "$work/weft.toml") &
pid=$!
wait_listening $port || true
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
nstat -n > /dev/null
(
  for i in $(seq $((secs * 2 + 6))); do
    q=$(ss -ltnH "sport = :$port" | awk '{print $2 "/" $3}')
    e=$(ss -tnH state established "sport = :$port" | wc -l)
    h=$(ss -tnH state syn-recv "sport = :$port" | wc -l)
    o=$(nstat -z TcpExtListenOverflows | awk '/Overflows/ {print $2}')
    echo "t=$((i / 2)).$((i % 2 * 5))s queue=$q established=$e half-open=$h overflows=$o"
    sleep 0.5
  done
) > "$work/samples.txt" &
taskset -c 1 "$load" --server 127.0.0.1 --port $port --zipf 1.0 --files "$files/MANIFEST" \
  --num-calls 1..5 --rate "$rate" --duration "$secs" --timeout 2 --seed 1 --threads 1 \
  --json "$work/load.json" --quiet
cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
python3 - "$work/load.json" "$cpu0" "$cpu1" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1]))
j = j[0] if isinstance(j, list) else j
r = j["replies"]["total"]
ticks = os.sysconf("SC_CLK_TCK")
cpu_us = (float(sys.argv[3]) - float(sys.argv[2])) * 1e6 / ticks
s = j["sessions"]
print("p99 %.1f ms  replies %d  %.0f/s  failed %s  weft CPU %.1f us/reply"
      % (j["latency_ms"]["from_schedule"]["p99"], r, r / j["test_duration_s"],
         {k: v for k, v in j["errors"].items() if v and k != "all_classes_total"},
         cpu_us / max(r, 1)))
print("sessions %d  failed sessions %.1f%%"
      % (s["started"], 100.0 * s["failed"] / max(s["started"], 1)))
print("timeline (replies/s):", [t["replies"] for t in j["timeline"]])
PY
sleep 2
cat "$work/samples.txt"
