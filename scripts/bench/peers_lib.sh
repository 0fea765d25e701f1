# Shared by server_bench.sh and conn_bench.sh (sourced, not run): the peers' pieces that both
# start the same way.

# h2o_conf PORT ROOT WORK: prints H2O's configuration, one thread, serving ROOT on
# 127.0.0.1:PORT, its pid file and error log in WORK.
h2o_conf() {
  cat <<CONF
num-threads: 1
user: nobody
pid-file: $3/h2o.pid
error-log: $3/h2o-error.log
listen:
  host: 127.0.0.1
  port: $1
hosts:
  "default":
    paths:
      "/":
        file.dir: $2
CONF
}

# server_pid PORT: the process that holds the listening socket of PORT (NGINX: a worker).
server_pid() {
  local pids; pids=$(ss -ltnp "sport = :$1" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
  for p in $pids; do
    if [[ $(cat /proc/$p/comm) == nginx ]] && ! grep -q worker /proc/$p/cmdline; then continue; fi
    echo "$p"; return
  done
}
