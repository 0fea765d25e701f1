#!/usr/bin/env bash
# The connection lifecycle benchmark: what a new connection costs each server. weft on
# io_uring, weft on epoll, NGINX, H2O and lighttpd (Debian's packages), each pinned to core 0
# with one worker/processor, the client on core 1, the same files, the servers alternated in
# every round. Two loads:
#   close:    wrk -t1 -c50 -H 'Connection: close' on a 100-byte file (one request per
#             connection, as fast as the server answers);
#   sessions: weft-load, sessions of 1..5 calls at RATE sessions/s (below saturation: every
#             server answers all of them), Zipf s = 1 over the generated "small" set.
# For each server and load it prints requests (replies) per server CPU-second, the server's
# CPU per connection split into user and system time, and the system calls and context
# switches of the server per connection (perf stat of its threads; context switches also from
# /proc), then the medians over rounds and the weft/peer ratios of requests per CPU-second.
# Usage (root, for perf): scripts/bench/conn_bench.sh [SECONDS] [ROUNDS] [RATE] [LOADS]
#   LOADS: "close sessions" (default), or one of them. SERVERS="weft nginx" picks servers
#   (also nginx-deferred: NGINX with `listen ... deferred`, TCP_DEFER_ACCEPT).
#   WEFT=BINARY: another weft build; WEFT_SERVER='TOML lines' added to weft's [server] section
#   and WEFT_EXTRA='TOML lines' (whole sections) appended to its configuration (printf %b);
#   WEFT_B=BINARY adds a second weft ("weft-b", io_uring, or WEFT_B_BACKEND) for an A/B, with
#   WEFT_B_SERVER as its [server] lines instead of WEFT_SERVER's. WEFT_FD_CACHE / WEFT_B_FD_CACHE: lines for
#   the [fd_cache] section the same way (e.g. 'valid = "5s"', the staleness NGINX is given).
# Needs build/release and www-fixtures/generated/small (www-fixtures/generate.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/peers_lib.sh
source scripts/bench/peers_lib.sh
secs=${1:-5}
rounds=${2:-3}
rate=${3:-1200}
loads=${4:-close sessions}
weft=${WEFT:-$PWD/build/release/server/weft}
load=$PWD/build/release/loadgen/weft-load
small=$PWD/www-fixtures/generated/small
[[ -x $weft && -x $load ]] || scripts/build.sh release
[[ -f $small/MANIFEST ]] || python3 www-fixtures/generate.py --preset small
servers=${SERVERS:-weft weft-epoll nginx h2o lighttpd}
[[ -n ${WEFT_B:-} ]] && servers="$servers weft-b"

work=$(mktemp -d /tmp/weft-connbench-XXXXXX)
chmod 755 "$work"  # peers that drop privileges read the files through it
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.3; rm -rf "$work"' EXIT
root=$work/www
cp -r "$small" "$root"
head -c 100 /dev/urandom | base64 -w0 | head -c 100 > "$root/100.txt"
chmod -R a+rX "$root"
mkdir -p "$work/logs" && chmod 1777 "$work/logs"

declare -A port=([weft]=18291 [weft-epoll]=18292 [nginx]=18293 [h2o]=18294 [lighttpd]=18295
                 [weft-b]=18296 [nginx-deferred]=18297)
weft_conf() {  # port backend [server]-lines
  cat <<CONF
[server]
listen = ["127.0.0.1:$1"]
root = "$root"
backlog = 4096
$(printf '%b' "$3")
[runtime]
processors = 1
[io]
backend = "$2"
[limits]
max_connections = 4000
[fd_cache]
max_entries = 3000
$(printf '%b' "$4")
[log]
level = "warn"
error_log = "$work/logs/weft-$1.log"
access_log = "off"
$(printf '%b' "${WEFT_EXTRA:-}")
CONF
}
weft_conf "${port[weft]}" io_uring "${WEFT_SERVER:-}" "${WEFT_FD_CACHE:-}" > "$work/weft.toml"
weft_conf "${port[weft-epoll]}" epoll "${WEFT_SERVER:-}" "${WEFT_FD_CACHE:-}" > "$work/weft-epoll.toml"
weft_conf "${port[weft-b]}" "${WEFT_B_BACKEND:-io_uring}" "${WEFT_B_SERVER-${WEFT_SERVER:-}}" \
  "${WEFT_B_FD_CACHE-${WEFT_FD_CACHE:-}}" > "$work/weft-b.toml"
