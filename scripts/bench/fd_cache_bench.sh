#!/usr/bin/env bash
# The fd cache benchmark: Zipfian requests (s=1) over 10k small files, weft with its fd cache
# on and off against NGINX with open_file_cache on and off, same files, same cores, same run,
# alternating. Each server gets core 0, wrk (one thread, 50 connections) core 1.
# Prints requests/s and requests per server CPU-second for each, and the ratios.
# Usage: scripts/bench/fd_cache_bench.sh [SECONDS_PER_RUN] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs="${1:-8}"
rounds="${2:-3}"
weft=build/release/server/weft
[[ -x $weft ]] || scripts/build.sh release
work=$(mktemp -d /tmp/weft-fdbench-XXXXXX)
chmod 755 "$work"  # NGINX workers run as another user and must reach the files
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
root=$work/files
python3 www-fixtures/generate.py --files 10000 --total-bytes 20M --max-size 64k --out "$root" >/dev/null
manifest=$root/MANIFEST

start_nginx() {  # $1 = on|off
  local d=$work/nginx-$1
  mkdir -p "$d"
  local cache="open_file_cache max=20000 inactive=60s; open_file_cache_valid 5s; open_file_cache_errors on;"
  [[ $1 == off ]] && cache="open_file_cache off;"
  cat > "$d/nginx.conf" <<CONF
daemon off; worker_processes 1; pid $d/nginx.pid; error_log $d/error.log;
events { worker_connections 4096; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  $cache
  client_body_temp_path $d/cb; proxy_temp_path $d/px; fastcgi_temp_path $d/fc;
  uwsgi_temp_path $d/uw; scgi_temp_path $d/sc;
  include /etc/nginx/mime.types;
  server { listen 127.0.0.1:$2; root $root; }
}
CONF
  taskset -c 0 nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" &
}

start_weft() {  # $1 = on|off, $2 = port
  cat > "$work/weft-$1.toml" <<CONF
[server]
listen = ["127.0.0.1:$2"]
root = "$root"
[runtime]
processors = 1
[limits]
max_requests_per_connection = 1000000
[fd_cache]
enabled = $([[ $1 == on ]] && echo true || echo false)
max_entries = 20000
[log]
level = "warn"
CONF
  taskset -c 0 "$weft" -c "$work/weft-$1.toml" &
}

server_pid() { # the process serving port $1 (NGINX: its worker)
  local p
  p=$(ss -ltnp "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
  echo "$p"
}

measure() {  # $1 = label, $2 = port -> "label rps cpu_s req_per_cpu_s"
  local pid; pid=$(server_pid "$2")
  local t0; t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  local out; out=$(taskset -c 1 wrk -t1 -c50 -d"${secs}s" -s scripts/bench/zipf.lua "http://127.0.0.1:$2" -- "$manifest" 1.0)
  local t1; t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  local n; n=$(echo "$out" | awk '/requests in/{print $1}')
  local rps; rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  local non2xx; non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  python3 -c "import sys; c=($t1-$t0)/100; print('%-14s %10.0f req/s  cpu %5.2f s  %8.0f req/cpu-s  non-2xx %s' % ('$1', $rps, c, $n/c if c else 0, '${non2xx:-0}'))"
}

start_nginx on 18181; start_nginx off 18182; start_weft on 18183; start_weft off 18184
sleep 1
for r in $(seq "$rounds"); do
  echo "== round $r"
  measure "nginx-cache" 18181; measure "weft-cache" 18183
  measure "nginx-nocache" 18182; measure "weft-nocache" 18184
done
