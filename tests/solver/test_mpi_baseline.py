"""`mpirun -np K atf baseline --method cg` (the MPI build, -Dmpi=enabled): each rank reads its shard
of the examples, and the CG baseline's products, preconditioner and Krylov steps give every rank the
bits of one process (docs/record/solver.md §19, "The CG baseline over processes"). Against the same
command in one process, for K = 1, 2 and 3: every block B and the objective equal (the test asks for
a relative difference of at most 1e-12 and reports whether they are bit for bit), with the default
preconditioner (nystrom-block: several blocks of pivots) and block Jacobi (--precond jacobi), on a
synthetic factored problem whose shares are small enough for OpenBLAS's small-matrix kernel; `atf
solve --method cg` gives the same bits; on Fashion-MNIST features (rank-deficient H: `atf solve
--method cg --no-reduce`) K = 3 against one process. A method that does not run over processes
(irls), a rank-deficient factor under `atf baseline` and a rank fed a bad shard (NaN in its rows
only) each end the job with one message, exit 2, no output file and no process left. (The Gram
baseline and `--method auto` over processes: test_mpi_gram.py.)

usage: test_mpi_baseline.py SCRATCH (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import json
import os
import shutil
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments"))
from mpi_env import (ATF, check, fashion, finish, leftovers, mpi, path,  # noqa: E402
                     run)

sys.path.insert(0, HERE)
import atf_testlib as T  # noqa: E402

FASHION = fashion()



def atf_messages(stderr):
    return [line for line in stderr.splitlines()
            if line.startswith("atf ") and ": note:" not in line]


def blocks(f):
    with h5py.File(f, "r") as h:
        return {n: h["blocks"][n]["B"][...] for n in h["blocks"]}, float(h.attrs["objective"])


def compare(name, ref_file, out_file):
    """B and the objective of out_file against ref_file: at most 1e-12 relative; says whether
    they are bit for bit."""
    ref, ref_obj = blocks(ref_file)
    got, obj = blocks(out_file)
    worst = max(float(np.max(np.abs(got[n] - ref[n])) / np.max(np.abs(ref[n]))) for n in ref)
    same = all(np.array_equal(got[n], ref[n]) for n in ref) and obj == ref_obj
    check(worst <= 1e-12 and abs(obj - ref_obj) <= 1e-12 * abs(ref_obj),
          f"{name}: relative difference {worst:.3g} of B, objective {obj!r} vs {ref_obj!r}")
    print(f"{name}: max relative difference of B {worst:.3g}, "
          f"{'bit for bit' if same else 'not bit for bit'}")


def one_json(name, p):
    """The one JSON line a job prints (rank 0's)."""
    lines = p.stdout.strip().splitlines()
    check(len(lines) == 1, f"{name}: one JSON line, got {p.stdout!r}")
    return json.loads(lines[0]) if len(lines) == 1 else {}


def refused(name, cmd, out, needle):
    """The job ends with exit 2, one message containing needle, no output, nothing left."""
    p = run(cmd, expect=2)
    msgs = atf_messages(p.stderr)
    check(len(msgs) == 1 and needle in msgs[0], f"{name}: one message with {needle!r}, got {msgs}")
    check(not os.path.exists(out), f"{name}: no output")
    check(not leftovers(out), f"{name}: processes left: {leftovers(out)}")


# A synthetic factored problem: 600 examples (19 chunks of 32: 6, 6 and 7 chunks at K = 3),
# 3 outputs, 5 590 variables, columns of decaying scale. A share's GEMMs fall below OpenBLAS's
# small-matrix threshold where the whole problem's do not, which the chunk-by-chunk products
# must not notice.
syn = T.factored_problem(np.random.default_rng(7), 600, 3, [(80, 50), (50, 30), (30, 3)],
                         decay=True).write(path("syn.h5"))

for precond in ("auto", "jacobi"):
    one = path(f"{precond}_1.h5")
    p = run([ATF, "baseline", syn, "-o", one, "--method", "cg", "--precond", precond,
             "--quiet", "--json"])
    js = one_json(f"{precond} K=1", p)
    check(js.get("method") == "cg" and js.get("status") == "solved", f"{precond} K=1: {js}")
    name = "nystrom-block" if precond == "auto" else precond
    check(js.get("method_note", "").startswith(f"cg: {name} preconditioner"),
          f"{precond} K=1: note {js.get('method_note')!r}")
    for k in (1, 2, 3):
        out = path(f"{precond}_{k}_mpi.h5")
        p = run(mpi(k, ["baseline", syn, "-o", out, "--method", "cg", "--precond", precond,
                        "--quiet", "--json"]))
        js = one_json(f"{precond} K={k}", p)
        check(js.get("status") == "solved", f"{precond} K={k}: {js}")
        compare(f"{precond} K={k}", one, out)

# atf solve --method cg: the same bits
out = path("solve_2.h5")
run(mpi(2, ["solve", syn, "-o", out, "--method", "cg", "--quiet"]))
compare("solve --method cg K=2", path("auto_1.h5"), out)

# Fashion-MNIST tangent features: 800 images of 3 classes, widths 784,32,32,3. Some pixels never
# vary over these images, so H of W1 is not of full rank: under ranks atf baseline (which always
# reduces) refuses it, atf solve --method cg --no-reduce runs.
fm = path("fm.h5")
run([ATF, "features", "--data", "fashion-mnist", "--split", "official", "--classes", "0,1,2",
     "--n-train", "800", "--n-test", "0", "--widths", "784,32,32,3", "-o", fm])
one = path("fm_1.h5")
run([ATF, "solve", fm, "-o", one, "--method", "cg", "--no-reduce", "--quiet"])
out = path("fm_3.h5")
run(mpi(3, ["solve", fm, "-o", out, "--method", "cg", "--no-reduce", "--quiet"]))
compare("fashion-mnist solve --method cg --no-reduce K=3", one, out)
out = path("fm_red.h5")
refused("rank-deficient baseline", mpi(2, ["baseline", fm, "-o", out, "--method", "cg",
                                           "--quiet"]), out, "--no-reduce")

# what does not run over processes
out = path("interp.h5")
refused("solve irls", mpi(2, ["solve", syn, "-o", out, "--method", "irls", "--quiet"]), out,
        "does not run over several processes")

# a bad shard: NaN in the last example's rows, which only the last rank reads
bad = path("bad.h5")
shutil.copy(syn, bad)
with h5py.File(bad, "r+") as h:
    h["blocks/W2/H"][-1, 3] = np.nan
out = path("bad_out.h5")
p = run(mpi(3, ["baseline", bad, "-o", out, "--method", "cg", "--quiet"]), expect=2)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "bad.h5" in msgs[0] and "W2" in msgs[0],
      f"bad shard: one message naming the file and block, got {msgs}")
check(not os.path.exists(out), "bad shard: no output")
check(not leftovers(out), f"bad shard: processes left: {leftovers(out)}")

finish("test_mpi_baseline")
