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

# h2o_tls_conf HOST PORT ROOT WORK: prints H2O's configuration, one thread, serving ROOT over
# TLS 1.3 on HOST:PORT with WORK/cert.pem and WORK/key.pem, its pid file and error log in
# WORK/logs.
h2o_tls_conf() {
  cat <<CONF
num-threads: 1
user: nobody
pid-file: $4/logs/h2o.pid
error-log: $4/logs/h2o-error.log
max-connections: 10000
listen:
  host: $1
  port: $2
  ssl:
    certificate-file: $4/cert.pem
    key-file: $4/key.pem
    minimum-version: TLSv1.3
hosts:
  "default":
    paths:
      "/":
        file.dir: $3
CONF
}

# make_page DIR: writes a page of 60 files of 1-100 KB into DIR (html, css, js, images;
# sizes log-uniform, a fixed seed) and prints their URIs, /page/NAME.
make_page() {
  mkdir -p "$1"
  python3 - "$1" <<'PY'
import os, random, sys
rnd = random.Random(44)
for i in range(60):
    ext = ("html", "css", "js", "png", "jpg")[i % 5]
    size = int(1000 * (100 ** rnd.random()))  # 1 KB .. 100 KB, log-uniform
    with open(os.path.join(sys.argv[1], "f%02d.%s" % (i, ext)), "wb") as f:
        f.write(os.urandom(size))
    print("/page/f%02d.%s" % (i, ext))
PY
}

# server_pid PORT: the process that holds the listening socket of PORT (NGINX: a worker).
server_pid() {
  local pids; pids=$(ss -ltnp "sport = :$1" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
  for p in $pids; do
    if [[ $(cat /proc/$p/comm) == nginx ]] && ! grep -q worker /proc/$p/cmdline; then continue; fi
    echo "$p"; return
  done
}
