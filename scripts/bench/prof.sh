#!/usr/bin/env bash
# One server (weft on io_uring, weft on epoll, or NGINX) under the same CPU cap as
# capped_run.sh, for profiling and A/B runs of the servers' CPU per reply: the server on
# core 0 in a cgroup v1 group capped at CAP_US per 10 ms (0: no cap), weft-load on core 1
# offering RATE sessions/s of 1..5 calls for SECONDS (Zipf s = 1 over the generated "small"
# set, timeout 2 s, as compare.py). Prints replies, replies/s, the server's CPU per reply
# (utime + stime of its process, or of NGINX's worker), p99 and the failed sessions by class.
# Usage (root): [WEFT=BINARY] [PROCS=N] [RUNTIME='[runtime] lines'] [EXTRA='TOML lines'] \
#   [PSTAT=FILE] [PERF=FILE] [JSON=FILE] \
#   scripts/bench/prof.sh weft|weft-epoll|nginx RATE SECONDS [CAP_US]
# EXTRA is appended to weft's configuration (printf %b: '\n' separates lines).
# JSON keeps weft-load's report (with its per-second timeline) in FILE.
# PSTAT writes `perf stat` (system calls, context switches, page faults) of the server's
# threads over the middle of the run to FILE; PERF records `perf record -g` of core 0 there.
# Needs build/release and the generated set (python3 www-fixtures/generate.py --preset small).
set -euo pipefail
cd "$(dirname "$0")/../.."
srv=${1:?weft|weft-epoll|nginx}
rate=${2:?RATE}
secs=${3:-8}
cap=${4:-1000}
files=$PWD/www-fixtures/generated/small
load=$PWD/build/release/loadgen/weft-load
port=19100
# shellcheck source=scripts/bench/capped_lib.sh
source scripts/bench/capped_lib.sh
capped_binaries prof.sh
capped_setup $port "$cap" prof
chmod 755 "$work"  # NGINX's workers run as nobody and read the files through it

case $srv in
  weft | weft-epoll)
    backend=io_uring
    [[ $srv == weft-epoll ]] && backend=epoll
    weft_toml $port "$files" "${PROCS:-1}" $backend "$(printf '%b' "${RUNTIME:-}")" > "$work/weft.toml"
    printf '%b\n' "${EXTRA:-}" >> "$work/weft.toml"
    (echo $BASHPID > "$group/tasks"; exec taskset -c 0 "$weft" -c "$work/weft.toml") &
    pid=$!
    ;;
  nginx)
    # compare.py's NGINX settings.
    mkdir -p "$work/nginx"
    cat > "$work/nginx/nginx.conf" <<CONF
user nobody nogroup; daemon off; master_process on; worker_processes 1;
pid $work/nginx/nginx.pid; error_log $work/nginx/error.log warn; worker_rlimit_nofile 20000;
events { worker_connections 10000; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000; keepalive_timeout 75s;
  open_file_cache max=2000 inactive=60s; open_file_cache_valid 5s; open_file_cache_errors on;
  client_body_temp_path $work/nginx/cb; proxy_temp_path $work/nginx/px;
  fastcgi_temp_path $work/nginx/fc; uwsgi_temp_path $work/nginx/uw; scgi_temp_path $work/nginx/sc;
  include /etc/nginx/mime.types;
  server { listen 127.0.0.1:$port backlog=4096; root $files; }
}
CONF
    (echo $BASHPID > "$group/tasks"
     exec taskset -c 0 nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf") &
    pid=$!
    ;;
  *) echo "prof.sh: unknown server $srv" >&2; exit 2 ;;
esac
wait_listening $port || true
sleep 0.3
spid=$pid
[[ $srv == nginx ]] && spid=$(pgrep -P "$pid" | head -1)  # the worker
cpu0=$(awk '{print $14 + $15}' "/proc/$spid/stat")
middle=$((secs > 3 ? secs - 2 : 1))
perfs=()
if [[ -n ${PSTAT:-} ]]; then
  (sleep 1; exec perf stat -e raw_syscalls:sys_enter,context-switches,page-faults,task-clock \
    -p "$spid" -o "$PSTAT" -- sleep "$middle" > /dev/null 2>&1) &
  perfs+=($!)
fi
if [[ -n ${PERF:-} ]]; then
  (sleep 1; exec perf record -q -F 20000 -g -C 0 -o "$PERF" -- sleep "$middle" > /dev/null 2>&1) &
  perfs+=($!)
fi
taskset -c 1 "$load" --server 127.0.0.1 --port $port --zipf 1.0 --files "$files/MANIFEST" \
  --num-calls 1..5 --rate "$rate" --duration "$secs" --timeout 2 --seed 1 --threads 1 \
  --json "$work/load.json" --quiet
cpu1=$(awk '{print $14 + $15}' "/proc/$spid/stat")
for p in "${perfs[@]}"; do wait "$p" || true; done
python3 - "$work/load.json" "$cpu0" "$cpu1" "$srv" "$rate" "$cap" <<'PY'
import json, os, sys
a = sys.argv
j = json.load(open(a[1]))
j = j[0] if isinstance(j, list) else j
r = j["replies"]["total"]
cpu_us = (float(a[3]) - float(a[2])) * 1e6 / os.sysconf("SC_CLK_TCK")
err = {k: v for k, v in j["errors"].items() if v and k != "all_classes_total"}
print("%-10s %5s sessions/s cap %5s us: replies %6d (%.0f/s)  CPU %.1f us/reply  p99 %.1f ms  failed %s"
      % (a[4], a[5], a[6], r, r / j["test_duration_s"], cpu_us / max(r, 1),
         j["latency_ms"]["from_schedule"]["p99"], err))
PY
[[ -n ${JSON:-} ]] && cp "$work/load.json" "$JSON"
