#!/usr/bin/env bash
# The main job on its built-in default: installs what is missing, builds, runs `atf demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build --buildtype=release
exec build/drivers/atf demo "$@"
