#!/usr/bin/env bash
# HTTPS benchmark of weft against NGINX (Debian's, linking the same OpenSSL 3), each server
# pinned to core 0 with one worker/processor, wrk (1 thread, 50 connections) on core 1, the
# same ECDSA P-256 certificate, X25519 the only key-exchange group, TLS 1.3, servers alternated
# in every round. Three loads:
#   handshake: `wrk -H 'Connection: close'` on a 100-byte file: a full TLS 1.3 handshake per
#              request (wrk keeps no session to resume), so requests per server CPU-second are
#              handshakes per server CPU-second;
#   ka-100:    keep-alive requests for the 100-byte file over TLS;
#   ka-64k:    the same for a 64 KiB file;
#   h2-100:    HTTP/2 (ALPN h2) for the 100-byte file with h2load on core 1 instead of wrk:
#              -c 10 -m 32 (ten connections, 32 streams each; issue 44). NGINX serves it with
#              `listen ... ssl http2` and keepalive_requests raised (its default ends a
#              connection after 1,000 streams, which h2load does not reconnect).
#   h2-64k:    HTTP/2, the 64 KiB file, h2load -c 10 -m 8;
#   h2-page:   HTTP/2, a page of 60 files of 1-100 KB (html, css, js, images; sizes
#              log-uniform, fixed seed), h2load -c 10 -m 32 cycling through the 60 URIs.
# It prints requests/s and requests per server CPU-second (utime+stime of the server process
# from /proc) per round, then medians and the weft/NGINX ratios.
# Usage: scripts/bench/tls_bench.sh [SECONDS] [ROUNDS] [LOADS]
#   LOADS: "handshake ka-100 ka-64k" (default), a subset, or with h2-100 h2-64k h2-page.
#   SERVERS="weft weft-epoll nginx" (default) picks servers, h2o among them for H2O 2.2.5 (one
#   thread, the same certificate); WEFT=BINARY another weft build; WEFT_B=BINARY adds "weft-b",
#   WEFT_B_SET="runtime.spin=0;io.backend=\"epoll\"" gives it other settings.
#   CAP=FRACTION puts each server in a cgroup v1 cpu group of its own capped at that share of a
#   core (e.g. 0.3), so that one client core saturates it: a handshake costs the client about
#   what it costs the server, and a server below saturation spends CPU waiting (weft's idle
#   spin) that a saturated one does not. As root.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/peers_lib.sh
source scripts/bench/peers_lib.sh
secs=${1:-5}
rounds=${2:-3}
loads=${3:-handshake ka-100 ka-64k}
weft=${WEFT:-$PWD/build/release/server/weft}
[[ -x $weft ]] || scripts/build.sh release
servers=${SERVERS:-weft weft-epoll nginx}
[[ -n ${WEFT_B:-} ]] && servers="$servers weft-b"

work=$(mktemp -d /tmp/weft-tlsbench-XXXXXX)
chmod 755 "$work"  # NGINX's workers (nobody) read the files and the key through it
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.3; rm -rf "$work"' EXIT
root=$work/www
mkdir -p "$root" "$work/logs" && chmod 1777 "$work/logs"
head -c 100 /dev/urandom | base64 -w0 | head -c 100 > "$root/100.txt"
head -c 65536 /dev/urandom > "$root/64k.bin"
make_page "$root/page" > "$work/page-uris.txt"
chmod -R a+rX "$root"
# The certificate of the issue's targets: ECDSA P-256, self-signed, for 127.0.0.1.
make_cert 127.0.0.1 "$work"