mkdir -p "$work/nginx"
cat > "$work/nginx/nginx.conf" <<CONF
user nobody nogroup; daemon off; worker_processes 1; pid $work/nginx/nginx.pid;
error_log $work/logs/nginx-error.log; worker_rlimit_nofile 20000;
events { worker_connections 10000; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000;
  open_file_cache max=3000 inactive=60s; open_file_cache_valid 5s; open_file_cache_errors on;
  client_body_temp_path $work/nginx/cb; proxy_temp_path $work/nginx/px;
  fastcgi_temp_path $work/nginx/fc; uwsgi_temp_path $work/nginx/uw; scgi_temp_path $work/nginx/sc;
  include /etc/nginx/mime.types;
  server { listen 127.0.0.1:${port[nginx]} backlog=4096; root $root; }
}
CONF
# nginx-deferred: the same with `deferred` (TCP_DEFER_ACCEPT), as weft's server.defer_accept.
mkdir -p "$work/nginx-deferred"
sed -e "s|$work/nginx/|$work/nginx-deferred/|g" -e "s|nginx-error.log|nginx-deferred-error.log|" \
  -e "s|listen 127.0.0.1:${port[nginx]} backlog=4096|listen 127.0.0.1:${port[nginx-deferred]} backlog=4096 deferred|" \
  "$work/nginx/nginx.conf" > "$work/nginx-deferred/nginx.conf"
h2o_conf "${port[h2o]}" "$root" "$work/logs" > "$work/h2o.conf"
cat > "$work/lighttpd.conf" <<CONF
server.document-root = "$root"
server.bind = "127.0.0.1"
server.port = ${port[lighttpd]}
server.username = "nobody"
server.groupname = "nogroup"
server.max-fds = 16384
server.listen-backlog = 4096
server.errorlog = "$work/logs/lighttpd-error.log"
include_shell "/usr/share/lighttpd/create-mime.conf.pl"
CONF

ulimit -n 20000
for s in $servers; do
  case $s in
    weft) taskset -c 0 "$weft" -c "$work/weft.toml" & ;;
    weft-epoll) taskset -c 0 "$weft" -c "$work/weft-epoll.toml" & ;;
    weft-b) taskset -c 0 "$WEFT_B" -c "$work/weft-b.toml" & ;;
    nginx) taskset -c 0 nginx -p "$work/nginx" -e "$work/logs/nginx-error.log" \
             -c "$work/nginx/nginx.conf" & ;;
    nginx-deferred) taskset -c 0 nginx -p "$work/nginx-deferred" \
             -e "$work/logs/nginx-deferred-error.log" -c "$work/nginx-deferred/nginx.conf" & ;;
    h2o) taskset -c 0 h2o -c "$work/h2o.conf" >/dev/null 2>&1 & ;;
    lighttpd) taskset -c 0 lighttpd -D -f "$work/lighttpd.conf" & ;;
  esac
done
sleep 1.5

ctxsw() {  # voluntary + involuntary context switches of every thread of process $1
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^(non)?voluntary_ctxt_switches/{n += $2} END {print n + 0}'
}
cputimes() { awk '{print $14, $15}' "/proc/$1/stat"; }  # utime stime, in clock ticks

