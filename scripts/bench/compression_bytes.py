#!/usr/bin/env python3
"""Bytes on the wire for a site's text files (issue 45): weft with its default [compression]
(each coding of a file made once, the smallest sent) against NGINX with `gzip on; gzip_comp_level 6`,
both asked with a browser's `Accept-Encoding: gzip, deflate, br, zstd`.

weft is asked for every text file until its answers stop changing (the workers compress off
the request path; the script waits for them to go idle between passes), then once more for
the figure; NGINX compresses each response as it goes. Counted per server: the body bytes
and the head bytes (status line and fields as received) of one GET per file, against the
files' own size.

Usage: scripts/bench/compression_bytes.py [--site generated|debian|DIR] [--max-files N]
  generated: the text files (.html .js .css .txt) of www-fixtures/generated/small
  debian:    the JavaScript, CSS and HTML of installed Debian packages (/usr/share/javascript,
             /usr/share/doc/*/html, /usr/share/nodejs), copied with an old mtime
"""

import argparse
import http.client
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
TEXT = (".html", ".htm", ".js", ".css", ".txt", ".json", ".svg")
ACCEPT = "gzip, deflate, br, zstd"  # what browsers send
WEFT_PORT, NGINX_PORT, METRICS_PORT = 18391, 18392, 18393
PASSES = 20  # at most this many rounds of asking weft for the files not yet coded


def debian_corpus(dest, limit):
    """Copies the web assets of installed Debian packages under `dest`; returns the count."""
    n = 0
    for base in ("/usr/share/javascript", "/usr/share/nodejs", "/usr/share/doc"):
        for dirpath, _, names in sorted(os.walk(base, followlinks=False)):
            if base == "/usr/share/doc" and "/html" not in dirpath:
                continue
            for name in sorted(names):
                src = os.path.join(dirpath, name)
                if not name.endswith(TEXT) or not os.path.isfile(src):
                    continue
                if os.path.getsize(src) < 1 or n >= limit:
                    continue
                dst = os.path.join(dest, os.path.relpath(src, "/usr/share"))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
                os.utime(dst, (time.time() - 3600,) * 2)  # settled: weft compresses it
                n += 1
    return n


def text_files(root, limit):
    """Returns the URL paths of the text files under `root`, sorted, at most `limit`."""
    out = []
    for dirpath, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            if name.endswith(TEXT):
                out.append("/" + os.path.relpath(os.path.join(dirpath, name), root))
    return out[:limit]


def start(root, work):
    """Starts weft and NGINX on `root`; returns their processes."""
    weft = os.environ.get("WEFT", os.path.join(SOURCE, "build/release/server/weft"))
    with open(os.path.join(work, "weft.toml"), "w") as f:
        f.write('[server]\nlisten = ["127.0.0.1:%d"]\nroot = "%s"\n[runtime]\nprocessors = 1\n'
                '[compression]\nworkers = 2\nmax_queued = 100000\n[log]\nlevel = "warn"\n'
                '[metrics]\nenabled = true\nlisten = "127.0.0.1:%d"\n'
                % (WEFT_PORT, root, METRICS_PORT))
    os.makedirs(os.path.join(work, "nginx"))
    with open(os.path.join(work, "nginx", "nginx.conf"), "w") as f:
        f.write("daemon off; worker_processes 1; pid %(w)s/nginx/pid; error_log %(w)s/nginx/err;\n"
                "events { worker_connections 1024; }\n"
                "http { include /etc/nginx/mime.types; access_log off; sendfile on;\n"
                "  client_body_temp_path %(w)s/nginx/cb; proxy_temp_path %(w)s/nginx/px;\n"
                "  fastcgi_temp_path %(w)s/nginx/fc; uwsgi_temp_path %(w)s/nginx/uw;\n"
                "  scgi_temp_path %(w)s/nginx/sc;\n"
                "  gzip on; gzip_comp_level 6; gzip_vary on; gzip_types text/css text/plain\n"
                "    application/javascript text/javascript application/json image/svg+xml;\n"
                "  server { listen 127.0.0.1:%(p)d; root %(r)s; } }\n"
                % {"w": work, "p": NGINX_PORT, "r": root})
    procs = [subprocess.Popen([weft, "-c", os.path.join(work, "weft.toml")]),
             subprocess.Popen(["nginx", "-p", work + "/nginx", "-e", work + "/nginx/err", "-c",
                               work + "/nginx/nginx.conf"])]
    for port in (WEFT_PORT, NGINX_PORT, METRICS_PORT):
        for _ in range(100):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
                break
            except OSError:
                time.sleep(0.05)
    return procs


