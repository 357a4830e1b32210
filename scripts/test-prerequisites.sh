#!/usr/bin/env bash
# Runs before `npm test`: the suite starts its own redis-server (standalone,
# Sentinel and Cluster on the same binary, created with redis-cli), drives
# Debian's Chromium for the browser tests and checks the shipped alert rules
# with promtool (Debian's prometheus package). Installs what is missing where it
# can (root on Debian); anywhere else it stops before any test runs, with the
# one command that installs them.
set -euo pipefail

chromium_path="${CHROMIUM_PATH:-/usr/bin/chromium}"
missing=()
command -v "${REDIS_SERVER_BIN:-redis-server}" >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
[ -x "$chromium_path" ] || missing+=(chromium)
command -v "${PROMTOOL_BIN:-promtool}" >/dev/null 2>&1 || missing+=(prometheus)

[ ${#missing[@]} -eq 0 ] && exit 0

bash "$(dirname "$0")/install-missing.sh" "npm test" "${missing[@]}" && exit 0
echo "(or point REDIS_SERVER_BIN, CHROMIUM_PATH and PROMTOOL_BIN at your own binaries)" >&2
exit 1
