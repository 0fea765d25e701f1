# Shared by capped_run.sh and prof.sh (sourced, not run): one server under a CPU cap on
# core 0 and weft-load on core 1, as compare.py's capped comparison.

# capped_binaries NAME: sets $weft ($WEFT or build/release's), $load and $files (the generated
# "small" set), or exits with what is missing.
capped_binaries() {
  weft=${WEFT:-$PWD/build/release/server/weft}
  load=$PWD/build/release/loadgen/weft-load
  files=$PWD/www-fixtures/generated/small
  [[ -x $weft && -x $load && -f $files/MANIFEST ]] || {
    echo "$1: needs build/release and $files (www-fixtures/generate.py --preset small)" >&2
    exit 2
  }
}

# capped_setup PORT QUOTA_US NAME: refuses a taken port (a weft left running would join the
# next one's SO_REUSEPORT group), makes $work (a temporary folder) and $group (a cgroup v1
# cpu group, 10 ms period, QUOTA_US per period; 0: no cap), and removes both at exit after
# stopping $pid (the server, set by the caller) and the caller's other jobs.
capped_setup() {
  local port=$1 quota=$2 name=$3
  if ss -ltnH "sport = :$port" | grep -q .; then
    echo "$name: port $port is taken (a server left running? SO_REUSEPORT would share it)" >&2
    exit 2
  fi
  group=/sys/fs/cgroup/cpu/weft-$name-$$
  work=$(mktemp -d "/tmp/weft-$name-XXXXXX")
  pid=
  trap capped_cleanup EXIT
  mkdir "$group" || { echo "$name: cannot create $group (cgroup v1 cpu, as root)" >&2; exit 2; }
  echo 10000 > "$group/cpu.cfs_period_us"
  [[ $quota != 0 ]] && echo "$quota" > "$group/cpu.cfs_quota_us"
  return 0
}

capped_cleanup() {
  # The server first (SIGTERM, then waited for: it leaves its cgroup empty), then the rest.
  [[ -n $pid ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
  # shellcheck disable=SC2046
  kill $(jobs -p) 2>/dev/null || true
  sleep 0.3
  rmdir "$group" 2>/dev/null || true
  rm -rf "$work"
}

# weft_toml PORT ROOT PROCS BACKEND [RUNTIME_LINE]: prints the settings compare.py gives weft.
weft_toml() {
  cat <<CONF
[server]
listen = ["127.0.0.1:$1"]
root = "$2"
backlog = 4096
[runtime]
processors = $3
${5:-}
[io]
backend = "$4"
[timeouts]
keepalive = "75s"
shutdown_grace = "1s"
[fd_cache]
max_entries = 2000
[log]
level = "warn"
error_log = "$work/error.log"
access_log = "off"
CONF
}

# wait_listening PORT: waits up to 5 s for a listener on PORT.
wait_listening() {
  for _ in $(seq 100); do ss -ltnH "sport = :$1" | grep -q . && return 0; sleep 0.05; done
  return 1
}
