#!/usr/bin/env bash
# Keep-alive benchmark of weft against NGINX, H2O and lighttpd (Debian's packages), each
# server pinned to core 0 with one worker/thread, wrk (1 thread, 50 connections) on core 1,
# same files, same run, servers alternated per round. For a 100-byte and a 64 KiB file it
# prints requests/s, p99 latency, and requests per server CPU-second (utime+stime of the
# server process from /proc over the run), then the weft/peer ratios (medians over rounds).
# Usage: scripts/bench/server_bench.sh [SECONDS_PER_RUN] [ROUNDS] [weft extra TOML lines...]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/peers_lib.sh
source scripts/bench/peers_lib.sh
secs="${1:-5}"
rounds="${2:-3}"
shift 2 || true
weft=${WEFT:-$PWD/build/release/server/weft}  # WEFT=path: another build
[[ -x $weft ]] || scripts/build.sh release
work=$(mktemp -d /tmp/weft-srvbench-XXXXXX)
chmod 1777 "$work"  # peers that drop privileges write their logs here
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.2; rm -rf "$work"' EXIT
root=$work/www
mkdir -p "$root"
head -c 100 /dev/urandom | base64 -w0 | head -c 100 > "$root/100.txt"
head -c 65536 /dev/urandom > "$root/64k.bin"
chmod -R a+rX "$root"

cat > "$work/weft.toml" <<CONF
[server]
listen = ["127.0.0.1:18281"]
root = "$root"
[runtime]
processors = 1
[limits]
max_requests_per_connection = 1000000
[log]
level = "warn"
$(printf '%s\n' "$@")
CONF
mkdir -p "$work/nginx"
cat > "$work/nginx/nginx.conf" <<CONF
daemon off; worker_processes 1; pid $work/nginx/nginx.pid; error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;
  client_body_temp_path $work/nginx/cb; proxy_temp_path $work/nginx/px;
  fastcgi_temp_path $work/nginx/fc; uwsgi_temp_path $work/nginx/uw; scgi_temp_path $work/nginx/sc;
  types { text/plain txt; application/octet-stream bin; }
  server { listen 127.0.0.1:18282; root $root; }
}
CONF
h2o_conf 18283 "$root" "$work" > "$work/h2o.conf"
cat > "$work/lighttpd.conf" <<CONF
server.document-root = "$root"
server.bind = "127.0.0.1"
server.port = 18284
server.username = "nobody"
server.groupname = "nogroup"
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 60
server.errorlog = "$work/lighttpd-error.log"
mimetype.assign = (".txt" => "text/plain", ".bin" => "application/octet-stream")
CONF

taskset -c 0 "$weft" -c "$work/weft.toml" &
taskset -c 0 nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
taskset -c 0 h2o -c "$work/h2o.conf" >/dev/null 2>&1 &
taskset -c 0 lighttpd -D -f "$work/lighttpd.conf" &
sleep 1.5

declare -A port=([weft]=18281 [nginx]=18282 [h2o]=18283 [lighttpd]=18284)
results=$work/results.txt
: > "$results"
for r in $(seq "$rounds"); do
  for file in 100.txt 64k.bin; do
    for s in weft nginx h2o lighttpd; do
      p=${port[$s]}
      pid=$(server_pid "$p")
      [[ -n $pid ]] || { echo "$s is not running" >&2; continue; }
      t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
      out=$(taskset -c 1 wrk -t1 -c50 -d"${secs}s" --latency "http://127.0.0.1:$p/$file")
      t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
      n=$(echo "$out" | awk '/requests in/{print $1}')
      rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
      p99=$(echo "$out" | awk '$1=="99%"{print $2}')
      cpu=$(python3 -c "print(($t1-$t0)/100)")
      echo "$r $file $s $rps $p99 $cpu $n" >> "$results"
      printf 'round %s %-8s %-9s %9.0f req/s  p99 %-8s cpu %5.2fs  %7.0f req/cpu-s\n' \
        "$r" "$file" "$s" "$rps" "$p99" "$cpu" "$(python3 -c "print($n/max($cpu,0.01))")"
    done
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def unit(v):
    for suf, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if v.endswith(suf): return float(v[:-len(suf)]) * f
    return float(v)
med = {}
for file in ("100.txt", "64k.bin"):
    for s in ("weft", "nginx", "h2o", "lighttpd"):
        rs = [r for r in rows if r[1] == file and r[2] == s]
        if not rs: continue
        med[file, s] = (statistics.median(float(r[3]) for r in rs),
                        statistics.median(unit(r[4]) for r in rs),
                        statistics.median(int(r[6]) / max(float(r[5]), 0.01) for r in rs))
print("\nmedians: req/s, p99 ms, req per CPU-second; weft/peer ratios of req per CPU-second")
for (file, s), (rps, p99, eff) in med.items():
    ratio = ""
    if s != "weft" and (file, "weft") in med:
        ratio = "  weft/%s = %.2fx" % (s, med[file, "weft"][2] / eff)
    print("%-8s %-9s %9.0f  %7.3f ms  %9.0f%s" % (file, s, rps, p99, eff, ratio))
PY