declare -A port=([weft]=18301 [weft-epoll]=18302 [nginx]=18303 [weft-b]=18304 [h2o]=18305)
weft_conf() {  # port backend
  weft_tls_conf 127.0.0.1 "$1" "$2" "$root" "$work"
}
weft_conf "${port[weft]}" io_uring > "$work/weft.toml"
weft_conf "${port[weft-epoll]}" epoll > "$work/weft-epoll.toml"
weft_conf "${port[weft-b]}" io_uring > "$work/weft-b.toml"
# WEFT_B_SET="section.key=value;...": weft-b's settings that differ (an A/B of one setting
# with WEFT_B=the same binary), each put under its section's header.
IFS=';' read -ra sets <<<"${WEFT_B_SET:-}"
for kv in "${sets[@]}"; do
  section=${kv%%.*} rest=${kv#*.}
  sed -i "/^${rest%%=*} = /d" "$work/weft-b.toml"  # keys are unique across this file's tables
  grep -q "^\[$section\]" "$work/weft-b.toml" || printf '[%s]\n' "$section" >> "$work/weft-b.toml"
  sed -i "/^\[$section\]/a ${rest%%=*} = ${rest#*=}" "$work/weft-b.toml"
done
mkdir -p "$work/nginx"
nginx_tls_conf 127.0.0.1 "${port[nginx]}" "$root" "$work" > "$work/nginx/nginx.conf"
h2o_tls_conf 127.0.0.1 "${port[h2o]}" "$root" "$work" > "$work/h2o.conf"

groups=()
capped() {  # server command...: runs it on core 0, in a capped group of its own with CAP
  if [[ -z ${CAP:-} ]]; then
    taskset -c 0 "${@:2}" &
    return
  fi
  local g=/sys/fs/cgroup/cpu/weft-tls-$$-$1
  mkdir "$g" && groups+=("$g")
  echo 10000 > "$g/cpu.cfs_period_us"
  local quota; quota=$(awk -v c="$CAP" 'BEGIN {printf "%d", 10000 * c}')
  echo "$quota" > "$g/cpu.cfs_quota_us"
  # The shell joins the group and becomes the server: its children (NGINX's worker) inherit it.
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec taskset -c 0 "$@"' sh "$g" "${@:2}" &
}
# After the servers stopped, their groups are empty and can go.
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.5; rmdir "${groups[@]}" 2>/dev/null;
      rm -rf "$work"' EXIT

ulimit -n 20000
for s in $servers; do
  case $s in
    weft) capped "$s" "$weft" -c "$work/weft.toml" ;;
    weft-epoll) capped "$s" "$weft" -c "$work/weft-epoll.toml" ;;
    weft-b) capped "$s" "$WEFT_B" -c "$work/weft-b.toml" ;;
    nginx) capped "$s" nginx -p "$work/nginx" -e "$work/logs/nginx-error.log" \
             -c "$work/nginx/nginx.conf" ;;
    h2o) capped "$s" h2o -c "$work/h2o.conf" ;;
  esac
done
sleep 1.5

results=$work/results.txt
: > "$results"
run_one() {  # round load server
  local r=$1 ld=$2 s=$3 p=${port[$3]} pid file=100.txt out n t0 t1
  pid=$(server_pid "$p")
  [[ -n $pid ]] || { echo "$s is not running" >&2; return; }
  local args=(-t1 -c50 -d"${secs}s")
  [[ $ld == handshake ]] && args+=(-H 'Connection: close')
  [[ $ld == ka-64k ]] && file=64k.bin
  t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  if [[ $ld == h2-* ]]; then
    local h2=(-c 10 -m 32 -D "$secs")
    case $ld in
      h2-64k) h2=(-c 10 -m 8 -D "$secs" "https://127.0.0.1:$p/64k.bin") ;;
      h2-page) h2+=(-B "https://127.0.0.1:$p" -i "$work/page-uris.txt") ;;
      *) h2+=("https://127.0.0.1:$p/$file") ;;
    esac
    out=$(taskset -c 1 h2load "${h2[@]}")
    n=$(awk '/^requests:/{print $8}' <<<"$out")
    grep -q ' 0 failed' <<<"$out" || echo "$s $ld: $(grep '^requests:' <<<"$out")" >&2
  else
    out=$(taskset -c 1 wrk "${args[@]}" "https://127.0.0.1:$p/$file")
    n=$(awk '/requests in/{print $1}' <<<"$out")
    if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
      echo "$s $ld: $(grep 'Non-2xx\|Socket errors' <<<"$out")" >&2
    fi
  fi
  t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  echo "$r $ld $s $n $((t1 - t0))" >> "$results"
  python3 -c "
import os, sys
n, ticks = int(sys.argv[4]), int(sys.argv[5]); cpu = ticks / os.sysconf('SC_CLK_TCK')
print('round %s %-9s %-10s %8.0f req/s %9.0f req/cpu-s' % (sys.argv[1], sys.argv[2],
      sys.argv[3], n / float(sys.argv[6]), n / max(cpu, 0.01)))" "$r" "$ld" "$s" "$n" \
    "$((t1 - t0))" "$secs"
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
print("\nmedians over rounds: requests per server CPU-second; weft/NGINX ratio")
for ld in loads:
    med = {}
    for s in servers:
        rs = [r for r in rows if r[1] == ld and r[2] == s]
        if rs:
            med[s] = statistics.median(int(r[3]) / max(int(r[4]) / hz, 0.01) for r in rs)
    for s, eff in med.items():
        ratio = ("  %s/nginx %.2fx" % (s, eff / med["nginx"])
                 if s.startswith("weft") and "nginx" in med else "")
        print("%-9s %-10s %9.0f%s" % (ld, s, eff, ratio))
PY
