#!/usr/bin/env bash
# The README's first command: install the Debian 12 packages (as root), configure and build
# placesim in Release into build/, then run the main job on its built-in default.
#
#   tools/setup.sh                  # install + build + main job
#   PLACESIM_SKIP_MAIN_JOB=1 tools/setup.sh   # install + build only (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache hits across clones: paths under the checkout are hashed relative to it.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1

if [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2046
  apt-get install -y -qq --no-install-recommends $(grep -v -E '^\s*(#|$)' tools/packages.txt)
else
  echo "setup: not root, skipping apt-get (packages listed in tools/packages.txt)" >&2
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLACESIM_WERROR=ON
cmake --build build -j "$jobs"

if [ -z "${PLACESIM_SKIP_MAIN_JOB:-}" ]; then
  build/placesim train
fi
