"""`mpirun -np K atf features` (the MPI build, -Dmpi=enabled): each rank forms the tangent
features of its own run of examples of both splits (whole chunks, the cut `mpirun -np K atf
solve` reads) and rank 0 writes the file from every rank's rows, slice by slice. Against the same
command in one process, for K = 1, 2 and 3, on Fashion-MNIST (10 outputs, labels, --save-mlp,
--json) and on a synthetic task (one output, biases, tanh): the same datasets and attributes,
bit for bit for every K (one process and each rank form the Jacobian in the same chunks of
atf_shard_chunk(N), whatever rank holds them); the stored
fingerprint is the content's (`mpirun -np 2 atf solve` on the file records it and notes no
edit) and that solve equals the same solve in one process. A bad option, an unwritable output,
more ranks than chunks of the test split, a non-finite feature in the last rank's examples only,
a file-size limit hit by rank 0 while it writes, and a rank killed while the ranks compute each
end the job with one message, the usual exit code, no output, no temporary file and no process
left.

usage: test_mpi_features.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from mpi_env import (ATF, ENV, MPIRUN, check, ended_badly, fashion, finish, leftovers,  # noqa: E402
                     mpi, path, run, scratch)

FASHION = fashion()
# attributes that name the run rather than the content (the output's name is in the command)
RUN_ATTRS = ("command", "fingerprint")



def atf_messages(stderr):
    return [line for line in stderr.splitlines() if line.startswith("atf ")]


def contents(name):
    """Every dataset and every attribute of an HDF5 file, by path."""
    data, attrs = {}, {}
    with h5py.File(name, "r") as f:
        def visit(key, obj):
            attrs.update({(key, k): v for k, v in obj.attrs.items()})
            if isinstance(obj, h5py.Dataset):
                data[key] = obj[...]
        attrs.update({("/", k): v for k, v in f.attrs.items()})
        f.visititems(visit)
    return data, attrs


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def run_attr(name):
    return name in RUN_ATTRS or name.endswith("_seconds")  # a result's timings


def compare(ref_path, got_path, what):
    """The same datasets and attributes (but those of the run); floats within 1e-12 of the
    array's largest value. Returns whether every dataset is equal bit for bit, and the largest
    relative difference."""
    ref, ref_attrs = contents(ref_path)
    got, got_attrs = contents(got_path)
    check(sorted(ref) == sorted(got), f"{what}: datasets {sorted(got)} vs {sorted(ref)}")
    check(sorted(ref_attrs) == sorted(got_attrs), f"{what}: attributes differ in names")
    for k, v in ref_attrs.items():
        if not run_attr(k[1]) and k in got_attrs:
            check(text(v) == text(got_attrs[k]), f"{what}: attribute {k}: {got_attrs[k]!r} vs {v!r}")
    bitwise, worst = True, 0.0
    for k in ref:
        if k not in got:
            continue
        a, b = ref[k], got[k]
        if a.dtype != b.dtype or a.shape != b.shape:
            check(False, f"{what}: {k}: {b.dtype}{b.shape} vs {a.dtype}{a.shape}")
            continue
        if np.array_equal(a, b):
            continue
        bitwise = False
        if a.dtype.kind != "f":
            check(False, f"{what}: {k}: integers differ")
            continue
        rel = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))
        worst = max(worst, rel)
        check(rel <= 1e-12, f"{what}: {k}: relative difference {rel:.3g}")
    return bitwise, worst


def stored_fingerprint(name):
    with h5py.File(name, "r") as f:
        return text(f.attrs["fingerprint"])


def no_temporaries(what):
    left = [f for f in os.listdir(scratch) if ".tmp." in f]
    check(not left, f"{what}: temporary files left: {left}")


CASES = {
    "fashion": ["--data", "fashion-mnist", "--split", "official", "--n-train", "1300",
                "--n-test", "300", "--widths", "784,24,16,10"],
    "synthetic": ["--data", "synthetic:d=12,r=2", "--n-train", "300", "--n-test", "100",
                  "--widths", "12,32,8,1", "--bias=1,3", "--activation", "tanh"],
}
for name, opts in CASES.items():
    one = path(f"{name}_1p.h5")
    extra = ["--save-mlp", path(f"{name}_1p_mlp.h5")] if name == "fashion" else []
    run([ATF, "features", *opts, "-o", one, *extra])
    files = {}
    for k in (1, 2, 3):
        out = path(f"{name}_{k}.h5")
        extra = ["--save-mlp", path(f"{name}_{k}_mlp.h5")] if name == "fashion" else []
        p = run(mpi(k, ["features", *opts, "-o", out, "--json", *extra]))
        lines = p.stdout.strip().splitlines()
        check(len(lines) == 1 and '"status":"ok"' in lines[0], f"{name} K={k}: one JSON line, "
                                                                f"got {p.stdout!r}")
        if not os.path.exists(out):
            check(False, f"{name} K={k}: no output")
            continue
        check(len(lines) == 1 and stored_fingerprint(out) in lines[0],
              f"{name} K={k}: the JSON's fingerprint is the file's")
        files[k] = out
        same, worst = compare(one, out, f"{name} K={k}")
        check(same and stored_fingerprint(out) == stored_fingerprint(one),
              f"{name} K={k}: bit for bit as one process (largest relative difference "
              f"{worst:.3g})")
        if extra:
            same_mlp, _ = compare(path(f"{name}_1p_mlp.h5"), extra[1], f"{name} K={k} MLP")
            check(same_mlp, f"{name} K={k}: the saved network is one process's, bit for bit")
    if 2 in files and 3 in files:
        same23, _ = compare(files[2], files[3], f"{name} K=2 vs K=3")
        check(same23 and stored_fingerprint(files[2]) == stored_fingerprint(files[3]),
              f"{name}: K = 2 and K = 3 bit for bit (the same chunks)")
    no_temporaries(name)

# The K = 2 file solved over two ranks: the fingerprint stored is the content's (the result
# records the fingerprint read, and no note says the file was edited), and the solve equals one
# process's on the same file. 1 300 images leave H of W1 (784 columns) of full rank, so the
# subspace reduction has nothing to remove.
prob = path("fashion_2.h5")
if os.path.exists(prob):
    sopts = ["--loss", "xent:lambda=0.5", "--penalty", "sq", "--method", "newton", "--tol", "1e-8",
             "--quiet"]
    r1, r2 = path("solve_1p.h5"), path("solve_2.h5")
    run([ATF, "solve", prob, "-o", r1, *sopts])
    p = run(mpi(2, ["solve", prob, "-o", r2, *sopts]))
    check(not [m for m in p.stderr.splitlines() if "note" in m],
          f"solve K=2: no note about the file, got {p.stderr[-400:]!r}")
    if os.path.exists(r1) and os.path.exists(r2):
        with h5py.File(r2, "r") as f:
            check(text(f.attrs["problem_fingerprint"]) == stored_fingerprint(prob),
                  "solve K=2: the result's problem_fingerprint is the stored fingerprint")
        same, worst = compare(r1, r2, "solve K=2 vs one process")
        check(same, f"solve of the K=2 file over 2 ranks: bit for bit as one process (largest "
              f"relative difference {worst:.3g})")


def refused(k, argv, out, expect, words, what, pre=None):
    """The job ends with exit `expect`, one message holding `words`, no output, no process."""
    cmd = mpi(k, argv)
    if pre:  # a shell around atf on every rank
        cmd = [MPIRUN, "-np", str(k), "--oversubscribe", "bash", "-c", pre, ATF, *argv]
    p = run(cmd, expect=expect)
    msgs = atf_messages(p.stderr)
    check(len(msgs) == 1 and all(w in msgs[0] for w in words),
          f"{what}: one message with {words}, got {msgs}")
    check(not os.path.exists(out), f"{what}: an output was written")
    check(not leftovers(out), f"{what}: processes left: {leftovers(out)}")
    no_temporaries(what)


fashion = CASES["fashion"]
out = path("refused.h5")
refused(2, ["features", *fashion, "--bogus", "-o", out], out, 2, ["--bogus"], "bad option")
missing = path("no/such/dir/p.h5")
refused(2, ["features", *fashion, "-o", missing], missing, 2, ["no/such/dir"],
        "unwritable output")
refused(3, ["features", "--data", "synthetic", "--n-train", "200", "--n-test", "40", "-o", out],
        out, 2, ["test split", "at most 2"], "more ranks than test chunks")

# a non-finite feature in the last examples only (read by the last of 3 ranks): a huge input
# overflows the first layer's outputs
data = path("huge.h5")
rng = np.random.default_rng(3)
X = rng.standard_normal((400, 12))
X[395, :] = 1e308
with h5py.File(data, "w") as f:
    f["X"] = X
    f["Y"] = rng.standard_normal((400, 1))
refused(3, ["features", "--data", data, "--n-train", "400", "--widths", "12,16,8,1", "-o", out],
        out, 2, ["non-finite", "W2", "examples 256"], "non-finite in the last rank's rows")

# rank 0 cannot write beyond 6 MB (the other ranks, and mpirun, keep no limit): the write fails
# while rank 0 takes the other ranks' rows of /blocks/W1
limit = 'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then ulimit -f 6000; fi; exec "$0" "$@"'
refused(3, ["features", *fashion, "-o", out], out, 1, ["cannot write", "File too large"],
        "rank 0 at the file-size limit", pre=limit)

# a rank killed while the ranks load the data and form their features: the job ends, nothing
# written, no atf left
killed = path("killed.h5")
proc = subprocess.Popen(mpi(2, ["features", "--data", "fashion-mnist", "--split", "official",
                                "--n-train", "30000", "--n-test", "0", "--widths",
                                "784,128,128,10", "-o", killed]),
                        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        start_new_session=True)
victim = None
for _ in range(600):  # up to a minute: a loaded machine starts ranks slowly
    time.sleep(0.1)
    ranks = [pid for pid in leftovers(killed) if pid != str(proc.pid)]
    if len(ranks) == 2:
        victim = int(sorted(ranks, key=int)[-1])
        break
check(victim is not None, "killed rank: the ranks started")
if victim:
    time.sleep(0.3)
    check(not [f for f in os.listdir(scratch) if f.startswith("killed.h5.tmp")],
          "killed rank: the writing had begun before the kill (the test needs a slower start)")
    os.kill(victim, signal.SIGKILL)
ended_badly(proc, killed, "killed rank")
no_temporaries("killed rank")

finish("test_mpi_features")
