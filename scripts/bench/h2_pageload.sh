#!/usr/bin/env bash
# A page load over HTTP/2 on a link with a delay (issue 44's last target): weft, NGINX and
# H2O in a network namespace this script makes, each serving a page of 60 files of 1-100 KB
# (tls_bench.sh's h2-page files) over TLS 1.3; the client, in a second namespace at the
# other end of a veth pair, loads the page as a browser does over HTTP/2: one connection,
# its TLS handshake, 60 concurrent streams (`h2load -c 1 -m 60 -n 60`), and the time to the
# last byte is h2load's "finished in". Servers alternated in every round, the order reversed
# every other round; medians.
#
# The delay: this VM's kernel has no netem (nor any delaying qdisc), so every packet that
# arrives on either end of the pair goes through iptables' NFQUEUE target to nfq_delay.py,
# which holds it DELAY_MS (one way; the round trip is twice it). On arrival, not on the way
# out: a packet held before it leaves counts against its sender's TCP small-queue budget
# and throttled a 1 MB transfer to 4.5 Mbit/s (1.8 s instead of 0.19 s). Unlike netem it
# runs in user space: a packet waits a little more than DELAY_MS when the CPU is busy (the
# same for every server, alternated). As root; installs iptables when missing.
# Usage: scripts/bench/h2_pageload.sh [ROUNDS] [DELAY_MS]
#   SERVERS="weft nginx h2o" (default); WEFT=BINARY another weft build.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/bench/peers_lib.sh
source scripts/bench/peers_lib.sh
rounds=${1:-10}
delay=${2:-10}
weft=${WEFT:-$PWD/build/release/server/weft}
[[ -x $weft ]] || scripts/build.sh release
servers=${SERVERS:-weft nginx h2o}
command -v iptables-legacy >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q iptables >/dev/null

ns=weft-pageload-$$      # the servers'
cns=weft-pageclient-$$  # the client's
host=10.200.0.2
work=$(mktemp -d /tmp/weft-pageload-XXXXXX)
chmod 755 "$work"
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  for n in "$ns" "$cns"; do ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null || true; done
  sleep 0.5
  ip netns del "$ns" 2>/dev/null || true  # the pair goes with it
  ip netns del "$cns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The link: a veth pair between the two namespaces; every packet queued where it arrives.
ip netns add "$ns"
ip netns add "$cns"
ip link add wpl-$$ type veth peer name wpl-srv-$$
ip link set wpl-srv-$$ netns "$ns"
ip link set wpl-$$ netns "$cns"
for side in "$ns wpl-srv-$$ $host" "$cns wpl-$$ 10.200.0.1"; do
  read -r n dev addr <<<"$side"
  ip netns exec "$n" ip addr add "$addr/24" dev "$dev"
  ip netns exec "$n" ip link set "$dev" up
  ip netns exec "$n" ip link set lo up
  ip netns exec "$n" iptables-legacy -A INPUT -i "$dev" -j NFQUEUE --queue-num 0
  ip netns exec "$n" python3 scripts/bench/nfq_delay.py 0 "$delay" &
done

root=$work/www
mkdir -p "$work/logs" && chmod 1777 "$work/logs"
make_page "$root/page" > "$work/uris.txt"  # tls_bench.sh's h2-page files
chmod -R a+rX "$root"
make_cert $host "$work"

declare -A port=([weft]=18601 [nginx]=18603 [h2o]=18605)
weft_tls_conf $host "${port[weft]}" io_uring "$root" "$work" > "$work/weft.toml"
mkdir -p "$work/nginx"
nginx_tls_conf $host "${port[nginx]}" "$root" "$work" > "$work/nginx/nginx.conf"
h2o_tls_conf $host "${port[h2o]}" "$root" "$work" > "$work/h2o.conf"

in_ns() { ip netns exec "$ns" taskset -c 0 "$@" & }
for s in $servers; do
  case $s in
    weft) in_ns "$weft" -c "$work/weft.toml" ;;
    nginx) in_ns nginx -p "$work/nginx" -e "$work/logs/nginx-error.log" \
             -c "$work/nginx/nginx.conf" ;;
    h2o) in_ns h2o -c "$work/h2o.conf" ;;
  esac
done
sleep 2

results=$work/results.txt
: > "$results"
load() {  # round server: one page load, its time to the last byte in ms
  local out ms
  out=$(ip netns exec "$cns" taskset -c 1 h2load -c 1 -m 60 -n 60 -B "https://$host:${port[$2]}" -i "$work/uris.txt")
  grep -q '60 succeeded' <<<"$out" || { echo "$2: $(grep '^requests:' <<<"$out")" >&2; return; }
  ms=$(awk '/^finished in/ {v = $3; sub(/,$/, "", v)
    if (v ~ /ms$/) sub(/ms$/, "", v); else if (v ~ /us$/) {sub(/us$/, "", v); v /= 1000}
    else {sub(/s$/, "", v); v *= 1000}
    print v}' <<<"$out")
  echo "$1 $2 $ms" >> "$results"
  printf 'round %s %-6s %8.1f ms\n' "$1" "$2" "$ms"
}
order=($servers)
for r in $(seq "$rounds"); do
  if (( r % 2 == 0 )); then
    for ((i = ${#order[@]} - 1; i >= 0; i--)); do load "$r" "${order[i]}"; done
  else
    for s in "${order[@]}"; do load "$r" "$s"; done
  fi
done
echo
echo "time to the last byte, $rounds loads each, link delay ${delay} ms each way:"
python3 - "$results" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    _, s, ms = line.split()
    by.setdefault(s, []).append(float(ms))
for s, v in by.items():
    print("%-6s median %7.1f ms  min %7.1f  max %7.1f" % (s, statistics.median(v), min(v), max(v)))
if "weft" in by and "nginx" in by:
    print("weft / nginx (median): %.2f" % (statistics.median(by["weft"]) / statistics.median(by["nginx"])))
PY