results=$work/results.txt
: > "$results"
run_one() {  # round load server
  local r=$1 ld=$2 s=$3 p=${port[$3]} pid n conns
  pid=$(server_pid "$p")
  [[ -n $pid ]] || { echo "$s is not running" >&2; return; }
  read -r u0 k0 < <(cputimes "$pid")
  c0=$(ctxsw "$pid")
  perf stat -e raw_syscalls:sys_enter -p "$pid" -x, -o "$work/perf.txt" -- sleep "$secs" \
    >/dev/null 2>&1 &
  local perf_pid=$!
  if [[ $ld == close ]]; then
    out=$(taskset -c 1 wrk -t1 -c50 -d"${secs}s" -H 'Connection: close' \
      "http://127.0.0.1:$p/100.txt")
    n=$(awk '/requests in/{print $1}' <<<"$out")
    conns=$n
  else
    taskset -c 1 "$load" --server 127.0.0.1 --port "$p" --zipf 1.0 --files "$root/MANIFEST" \
      --num-calls 1..5 --rate "$rate" --duration "$secs" --timeout 2 --seed "$r" --threads 1 \
      --json "$work/load.json" --quiet
    read -r n conns < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); j = j[0] if isinstance(j, list) else j
print(j["replies"]["total"], j["connections"]["total"] if isinstance(j["connections"], dict) else j["connections"])' "$work/load.json")
  fi
  wait "$perf_pid" || true
  read -r u1 k1 < <(cputimes "$pid")
  c1=$(ctxsw "$pid")
  sys=$(awk -F, '/raw_syscalls/{print $1}' "$work/perf.txt")
  echo "$r $ld $s $n $conns $((u1 - u0)) $((k1 - k0)) $((c1 - c0)) ${sys:-0}" >> "$results"
  python3 - "$r" "$ld" "$s" "$n" "$conns" "$((u1 - u0))" "$((k1 - k0))" "$((c1 - c0))" \
    "${sys:-0}" "$secs" <<'PY'
import os, sys
r, ld, s, n, conns, ut, kt, cs, sc, secs = sys.argv[1:]
hz = os.sysconf("SC_CLK_TCK"); n, conns = int(n), max(int(conns), 1)
cpu = (int(ut) + int(kt)) / hz
print("round %s %-8s %-10s %8.0f req/s %9.0f req/cpu-s  us/conn user %5.1f sys %5.1f  "
      "syscalls/conn %5.2f  ctxsw/conn %5.2f" % (r, ld, s, n / float(secs), n / max(cpu, 0.01),
      int(ut) / hz * 1e6 / conns, int(kt) / hz * 1e6 / conns, int(sc) / conns, int(cs) / conns))
PY
}
for r in $(seq "$rounds"); do
  for ld in $loads; do
    for s in $servers; do run_one "$r" "$ld" "$s"; done
  done
done

python3 - "$results" "$servers" "$loads" <<'PY'
import os, statistics, sys
hz = os.sysconf("SC_CLK_TCK")
rows = [l.split() for l in open(sys.argv[1])]
servers, loads = sys.argv[2].split(), sys.argv[3].split()
print("\nmedians over rounds: req per CPU-second; per connection: user us, sys us, system calls, "
      "context switches; weft/peer ratio of req per CPU-second")
for ld in loads:
    med = {}
    for s in servers:
        rs = [r for r in rows if r[1] == ld and r[2] == s]
        if not rs: continue
        def m(f): return statistics.median(f(r) for r in rs)
        conns = lambda r: max(int(r[4]), 1)
        med[s] = (m(lambda r: int(r[3]) / max((int(r[5]) + int(r[6])) / hz, 0.01)),
                  m(lambda r: int(r[5]) / hz * 1e6 / conns(r)),
                  m(lambda r: int(r[6]) / hz * 1e6 / conns(r)),
                  m(lambda r: int(r[8]) / conns(r)), m(lambda r: int(r[7]) / conns(r)))
    for s, (eff, ut, kt, sc, cs) in med.items():
        ratios = "  ".join("%s/%s %.2fx" % (s, p, eff / med[p][0])
                           for p in ("nginx", "nginx-deferred")
                           if s.startswith("weft") and p in med)
        print("%-8s %-10s %9.0f  user %5.1f  sys %5.1f  syscalls %5.2f  ctxsw %5.2f  %s"
              % (ld, s, eff, ut, kt, sc, cs, ratios))
PY
