#!/usr/bin/env bash
# What a TLS handshake costs the server's side with OpenSSL (what weft and Debian's NGINX
# link) and with wolfSSL through its OpenSSL-compatible API: bench/tls_handshake_bench built
# against each, alternated ROUNDS times on one core, ECDSA P-256 certificate, X25519. Prints
# each round, then the medians of the server's CPU per handshake and wolfSSL / OpenSSL.
# Installs libwolfssl-dev when it is missing (apt, as root), since only this benchmark uses it.
# Usage: scripts/bench/tls_handshake_cost.sh [ROUNDS] [HANDSHAKES_PER_MODE] [CORE]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
count=${2:-1000}
core=${3:-1}
if [[ ! -f /usr/include/wolfssl/options.h ]]; then
  echo "installing libwolfssl-dev (for the wolfSSL side only)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q libwolfssl-dev >/dev/null
  cmake --preset release >/dev/null  # finds it now
fi
cmake --build build/release --target tls_handshake_bench tls_handshake_bench_wolfssl >/dev/null
work=$(mktemp -d /tmp/weft-tlshs-XXXXXX)
trap 'rm -rf "$work"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
for r in $(seq "$rounds"); do
  for b in tls_handshake_bench tls_handshake_bench_wolfssl; do
    taskset -c "$core" "build/release/bench/$b" --cert "$work/cert.pem" --key "$work/key.pem" \
      --count "$count" | sed "s/^/round $r  /" | tee -a "$work/results.txt"
  done
done
python3 - "$work/results.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+\s+(OpenSSL|wolfSSL)\S*\s.*?(TLS1\.\d \w+)\s+server\s+([\d.]+) us"
                 r"\s+client\s+([\d.]+) us", line)
    if m:
        rows.setdefault((m.group(2), m.group(1)), []).append((float(m.group(3)),
                                                               float(m.group(4))))
print("\nmedians: server (client) CPU per handshake, µs; wolfSSL / OpenSSL of the server's")
for mode in ("TLS1.3 full", "TLS1.3 resume", "TLS1.2 full", "TLS1.2 resume"):
    o, w = rows.get((mode, "OpenSSL")), rows.get((mode, "wolfSSL"))
    if not (o and w):
        continue
    med = lambda v, i: statistics.median(x[i] for x in v)
    print("%-14s OpenSSL %6.1f (%6.1f)  wolfSSL %6.1f (%6.1f)  %.2fx" % (
        mode, med(o, 0), med(o, 1), med(w, 0), med(w, 1), med(w, 0) / med(o, 0)))
PY
