#!/usr/bin/python3
"""Error messages name the right file and item (docs/cli.md: "FILE: ITEM: reason", one line).

Each case runs the atf CLI (ATF env variable) on inputs with one defect and checks the exit code
(2 for bad input, 1 for out of memory), that stderr is one line, that it names the file and item
at fault and not an innocent file. Out-of-memory cases use files that declare arrays far larger
than any address space (HDF5 stores unwritten chunked datasets in a few kilobytes), so the
allocation fails in plain and sanitizer builds alike (ASan is told to return NULL)."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import h5py
import numpy as np

ATF = os.environ["ATF"]
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1",
           ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1")
failures = []


def atf(*args):
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True, env=ENV,
                       timeout=120)
    # a sanitizer build says so when it returns NULL for an impossible size (the readers run in
    # the command's own process since the HDF5 check moved to atf-h5check): not atf's message
    p.stderr = "".join(line for line in p.stderr.splitlines(keepends=True)
                       if not re.match(r"==\d+==WARNING: AddressSanitizer failed to allocate ",
                                       line))
    return p


def ok(*args):
    p = atf(*args)
    assert p.returncode == 0, f"atf {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr}"


def expect(label, args, code, needles, absent=()):
    """atf ARGS exits with `code` and prints one line containing every needle, none of absent."""
    p = atf(*args)
    msg = p.stderr.strip()
    problems = []
    if p.returncode != code:
        problems.append(f"exit {p.returncode}, expected {code}")
    if not msg or "\n" in msg:
        problems.append("not exactly one line")
    problems += [f"does not mention {n!r}" for n in needles if n not in msg]
    problems += [f"mentions {n!r}" for n in absent if n in msg]
    if problems:
        failures.append(f"{label}: {'; '.join(problems)}\n    stderr: {p.stderr!r}")
    else:
        print(f"ok  {label}: {msg}")


def fixtures(d):
    """A problem with a test split, its MLP and result, and variants with one defect each."""
    f = {n: os.path.join(d, n + ".h5") for n in
         ("p", "m", "r", "p46", "m46", "p_noy", "p_notesty", "r_swap", "p7", "m7", "p3", "m3", "d3", "d2",
          "m_huge", "d_huge", "p_huge")}
    ok("features", "--data", "synthetic:d=4", "--n-train", 10, "--n-test", 3, "--widths",
       "4,5,1", "-o", f["p"], "--save-mlp", f["m"])
    ok("solve", f["p"], "-o", f["r"], "--quiet")
    ok("features", "--data", "synthetic:d=4", "--n-train", 10, "--n-test", 3, "--widths",
       "4,5,1", "--seed", 7, "-o", f["p7"], "--save-mlp", f["m7"])
    ok("features", "--data", "synthetic:d=3", "--n-train", 10, "--n-test", 0, "--widths",
       "3,5,1", "-o", f["p3"], "--save-mlp", f["m3"])
    ok("features", "--data", "synthetic:d=4", "--n-train", 10, "--n-test", 0, "--widths",
       "4,6,1", "-o", f["p46"], "--save-mlp", f["m46"])
    shutil.copy(f["p"], f["p_noy"])
    with h5py.File(f["p_noy"], "a") as h:
        del h["y"]
    shutil.copy(f["p"], f["p_notesty"])
    with h5py.File(f["p_notesty"], "a") as h:
        del h["test/y"]
    shutil.copy(f["r"], f["r_swap"])            # block order W2, W1: same fingerprint, wrong order
    with h5py.File(f["r_swap"], "a") as h:
        h["blocks/W1"].attrs["index"], h["blocks/W2"].attrs["index"] = 1, 0
    rng = np.random.default_rng(4)
    with h5py.File(f["d3"], "w") as h:
        h["X"], h["Y"] = rng.standard_normal((12, 3)), rng.standard_normal((12, 1))
    with h5py.File(f["d2"], "w") as h:
        h["X"], h["Y"] = rng.standard_normal((12, 4)), rng.standard_normal((12, 2))
    # declared sizes beyond any address space (2^51 to 2^57 bytes), stored in kilobytes
    with h5py.File(f["m_huge"], "w") as h:
        h.attrs.update(format="atf-mlp", bias=0, parameterization="standard", activation="relu")
        h.create_dataset("W0", shape=(1 << 24, 1 << 24), dtype="f8", chunks=(1, 1024))
        h.create_dataset("W1", shape=(1 << 24, 1), dtype="f8", chunks=(1024, 1))
    with h5py.File(f["d_huge"], "w") as h:
        h.create_dataset("X", shape=(1 << 30, 1 << 24), dtype="f8", chunks=(1, 1 << 16))
        h.create_dataset("Y", shape=(1 << 30, 1), dtype="f8", chunks=(1 << 16, 1))
    N, P = 1 << 20, 1 << 28
    with h5py.File(f["p_huge"], "w") as h:
        h.attrs.update(format="atf-problem", version=1, samples=N, outputs=1)
        h.create_dataset("r", shape=(N,), dtype="f8", chunks=(1 << 16,), fillvalue=1.0)
        g = h.create_group("blocks/W1")
        g.attrs.update(index=0, rows=P, cols=2, penalty="sq", operator="factored")
        g.create_dataset("H", shape=(N, P), dtype="f8", chunks=(1, 1 << 16), fillvalue=1.0)
        g.create_dataset("D", shape=(N, 2), dtype="f8", chunks=(1 << 16, 2), fillvalue=1.0)
    return f


def write_idx(d, labels_shape):
    """MNIST-style IDX files whose labels file has the given shape."""
    os.makedirs(d, exist_ok=True)
    images = np.zeros((40, 4, 4), dtype=np.uint8)
    with open(os.path.join(d, "train-images-idx3-ubyte"), "wb") as fh:
        fh.write(struct.pack(">BBBBIII", 0, 0, 8, 3, 40, 4, 4) + images.tobytes())
    labels = (np.arange(np.prod(labels_shape)) % 2).astype(np.uint8)
    with open(os.path.join(d, "train-labels-idx1-ubyte"), "wb") as fh:
        fh.write(struct.pack(">BBBB", 0, 0, 8, len(labels_shape)) +
                 b"".join(struct.pack(">I", n) for n in labels_shape) + labels.tobytes())


def main(d):
    f = fixtures(d)
    out = os.path.join(d, "out.h5")
    # predictions: the problem's missing targets are the problem's fault, not the result's
    expect("predict, problem without /y", ["predict", f["p_noy"], f["r"]], 2,
           [f"{f['p_noy']}: /y: missing"], [f["r"]])
    expect("predict, problem without /test/y", ["predict", f["p_notesty"], f["r"]], 2,
           [f"{f['p_notesty']}: /test/y: missing"], [f["r"]])
    # a result whose blocks come in another order names both files
    swap = [f"{f['r_swap']}: /blocks: block 0 is 'W2'", f"{f['p']}'s block 0 is 'W1'"]
    expect("predict, block order", ["predict", f["p"], f["r_swap"]], 2, swap)
    expect("kernel, block order", ["kernel", f["p"], f["r_swap"], "-o", out], 2, swap)
    expect("solve --warm, block order", ["solve", f["p"], "--warm", f["r_swap"], "-o", out], 2,
           swap)
    # network widths against the data: the data item and where the widths came from
    expect("features --mlp, data /X", ["features", "--data", f["d3"], "--mlp", f["m"], "-o", out],
           2, [f"{f['d3']}: /X: dimension 3", f"{f['m']} has input width 4"])
    expect("features --widths, data /X",
           ["features", "--data", f["d3"], "--widths", "4,5,1", "-o", out], 2,
           [f"{f['d3']}: /X: dimension 3", "widths has input width 4"])
    expect("features --mlp, data /Y", ["features", "--data", f["d2"], "--mlp", f["m"], "-o", out],
           2, [f"{f['d2']}: /Y: 2 outputs", f"{f['m']} has output width 1"])
    expect("features --widths, synthetic",
           ["features", "--data", "synthetic:d=4", "--widths", "3,5,1", "-o", out], 2,
           ["synthetic:d=4: inputs: dimension 4", "widths has input width 3"])
    expect("predict --mlp, data /X", ["predict", "--data", f["d3"], "--mlp", f["m"]], 2,
           [f"{f['d3']}: /X: dimension 3", f"{f['m']} has input width 4"])
    expect("train --mlp, data /X", ["train", "--data", f["d3"], "--mlp", f["m"], "-o", out], 2,
           [f"{f['d3']}: /X: dimension 3", f"{f['m']} has input width 4"])
    # kernels with networks: the network file at fault and the problem it was checked against
    expect("kernel --mlp0 of another problem", ["kernel", f["p"], "--mlp0", f["m7"], "-o", out],
           2, [f"{f['m7']}: does not reproduce {f['p']}'s /f0"])
    expect("kernel --mlp of other widths", ["kernel", f["p"], "--mlp", f["m3"], "-o", out], 2,
           [f"{f['m3']}: the network maps 3 -> 1 but {f['p']} has inputs of dimension 4"])
    expect("kernel --mlp0 of other widths", ["kernel", f["p"], "--mlp0", f["m3"], "--mlp",
                                             f["m"], "-o", out], 2,
           [f"{f['m3']}: the network maps 3 -> 1 but {f['p']} has inputs of dimension 4"])
    expect("kernel, path between two architectures",
           ["kernel", f["p"], "--mlp0", f["m"], "--mlp", f["m46"], "-o", out], 2,
           [f"{f['m46']}: architecture widths 4,6,1", f"{f['m']} has widths 4,5,1"])
    # IDX labels of the wrong rank (the count matches, the shape does not)
    idx = os.path.join(d, "idx")
    write_idx(idx, (40, 1))
    expect("IDX labels of rank 2",
           ["features", "--data", f"mnist:{idx}", "--n-train", 10, "--n-test", 5, "--widths",
            "16,4,1", "-o", out], 2,
           ["train-labels-idx1-ubyte: labels have shape [40, 1]", "one-dimensional"])
    # out of memory while reading: the file and the item being read
    expect("out of memory, MLP weights", ["features", "--data", f["d3"], "--mlp", f["m_huge"],
                                          "-o", out], 1,
           [f"{f['m_huge']}: /W0 to /W1: out of memory"])
    expect("out of memory, data /X", ["predict", "--data", f["d_huge"], "--mlp", f["m"]], 1,
           [f"{f['d_huge']}: /X: out of memory"])
    expect("out of memory, problem operator", ["solve", f["p_huge"], "-o", out], 1,
           [f"{f['p_huge']}: /blocks/W1/H: out of memory"])
    assert not os.path.exists(out), "an output was written by a failing command"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("messages: ok")
