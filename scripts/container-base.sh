#!/usr/bin/env bash
# Makes sure the two Debian base images the Dockerfile names exist: debian:bookworm and
# debian:bookworm-slim. An image already present is left alone; one the registry serves is
# pulled; otherwise (a machine that reaches Debian's apt archive but no image registry) it is
# made here with debootstrap --variant=minbase, and the slim one is that same tree less docs,
# man pages, locales and apt lists, with dpkg told to keep them out, as Debian's own slim
# image does. podman stores them as localhost/debian:*, which `FROM debian:*` finds.
# Needs root for debootstrap.
# Usage: scripts/container-base.sh     (engine: $WEFT_CONTAINER_ENGINE, else podman, else docker)
set -euo pipefail
cd "$(dirname "$0")/.."

engine="${WEFT_CONTAINER_ENGINE:-}"
if [[ -z "$engine" ]]; then
  if command -v podman >/dev/null; then engine=podman; else engine=docker; fi
fi
mirror="${WEFT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${WEFT_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}"

have_image() { "$engine" image inspect "$1" >/dev/null 2>&1; }

need=()
for tag in bookworm bookworm-slim; do
  have_image "debian:$tag" && continue
  if timeout 300 "$engine" pull -q "docker.io/library/debian:$tag" >/dev/null 2>&1; then
    echo "container-base: pulled debian:$tag"
  else
    need+=("$tag")
  fi
done
if ((${#need[@]} == 0)); then
  echo "container-base: debian:bookworm and debian:bookworm-slim present"
  exit 0
fi
command -v debootstrap >/dev/null || {
  echo "container-base: no registry and no debootstrap (scripts/setup.sh --with-containers)" >&2
  exit 1
}

work="$(mktemp -d /var/tmp/weft-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

echo "container-base: no registry; debootstrap --variant=minbase bookworm (about a minute)"
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  exit 1
}
# The sources of Debian's own image: main, updates and security.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
  "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* \
  "$rootfs"/tmp/*
# A container has no init system: packages must not try to start services (Debian's image
# ships the same file).
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod +x "$rootfs/usr/sbin/policy-rc.d"

import_rootfs() { tar -C "$rootfs" -c . | "$engine" import --change 'CMD ["bash"]' - "$1" >/dev/null; }

if [[ " ${need[*]} " == *" bookworm "* ]]; then
  import_rootfs debian:bookworm
  echo "container-base: made debian:bookworm"
fi
if [[ " ${need[*]} " == *" bookworm-slim "* ]]; then
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'FILTER'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
FILTER
  find "$rootfs/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,linda}/*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
    -exec rm -rf {} +
  rm -rf "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old
  import_rootfs debian:bookworm-slim
  echo "container-base: made debian:bookworm-slim"
fi
