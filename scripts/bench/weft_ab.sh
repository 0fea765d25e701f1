#!/usr/bin/env bash
# A/B benchmark of two weft configurations in the same run, alternating: the server pinned
# to core 0, wrk (1 thread, 50 connections, keep-alive) on core 1. Reports requests/s and
# requests per server CPU-second for each file and configuration, medians over rounds.
# Usage: scripts/bench/weft_ab.sh SECONDS ROUNDS "A_LABEL" "A_TOML" "B_LABEL" "B_TOML" [FILES...]
#   A_TOML/B_TOML are extra TOML text (whole sections) appended to each configuration; the
#   [server] section is generated, so use WEFT_REUSEPORT_A/B=true|false for server.reuseport,
#   WEFT_PROCESSORS for runtime.processors (default 1), WEFT_RUNTIME_A/B for more lines of
#   each side's [runtime] section (e.g. 'pool_idle = "0s"'), WEFT_MAX_CONNECTIONS for
#   limits.max_connections (default 1000: with the default 10000 the descriptor budget
#   shrinks the fd cache, to 16 entries with splice, which reserves a pipe per connection),
#   and WEFT_A/WEFT_B for the binary of each side (default build/release's: an A/B of two
#   builds with the same TOML).
# Example: scripts/bench/weft_ab.sh 5 3 sendfile $'[io]\nbody = "sendfile"' splice $'[io]\nbody = "splice"'
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=$1 rounds=$2 la=$3 ta=$4 lb=$5 tb=$6
shift 6
files=("${@:-64k.bin}")
weft=$PWD/build/release/server/weft
work=$(mktemp -d /tmp/weft-ab-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.2; rm -rf "$work"' EXIT
root=$work/www
mkdir -p "$root"
head -c 100 /dev/urandom | base64 -w0 | head -c 100 > "$root/100.txt"
head -c 65536 /dev/urandom > "$root/64k.bin"
head -c 1048576 /dev/urandom > "$root/1m.bin"
mk() {  # label port reuseport extra binary runtime-lines
  cat > "$work/$1.toml" <<CONF
[server]
listen = ["127.0.0.1:$2"]
root = "$root"
reuseport = $3
[runtime]
processors = ${WEFT_PROCESSORS:-1}
$6
[limits]
max_requests_per_connection = 1000000
max_connections = ${WEFT_MAX_CONNECTIONS:-1000}
[log]
level = "warn"
$4
CONF
  taskset -c 0 "$5" -c "$work/$1.toml" &
}
mk a 18291 "${WEFT_REUSEPORT_A:-true}" "$ta" "${WEFT_A:-$weft}" "${WEFT_RUNTIME_A:-}"
mk b 18292 "${WEFT_REUSEPORT_B:-true}" "$tb" "${WEFT_B:-$weft}" "${WEFT_RUNTIME_B:-}"
sleep 1
pid_of() { ss -ltnp "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
res=$work/res
: > "$res"
for r in $(seq "$rounds"); do
  for f in "${files[@]}"; do
    for side in a b; do
      port=$([[ $side == a ]] && echo 18291 || echo 18292)
      pid=$(pid_of $port)
      t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
      out=$(taskset -c 1 wrk -t1 -c50 -d"${secs}s" "http://127.0.0.1:$port/$f")
      t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
      n=$(echo "$out" | awk '/requests in/{print $1}')
      rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
      echo "$f $side $rps $n $(python3 -c "print(($t1-$t0)/100)")" >> "$res"
    done
  done
done
python3 - "$res" "$la" "$lb" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
label = {"a": sys.argv[2], "b": sys.argv[3]}
for f in sorted({r[0] for r in rows}):
    eff = {}
    for side in ("a", "b"):
        rs = [r for r in rows if r[0] == f and r[1] == side]
        rps = statistics.median(float(r[2]) for r in rs)
        eff[side] = statistics.median(int(r[3]) / max(float(r[4]), 0.01) for r in rs)
        print("%-8s %-10s %9.0f req/s %9.0f req/cpu-s" % (f, label[side], rps, eff[side]))
    print("%-8s %s/%s = %.2fx per CPU-second" % (f, label["a"], label["b"], eff["a"] / eff["b"]))
PY
