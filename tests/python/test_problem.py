"""atf.Problem built in Python, written, read back by h5py and by atf.Problem.read; the
fingerprint against the CLI's record of it."""
import os

import h5py
import numpy as np

import atf
import atf_env
import pyprob

count = 0
H, D, J, S, r, f0, labels = pyprob.arrays()
prob = pyprob.build()
d = atf_env.scratch()
path = os.path.join(d, "p.h5")
prob.write(path)

with h5py.File(path, "r") as f:  # the file as an independent reader sees it
    count += 9
    atf_env.check(f.attrs["format"] in (b"atf-problem", "atf-problem"), "format attribute")
    atf_env.check(int(f.attrs["samples"]) == pyprob.N and int(f.attrs["outputs"]) == pyprob.C,
                  "samples, outputs")
    atf_env.check(np.array_equal(f["r"][...], r), "/r")
    atf_env.check(np.array_equal(f["f0"][...], f0), "/f0")
    atf_env.check(np.array_equal(f["labels"][...], labels), "/labels")
    g = f["blocks"]
    atf_env.check(np.array_equal(g["W1/H"][...], H) and np.array_equal(g["W1/D"][...], D),
                  "factored H, D")
    atf_env.check(np.array_equal(g["W2/J"][...], J), "dense J")
    atf_env.check(np.array_equal(g["W3/J_indptr"][...], S.indptr)
                  and np.array_equal(g["W3/J_indices"][...], S.indices)
                  and np.array_equal(g["W3/J_data"][...], S.data), "sparse CSR")
    atf_env.check([int(g[n].attrs["index"]) for n in ("W1", "W2", "W3")] == [0, 1, 2], "indices")

back = atf.Problem.read(path)
count += 6
atf_env.check(back.fingerprint == prob.fingerprint and len(prob.fingerprint) == 32, "fingerprint")
atf_env.check(np.array_equal(back.r, r) and np.array_equal(back.f0, f0)
              and np.array_equal(back.labels, labels), "r, f0, labels read back")
b1, b2, b3 = back.blocks
atf_env.check(np.array_equal(b1.H, H) and np.array_equal(b1.D, D) and b1.rows == 4
              and b1.cols == 3, "factored block read back")
atf_env.check(np.array_equal(b2.J, J) and (b2.rows, b2.cols) == (2, 2), "dense block read back")
atf_env.check((b3.csr != S).nnz == 0 and (b3.rows, b3.cols) == (3, 2), "sparse block read back")
atf_env.check([b.penalty for b in back.blocks] == ["sq"] * 3, "penalties read back")

# a copy built from the blocks read back has the same content, hence the same fingerprint
again = atf.Problem(back.r, back.blocks, back.samples, back.outputs)
count += 2
atf_env.check(again.fingerprint == prob.fingerprint, "fingerprint of a rebuilt problem")
atf_env.check(atf.Problem(r * 2, back.blocks, pyprob.N, pyprob.C).fingerprint
              != prob.fingerprint, "fingerprint depends on r")

# the CLI records the content fingerprint in its result
atf_env.run("baseline", path, "-o", os.path.join(d, "b.h5"), "--quiet")
with h5py.File(os.path.join(d, "b.h5"), "r") as f:
    stored = f.attrs["problem_fingerprint"]
    stored = stored.decode() if isinstance(stored, bytes) else str(stored)
count += 1
atf_env.check(stored == prob.fingerprint, "CLI result records the same fingerprint")
atf_env.finish("test_problem", count)
