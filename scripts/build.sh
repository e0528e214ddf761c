#!/usr/bin/env bash
# Configure and build atf into build/ (optimised) — or into the directory given as $1 with the
# extra meson options that follow.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [[ -f "$dir/build.ninja" ]]; then
  meson setup --reconfigure "$dir" "$@" >/dev/null
else
  meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
echo "build: $dir/drivers/atf" >&2
