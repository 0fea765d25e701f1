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

# make_cert HOST WORK: an ECDSA P-256 certificate, self-signed, for the IP address HOST, as
# WORK/cert.pem and WORK/key.pem (readable by NGINX's and H2O's workers).
make_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=$1" -addext "subjectAltName=IP:$1" \
    -keyout "$2/key.pem" -out "$2/cert.pem" 2>/dev/null
  chmod 644 "$2/key.pem"
}

# weft_tls_conf HOST PORT BACKEND ROOT WORK: prints weft's configuration, one processor on
# io.backend BACKEND, serving ROOT over TLS 1.3 on HOST:PORT with WORK's certificate, its
# error log in WORK/logs.
weft_tls_conf() {
  cat <<CONF
[server]
listen_tls = ["$1:$2"]
root = "$4"
backlog = 4096
[tls]
certificate = "$5/cert.pem"
key = "$5/key.pem"
protocols = ["TLSv1.3"]
[runtime]
processors = 1
[io]
backend = "$3"
[limits]
max_connections = 4000
max_requests_per_connection = 1000000
[log]
level = "warn"
error_log = "$5/logs/weft-$2.log"
access_log = "off"
CONF
}

# nginx_tls_conf HOST PORT ROOT WORK: prints NGINX's configuration, one worker, serving ROOT
# over TLS 1.3 and HTTP/2 on HOST:PORT with WORK's certificate (keepalive_requests raised:
# its default ends a connection after 1,000 streams, which h2load does not reconnect).
nginx_tls_conf() {
  cat <<CONF
user nobody nogroup; daemon off; worker_processes 1; pid $4/nginx/nginx.pid;
error_log $4/logs/nginx-error.log; worker_rlimit_nofile 20000;
events { worker_connections 10000; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;
  client_body_temp_path $4/nginx/cb; proxy_temp_path $4/nginx/px;
  fastcgi_temp_path $4/nginx/fc; uwsgi_temp_path $4/nginx/uw; scgi_temp_path $4/nginx/sc;
  types { text/plain txt; application/octet-stream bin; text/html html; text/css css;
          application/javascript js; image/png png; image/jpeg jpg; }
  ssl_certificate $4/cert.pem; ssl_certificate_key $4/key.pem;
  ssl_protocols TLSv1.3; ssl_ecdh_curve X25519;
  server { listen $1:$2 ssl http2 backlog=4096; root $3; }
}
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
