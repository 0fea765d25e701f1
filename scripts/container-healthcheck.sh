#!/bin/bash
# The image's HEALTHCHECK (installed as /usr/local/bin/weft-healthcheck): asks the local weft
# for PATH over bash's /dev/tcp (the slim image has no curl) and exits 0 on a 2xx/3xx status.
# Usage: weft-healthcheck [PORT [PATH]]   (defaults: 8080 /)
set -u
port="${1:-8080}"
path="${2:-/}"
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$path" >&3
read -r -t 2 version status _ <&3 || exit 1
[[ "$version" == HTTP/1.* && "$status" == [23]?? ]]
