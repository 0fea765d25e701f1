#!/usr/bin/env bash
# Compression on the fly (issue 45): a generated ~200 KB JavaScript file, clients sending
# "Accept-Encoding: gzip, br, zstd", keep-alive, wrk (1 thread, 10 connections) on core 1,
# each server on core 0 with one worker/processor: weft (its default [compression]: each
# coding made once, the smallest sent, then served from its cache) against NGINX (`gzip on;
# gzip_comp_level 1`, compressing every response), and weft's identity response (no Accept-Encoding) as its own
# reference. Servers alternated per round. Prints requests/s, requests per server CPU-second
# (utime+stime of the server process, all its threads, from /proc), bytes per response, then
# the medians and the ratios weft/NGINX and weft coded/weft identity.
# Usage: scripts/bench/compression_bench.sh [SECONDS_PER_RUN] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/peers_lib.sh
source scripts/bench/peers_lib.sh
secs="${1:-5}"
rounds="${2:-3}"
weft=${WEFT:-$PWD/build/release/server/weft}  # WEFT=path: another build
[[ -x $weft ]] || scripts/build.sh release
work=$(mktemp -d /tmp/weft-compbench-XXXXXX)
chmod 1777 "$work"
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.2; rm -rf "$work"' EXIT
root=$work/www
mkdir -p "$root"
python3 - "$root/app.js" <<'PY'
import random, sys
rnd = random.Random(45)
words = ["value", "index", "result", "element", "options", "callback", "state", "render"]
out = []
while sum(map(len, out)) < 200_000:
    a, b = rnd.choice(words), rnd.choice(words)
    out.append("export function %s_%d(%s, %s) { if (%s > %d) { return %s.map((x) => x * %d); }"
               " return [%s, %d]; }\n" % (a, rnd.randrange(10000), a, b, a, rnd.randrange(1000),
                                          b, rnd.randrange(100), b, rnd.randrange(1000)))
open(sys.argv[1], "w").write("".join(out))
PY
touch -d '1 hour ago' "$root/app.js"  # an old mtime: weft compresses only settled files
chmod -R a+rX "$root"

cat > "$work/weft.toml" <<CONF
[server]
listen = ["127.0.0.1:18291"]
root = "$root"
[runtime]
processors = 1
[limits]
max_requests_per_connection = 1000000
[log]
level = "warn"
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
  types { application/javascript js; }
  gzip on; gzip_comp_level 1; gzip_types application/javascript; gzip_vary on;
  server { listen 127.0.0.1:18292; root $root; }
}
CONF
taskset -c 0 "$weft" -c "$work/weft.toml" &
taskset -c 0 nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
sleep 1.5

ae="Accept-Encoding: gzip, br, zstd"
# Until weft has made each coding (one request starts one; bounded: 200 tries each); then it
# answers $ae with the smallest (compression.prefer_smallest, its default).
for c in zstd br gzip; do
  for _ in $(seq 200); do
    curl -sI -H "Accept-Encoding: $c" http://127.0.0.1:18291/app.js |
      grep -qi "^content-encoding: $c" && break
    sleep 0.1
  done
done
coding=$(curl -sI -H "$ae" http://127.0.0.1:18291/app.js |
  awk -F': ' 'tolower($1)=="content-encoding"{print $2}' | tr -d '\r')
[[ -n $coding ]] || { echo "weft never sent a coding" >&2; exit 1; }
bytes() { curl -s -H "$2" "http://127.0.0.1:$1/app.js" | wc -c; }
echo "file $(wc -c < "$root/app.js") B; weft $coding $(bytes 18291 "$ae") B;" \
     "NGINX gzip -1 $(bytes 18292 "$ae") B"

results=$work/results.txt
: > "$results"
for r in $(seq "$rounds"); do
  for s in weft nginx weft-identity; do
    case $s in
      weft) p=18291; hdr=$ae ;;
      nginx) p=18292; hdr=$ae ;;
      weft-identity) p=18291; hdr="X-No-Coding: 1" ;;
    esac
    pid=$(server_pid "$p")
    t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
    out=$(taskset -c 1 wrk -t1 -c10 -d"${secs}s" -H "$hdr" "http://127.0.0.1:$p/app.js")
    t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
    n=$(echo "$out" | awk '/requests in/{print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    cpu=$(python3 -c "print(($t1-$t0)/$(getconf CLK_TCK))")
    echo "$r $s $rps $cpu $n" >> "$results"
    printf 'round %s %-14s %9.0f req/s  cpu %5.2fs  %8.0f req/cpu-s\n' \
      "$r" "$s" "$rps" "$cpu" "$(python3 -c "print($n/max($cpu,0.01))")"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for s in ("weft", "nginx", "weft-identity"):
    rs = [r for r in rows if r[1] == s]
    med[s] = (statistics.median(float(r[2]) for r in rs),
              statistics.median(int(r[4]) / max(float(r[3]), 0.01) for r in rs))
print("\nmedians: req/s, req per server CPU-second")
for s, (rps, eff) in med.items():
    print("%-14s %9.0f %10.0f" % (s, rps, eff))
print("weft/NGINX (req per CPU-second): %.1fx" % (med["weft"][1] / med["nginx"][1]))
print("weft coded/weft identity (req per CPU-second): %.2fx"
      % (med["weft"][1] / med["weft-identity"][1]))
PY