def fetch(conn, path):
    """Returns (coding, body bytes, head bytes) of one GET on a keep-alive connection."""
    conn.request("GET", urllib.request.quote(path), headers={"Accept-Encoding": ACCEPT})
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, (path, r.status)
    head = len("HTTP/1.1 %d %s\r\n\r\n" % (r.status, r.reason))
    head += sum(len(k) + len(v) + 4 for k, v in r.getheaders())
    return r.getheader("Content-Encoding") or "identity", len(body), head


def workers_idle():
    """Whether weft's compression workers have nothing running or queued."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % METRICS_PORT).read().decode()
    vals = {l.split()[0]: float(l.split()[1]) for l in text.splitlines()
            if l.startswith(("weft_compressions_running ", "weft_compressions_queued "))}
    return vals.get("weft_compressions_running", 1) == 0 and \
        vals.get("weft_compressions_queued", 1) == 0


def settle_weft(paths):
    """Asks weft for each path, the workers idle between passes, until a pass answers every
    path as the one before (each request starts at most one coding, so a file's answer
    changes until all its codings are made); bounded by PASSES."""
    conn = http.client.HTTPConnection("127.0.0.1", WEFT_PORT, timeout=30)
    last = None
    for _ in range(PASSES):
        now = [fetch(conn, p)[:2] for p in paths]
        print("pass:", {c: sum(1 for x in now if x[0] == c) for c in set(x[0] for x in now)},
              file=sys.stderr)
        if now == last:
            return
        last = now
        deadline = time.time() + 600
        while not workers_idle() and time.time() < deadline:
            time.sleep(0.2)


def measure(port, paths):
    """Returns {"body": n, "head": n, "codings": {coding: count}} of one GET per path."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out = {"body": 0, "head": 0, "codings": {}}
    for p in paths:
        coding, body, head = fetch(conn, p)
        out["body"] += body
        out["head"] += head
        out["codings"][coding] = out["codings"].get(coding, 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", default="generated")
    ap.add_argument("--max-files", type=int, default=100000)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="weft-compbytes-")
    os.chmod(work, 0o755)
    procs = []
    try:
        if args.site == "generated":
            root = os.path.join(SOURCE, "www-fixtures/generated/small")
            subprocess.run([os.path.join(SOURCE, "www-fixtures/generate.py")], check=True,
                           stdout=subprocess.DEVNULL)
            time.sleep(1.1)  # a file written within the second is not compressed yet
        elif args.site == "debian":
            root = os.path.join(work, "www")
            debian_corpus(root, args.max_files)
        else:
            root = os.path.abspath(args.site)
        paths = text_files(root, args.max_files)
        size = sum(os.path.getsize(os.path.join(root, p[1:])) for p in paths)
        procs = start(root, work)
        t0 = time.time()
        settle_weft(paths)
        print("site %s: %d text files, %d bytes; weft's compressions took %.0f s"
              % (args.site, len(paths), size, time.time() - t0))
        res = {"weft": measure(WEFT_PORT, paths), "nginx": measure(NGINX_PORT, paths)}
        for name, r in res.items():
            print("%-6s body %11d B (%.3f of the files)  head %8d B  codings %s"
                  % (name, r["body"], r["body"] / size, r["head"], r["codings"]))
        w, n = res["weft"], res["nginx"]
        print("weft/NGINX: body %.3fx, body+head %.3fx"
              % (w["body"] / n["body"], (w["body"] + w["head"]) / (n["body"] + n["head"])))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
