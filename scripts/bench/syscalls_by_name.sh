#!/usr/bin/env bash
# Every system call weft makes per reply, by name, under a CPU cap (issue 46: what the epoll
# backend's cost per reply is made of, against io_uring's): weft (one processor, BACKEND) on
# core 0 capped at QUOTA_US per 10 ms (default 1000: 10% of a core), weft-load on core 1
# offering 500 sessions/s for SECONDS to warm the fd cache, then RATE sessions/s of 1..5
# calls for SECONDS while `perf record -e raw_syscalls:sys_enter` follows the server. Prints
# the replies and each system call per reply, most frequent first. The names come from the
# kernel headers' unistd_64.h (x86-64).
# Usage (root, for perf): [WEFT=BINARY] [BACKEND=epoll|io_uring] [QUOTA_US=Q] \
#   scripts/bench/syscalls_by_name.sh [RATE] [SECONDS]
# Needs build/release and www-fixtures/generated/small (www-fixtures/generate.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-1000}
secs=${2:-4}
port=19011
# shellcheck source=scripts/bench/capped_lib.sh
source scripts/bench/capped_lib.sh
capped_binaries syscalls_by_name.sh
capped_setup $port "${QUOTA_US:-1000}" syscalls-by-name
weft_toml $port "$files" 1 "${BACKEND:-epoll}" > "$work/weft.toml"
(echo $BASHPID > "$group/tasks"; exec taskset -c 0 "$weft" -c "$work/weft.toml") &
pid=$!
wait_listening $port || { echo "server did not start" >&2; exit 1; }

# load RATE SEED [JSON]: one weft-load run against the server.
load_run() {
  taskset -c 1 "$load" --server 127.0.0.1 --port $port --zipf 1.0 --files "$files/MANIFEST" \
    --num-calls 1..5 --rate "$1" --duration "$secs" --timeout 2 --seed "$2" --threads 1 \
    --quiet ${3:+--json "$3"}
}

load_run 500 2  # the warm-up: the fd cache's misses are not what is measured
perf record -q -e raw_syscalls:sys_enter -p "$pid" -o "$work/perf.data" &
perf_pid=$!
sleep 0.3
load_run "$rate" 1 "$work/load.json"
kill -INT $perf_pid
wait $perf_pid || true
perf script -i "$work/perf.data" -F trace 2> /dev/null > "$work/trace.txt"
python3 - "$work/load.json" "$work/trace.txt" /usr/include/x86_64-linux-gnu/asm/unistd_64.h <<'PY'
import collections, json, re, sys
j = json.load(open(sys.argv[1]))
j = j[0] if isinstance(j, list) else j
replies = max(j["replies"]["total"], 1)
names = {}
for line in open(sys.argv[3]):
    m = re.match(r"#define __NR_(\w+) (\d+)", line)
    if m:
        names[int(m.group(2))] = m.group(1)
names.setdefault(451, "cachestat")  # newer than Debian 12's headers (Linux 6.5)
counts = collections.Counter(int(m.group(1)) for line in open(sys.argv[2])
                             for m in [re.search(r"NR (\d+)", line)] if m)
print("replies %d (failed sessions %d); system calls per reply: all %.2f"
      % (replies, j["sessions"]["failed"], sum(counts.values()) / replies))
for nr, n in counts.most_common():
    if n / replies >= 0.005:
        print("  %-16s %.2f" % (names.get(nr, nr), n / replies))
PY
