#!/usr/bin/env bash
# Installs the Debian packages a test run is missing, where it can: as root
# with apt-get (TEST_PREREQUISITES_INSTALL=never: report only, what a machine
# without apt-get or root gets). Anywhere else it stops with exit 1 and the one
# command that installs them, before any test runs.
# Usage: scripts/install-missing.sh "COMMAND TO RUN AGAIN" PACKAGE…
set -euo pipefail
again=$1
shift

echo "test prerequisites missing: $*"
if [ "${TEST_PREREQUISITES_INSTALL:-auto}" != never ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing them with apt-get (Debian packages) …"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "$@" >/dev/null
  echo "installed: $*"
  exit 0
fi

echo "install them first, then run $again again:" >&2
echo "  sudo apt-get install -y $*" >&2
exit 1
