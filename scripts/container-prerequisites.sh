#!/usr/bin/env bash
# Runs before `npm run test:container`: the container engine and what builds
# the base images when they cannot be pulled (podman, runc, mmdebstrap,
# podman-compose; Debian's packages). Installs what is missing where it can
# (root on Debian); anywhere else it stops with the one command that installs
# them. Also checks that the machine's hard limits allow the ulimits
# test/container/containers.conf gives containers.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in podman runc mmdebstrap podman-compose; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done

[ ${#missing[@]} -eq 0 ] || bash scripts/install-missing.sh "npm run test:container" "${missing[@]}"

# podman refuses to start a container whose ulimits exceed the hard limits.
conf="${CONTAINERS_CONF:-test/container/containers.conf}"
for limit in nofile:n nproc:u; do
  name=${limit%%:*}
  wanted=$(grep -oE "\"$name=[0-9]+" "$conf" | grep -oE '[0-9]+$' || true)
  hard=$(ulimit -H"${limit##*:}")
  if [ -n "$wanted" ] && [ "$hard" != unlimited ] && [ "$wanted" -gt "$hard" ]; then
    echo "$conf asks for $name=$wanted but this machine's hard limit is $hard: lower it there" >&2
    exit 1
  fi
done
