"""`mpirun -np K atf solve` (the MPI build, -Dmpi=enabled): each rank reads its shard of the
examples and the solver sums over them in an order that does not depend on K. Against the same
command in one process, for K = 2 and K = 3: every block B and the objective equal (the test
asks for a relative difference of at most 1e-12 and reports whether they are bit for bit), for
newton (with its Nyström preconditioner on a subsample) and fista, on a Fashion-MNIST problem
with 10 outputs; and the one process on 2 and 3 BLAS threads gives the one-thread run's bits. A rank fed a bad shard (NaN in its rows only), a rank killed mid-solve, a method
that does not run over processes and a rank-deficient factor each end the job with one message,
the usual exit code, no output file and no process left.

usage: test_mpi_solve.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import os
import shutil
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from mpi_env import (ATF, check, fashion, finish, kill_a_rank, mpi, path,  # noqa: E402
                     run)

FASHION = fashion()



def atf_messages(stderr):
    return [line for line in stderr.splitlines()
            if line.startswith("atf ") and not line.startswith("atf solve: note:")]


def blocks(f):
    with h5py.File(f, "r") as h:
        return {n: h["blocks"][n]["B"][...] for n in h["blocks"]}, float(h.attrs["objective"])


# 1 200 Fashion-MNIST images with widths 784,16,16,10: small, and of full rank after
# per-image standardisation (no subspace reduction, which over processes would be refused).
prob = path("p.h5")
run([ATF, "features", "--data", "fashion-mnist", "--split", "official", "--n-train", "1200",
     "--n-test", "0", "--widths", "784,16,16,10", "-o", prob])

cases = {
    "newton": ["--loss", "xent:lambda=0.5", "--penalty", "sq", "--method", "newton",
               "--newton-rank", "20", "--tol", "1e-9"],
    "fista": ["--loss", "xent:lambda=0.5", "--penalty", "sq", "--method", "fista",
              "--tol", "1e-9", "--max-iter", "300"],  # stops at the limit: exit 4
}
EXIT = {"newton": 0, "fista": 4}
for name, opts in cases.items():
    one = path(f"{name}_1.h5")
    run([ATF, "solve", prob, "-o", one, "--quiet", "--json", *opts], expect=EXIT[name])
    ref, ref_obj = blocks(one)
    for threads in (2, 3):
        out = path(f"{name}_1_{threads}threads.h5")
        run([ATF, "solve", prob, "-o", out, "--quiet", "--json", *opts], expect=EXIT[name],
            threads=threads)
        got, obj = blocks(out)
        check(all(np.array_equal(got[n], ref[n]) for n in ref) and obj == ref_obj,
              f"{name} on {threads} threads: not the one-thread run bit for bit (objective "
              f"{obj!r} vs {ref_obj!r})")
    for k in (2, 3):
        out = path(f"{name}_{k}.h5")
        p = run(mpi(k, ["solve", prob, "-o", out, "--quiet", "--json", *opts]), expect=EXIT[name])
        check(len(p.stdout.strip().splitlines()) == 1, f"{name} K={k}: one JSON line, got "
                                                         f"{p.stdout!r}")
        got, obj = blocks(out)
        worst = max(float(np.max(np.abs(got[n] - ref[n])) / np.max(np.abs(ref[n])))
                    for n in ref)
        same = all(np.array_equal(got[n], ref[n]) for n in ref) and obj == ref_obj
        check(worst <= 1e-12 and abs(obj - ref_obj) <= 1e-12 * abs(ref_obj),
              f"{name} K={k}: relative difference {worst:.3g} of B, objective {obj!r} vs "
              f"{ref_obj!r}")
        print(f"{name} K={k}: max relative difference of B {worst:.3g}, "
              f"{'bit for bit' if same else 'not bit for bit'}")

# a bad shard: NaN in the last example's rows, which only the last rank reads
bad = path("bad.h5")
shutil.copy(prob, bad)
with h5py.File(bad, "r+") as h:
    h["blocks/W2/H"][-1, 3] = np.nan
p = run(mpi(3, ["solve", bad, "-o", path("bad_out.h5"), "--quiet", *cases["newton"]]),
        expect=2)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "bad.h5" in msgs[0] and "W2" in msgs[0],
      f"bad shard: one message naming the file and block, got {msgs}")
check(not os.path.exists(path("bad_out.h5")), "bad shard: no output")

# a method that does not run over processes, and a factor whose reduction needs all of it
p = run(mpi(2, ["solve", prob, "-o", path("irls.h5"), "--quiet", "--method", "irls"]),
        expect=2)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "irls" in msgs[0], f"irls: one message, got {msgs}")
deficient = path("deficient.h5")
shutil.copy(prob, deficient)
with h5py.File(deficient, "r+") as h:
    h["blocks/W1/H"][:, :100] = 0.0  # 100 dead pixels: H of W1 loses 100 of 784 columns
p = run(mpi(2, ["solve", deficient, "-o", path("def.h5"), "--quiet", *cases["newton"]]),
        expect=2)
msgs = atf_messages(p.stderr)
check(len(msgs) == 1 and "--no-reduce" in msgs[0], f"rank-deficient: one message, got {msgs}")
run(mpi(2, ["solve", deficient, "-o", path("def.h5"), "--no-reduce", "--quiet",
            *cases["newton"]]))

# a rank killed mid-solve: the job ends, nothing written, no atf left
killed_out = path("killed.h5")
kill_a_rank(["solve", prob, "-o", killed_out, "--quiet", "--loss", "xent:lambda=0.5", "--penalty",
             "sq", "--method", "fista", "--tol", "1e-14", "--max-iter", "100000"], killed_out, 2,
            1.0, "killed rank")

finish("test_mpi_solve")
