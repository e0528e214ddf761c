"""The interpolation methods over processes (the MPI build, -Dmpi=enabled): `mpirun -np K atf
solve --method admm` and `atf baseline --method gram` factorise the M × M Gram spread over the
ranks in ScaLAPACK's block-cyclic tiles (docs/record/solver.md §19, "The Gram over processes"), and
`--method alm` runs on the shared products alone.

Against the same command in one process, for K = 1, 2 and 3:
- admm and the Gram baseline: every block B and the objective within a relative 1e-12 (the
  distributed Cholesky adds in another order than LAPACK's, so not bit for bit; the test
  reports the difference), on a synthetic factored problem with columns of decaying scale, on
  a rank-deficient Gram (a repeated example: the eigendecomposition's pseudo-inverse) and on
  Fashion-MNIST features (--no-reduce);
- alm bit for bit (only the products are shared), stopped at an iteration limit (exit 4);
- `--method auto` under ranks takes the Gram where its shares fit this machine and says so;
- inconsistent constraints: exit 3, one message, the least-squares point written, within 1e-12;
- a rank killed while the ranks factorise the Gram: the job ends, no output, no process left.

usage: test_mpi_gram.py SCRATCH   (env ATF: the atf program; ATF_MPI=1 in an MPI build)"""
import json
import os
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments"))
from mpi_env import (ATF, check, fashion, finish, kill_a_rank, mpi, path,  # noqa: E402
                     run)

sys.path.insert(0, HERE)
import atf_testlib as T  # noqa: E402

fashion()


def messages(stderr):
    return [line for line in stderr.splitlines()
            if line.startswith("atf ") and ": note:" not in line]


def result(f):
    with h5py.File(f, "r") as h:
        return ({n: h["blocks"][n]["B"][...] for n in h["blocks"]}, float(h.attrs["objective"]),
                h.attrs["status"])


def one_json(name, p):
    lines = p.stdout.strip().splitlines()
    check(len(lines) == 1, f"{name}: one JSON line, got {p.stdout!r}")
    return json.loads(lines[0]) if len(lines) == 1 else {}


def against_one(name, problem, argv, expect=0, bits=False, ks=(1, 2, 3)):
    """argv (atf COMMAND … without the problem and -o) in one process, then under mpirun with
    K ranks: the same status, B and objective within a relative 1e-12 (bit for bit if bits)."""
    one = path(f"{name}_one.h5")
    run([ATF, argv[0], problem, "-o", one, "--quiet", "--json", *argv[1:]], expect=expect)
    ref, ref_obj, ref_status = result(one)
    for k in ks:
        out = path(f"{name}_{k}.h5")
        p = run(mpi(k, [argv[0], problem, "-o", out, "--quiet", "--json", *argv[1:]]),
                expect=expect)
        one_json(f"{name} K={k}", p)
        if expect == 3:
            msgs = messages(p.stderr)
            check(len(msgs) == 1 and "inconsistent" in msgs[0],
                  f"{name} K={k}: one message, got {msgs}")
        if not os.path.exists(out):
            check(False, f"{name} K={k}: no output")
            continue
        got, obj, status = result(out)
        worst = max(float(np.max(np.abs(got[n] - ref[n])) / np.max(np.abs(ref[n])))
                    for n in ref)
        same = all(np.array_equal(got[n], ref[n]) for n in ref) and obj == ref_obj
        check(status == ref_status, f"{name} K={k}: status {status} against {ref_status}")
        check(worst <= 1e-12 and abs(obj - ref_obj) <= 1e-12 * abs(ref_obj),
              f"{name} K={k}: relative difference {worst:.3g} of B, objective {obj!r} against "
              f"{ref_obj!r}")
        check(same or not bits, f"{name} K={k}: not bit for bit")
        print(f"{name} K={k}: {status}, max relative difference of B {worst:.3g}, "
              f"{'bit for bit' if same else 'not bit for bit'}")


SHAPES = [(80, 50), (50, 30), (30, 3)]  # 600 examples, 3 outputs: M = 1 800, 19 chunks
syn = T.factored_problem(np.random.default_rng(7), 600, 3, SHAPES, decay=True)
syn.write(path("syn.h5"))
# a repeated example (the last one a copy of the first): the Gram is singular, the constraints
# consistent (the eigendecomposition) or, with another target, inconsistent
for b in syn.blocks:
    b.H[-1] = b.H[0]
    b.D[-3:] = b.D[:3]
syn.r[-3:] = syn.r[:3]
syn.write(path("repeated.h5"))
syn.r[-3:] += 1.0
syn.write(path("inconsistent.h5"))

against_one("admm", path("syn.h5"), ["solve", "--method", "admm"])
against_one("gram-baseline", path("syn.h5"), ["baseline", "--method", "gram"])
against_one("admm-repeated", path("repeated.h5"), ["solve", "--method", "admm"], ks=(2, 3))
against_one("admm-inconsistent", path("inconsistent.h5"), ["solve", "--method", "admm"],
            expect=3, ks=(3,))
against_one("alm", path("syn.h5"), ["solve", "--method", "alm", "--max-iter", "4"], expect=4,
            bits=True)

# auto over processes: the Gram, its shares on this machine in the note; the same B as one
# process's Gram baseline
p = run(mpi(3, ["baseline", path("syn.h5"), "-o", path("auto_3.h5"), "--quiet", "--json"]))
js = one_json("auto K=3", p)
check(js.get("method") == "baseline" and "3 of 3 processes" in js.get("method_note", ""),
      f"auto K=3: the Gram, with the processes in the note, got {js.get('method')} "
      f"{js.get('method_note')!r}")
if os.path.exists(path("auto_3.h5")):
    got, obj, _ = result(path("auto_3.h5"))
    ref, ref_obj, _ = result(path("gram-baseline_one.h5"))
    check(all(np.allclose(got[n], ref[n], rtol=0, atol=1e-12 * np.max(np.abs(ref[n])))
              for n in ref), "auto K=3: B against one process's Gram baseline")

# Fashion-MNIST tangent features, 200 images, widths 784,32,32,10 (M = 2 000); the first layer's
# H has more columns than rows, whose reduction needs the whole factor: --no-reduce
fm = path("fm.h5")
run([ATF, "features", "--data", "fashion-mnist", "--split", "official", "--n-train", "200",
     "--n-test", "0", "--widths", "784,32,32,10", "-o", fm])
against_one("fashion-admm", fm, ["solve", "--method", "admm", "--penalty", "sq", "--no-reduce"],
            ks=(2, 3))

# a rank killed while the ranks form and factorise a larger Gram (M = 7 500)
big = T.factored_problem(np.random.default_rng(3), 2500, 3, [(300, 100), (100, 40), (40, 3)])
big.write(path("big.h5"))
killed_out = path("killed.h5")
kill_a_rank(["solve", path("big.h5"), "-o", killed_out, "--quiet", "--method", "admm"],
            killed_out, 2, 0.8, "killed rank")  # the Gram's tiles take seconds here

finish("test_mpi_gram")
