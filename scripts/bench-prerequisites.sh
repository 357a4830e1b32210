#!/usr/bin/env bash
# Runs before `npm run bench`: h2load (Debian's nghttp2-client) is the HTTP/2
# load generator of the tls section. Installs it where it can (root on Debian);
# anywhere else it stops before any section runs, with the one command that
# installs it.
set -euo pipefail

command -v "${H2LOAD_BIN:-h2load}" >/dev/null 2>&1 && exit 0
bash "$(dirname "$0")/install-missing.sh" "npm run bench" nghttp2-client && exit 0
echo "(or point H2LOAD_BIN at your own h2load)" >&2
exit 1
