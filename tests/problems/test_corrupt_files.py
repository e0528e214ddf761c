"""No input file crashes or hangs a command, failed writes end cleanly, outputs on failure.

1. Corrupt HDF5: seeded byte flips of a problem, a result, an MLP and a data set file (made
   with the atf CLI, the data set with h5py), each read by the commands that take it. Every run
   must end with exit 0, 2, 3 or 4 within its time limit; exit 2 gives one message line naming
   the corrupted file (notes "note: ..." about an edited file may come first). libhdf5 crashes
   or loops forever on some of these flips: atf refuses such a file (docs/formats.md).
   A valid file read under a tiny ATF_H5_CHECK_SECONDS is refused quickly: the time limit of
   the check (atf-h5check) is enforced.
2. Failed writes: with the file-size limit hit (RLIMIT_FSIZE, SIGXFSZ ignored or not) every
   writing command exits 1 with one line naming the output, keeps the old output and leaves no
   temporary; the experiment commands' figures (sweep, samples, path) likewise, with no figure,
   temporary or lock left. Unwritable outputs are refused with exit 2 before any work, by every
   command.
3. Outputs on failure: a numerical breakdown (exit 1) writes nothing and keeps the old output.

Usage: test_corrupt_files.py SCRATCH_DIR   (the atf binary comes from the ATF variable)
"""
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
import unittest

import h5py
import numpy as np

ATF = os.environ.get("ATF")
SCRATCH = None
# Sanitizer builds run every process 3-5x slower: fewer flips there.
SANITIZED = False
FLIPS_PLAIN, FLIPS_SANITIZED = 120, 40
CHECK_SECONDS = "10"  # atf-h5check's limit during the fuzz (a hang costs this much per read)
RUN_TIMEOUT = 120     # no run may take longer (subprocess timeout)


def run(args, env=None, timeout=RUN_TIMEOUT, preexec_fn=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([ATF] + args, capture_output=True, text=True, errors="replace",
                          timeout=timeout, env=e, preexec_fn=preexec_fn, cwd=SCRATCH)


def error_lines(stderr):
    """stderr lines (ended by newlines only) that are not notes."""
    lines = stderr.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l for l in lines if not l.split(": ", 1)[-1].startswith("note: ")]


def data_extents(path):
    """Byte ranges of the raw data of every contiguous dataset: the rest is metadata."""
    spans = []

    def visit(_, obj):
        if isinstance(obj, h5py.Dataset):
            off = obj.id.get_offset()
            if off is not None:
                spans.append((off, off + obj.id.get_storage_size()))
    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return spans


def flip_positions(path, count, rng):
    """Half anywhere in the file, half in its metadata (where libhdf5 is vulnerable)."""
    size = os.path.getsize(path)
    spans = data_extents(path)
    meta = [p for p in range(size) if not any(a <= p < b for a, b in spans)]
    return [rng.randrange(size) if k % 2 or not meta else rng.choice(meta)
            for k in range(count)]


class Fixtures:
    """Small valid files made with the atf CLI (the data set with h5py)."""

    @staticmethod
    def make():
        d = SCRATCH
        p = run(["features", "--data", "synthetic:d=6", "--n-train", "24", "--n-test", "8",
                 "--widths", "6,5,1", "--bias", "-o", "prob.h5", "--save-mlp", "mlp.h5"])
        assert p.returncode == 0, p.stderr
        p = run(["solve", "prob.h5", "-o", "res.h5", "--quiet", "--max-iter", "500"])
        assert p.returncode in (0, 4), p.stderr
        rng = np.random.default_rng(5)
        with h5py.File(os.path.join(d, "data.h5"), "w") as f:
            f["X"] = rng.standard_normal((20, 6))
            f["Y"] = rng.standard_normal((20, 1))
            f["labels"] = np.arange(20, dtype=np.int64) % 2


# For each file kind: the commands that read it (F is the corrupted copy; out.h5 the output).
SYN = ["--data", "synthetic:d=6", "--n-train", "24", "--n-test", "8"]
COMMANDS = {
    "prob.h5": [["solve", "F", "-o", "out.h5", "--quiet", "--max-iter", "200"],
                ["baseline", "F", "-o", "out.h5", "--quiet"],
                ["kernel", "F", "-o", "out.h5"],
                ["predict", "F", "res.h5"]],
    "res.h5": [["predict", "prob.h5", "F"],
               ["kernel", "prob.h5", "F", "-o", "out.h5"],
               ["solve", "prob.h5", "--warm", "F", "-o", "out.h5", "--quiet", "--max-iter",
                "50"]],
    "mlp.h5": [["features"] + SYN + ["--mlp", "F", "-o", "out.h5"],
               ["predict", "--mlp", "F"] + SYN,
               ["train", "--init", "F", "--epochs", "1", "--quiet", "-o", "out.h5"] + SYN],
    "data.h5": [["features", "--data", "F", "--mlp", "mlp.h5", "-o", "out.h5"],
                ["predict", "--mlp", "mlp.h5", "--data", "F"],
                ["train", "--data", "F", "--widths", "6,4,1", "--epochs", "1", "--quiet",
                 "-o", "out.h5"]],
}


class CorruptFiles(unittest.TestCase):
    tally = {}

    def fuzz(self, name, seed):
        rng = random.Random(seed)
        src = os.path.join(SCRATCH, name)
        with open(src, "rb") as f:
            blob = f.read()
        bad = os.path.join(SCRATCH, "flipped.h5")
        out = os.path.join(SCRATCH, "out.h5")
        nflips = FLIPS_SANITIZED if SANITIZED else FLIPS_PLAIN
        counts = {}
        for k, pos in enumerate(flip_positions(src, nflips, rng)):
            b = bytearray(blob)
            b[pos] ^= rng.randrange(1, 256)
            with open(bad, "wb") as f:
                f.write(b)
            cmds = COMMANDS[name]
            args = [a if a != "F" else "flipped.h5" for a in cmds[k % len(cmds)]]
            if os.path.exists(out):
                os.remove(out)
            with self.subTest(file=name, byte=pos, cmd=args[0]):
                try:
                    p = run(args, env={"ATF_H5_CHECK_SECONDS": CHECK_SECONDS})
                except subprocess.TimeoutExpired:
                    self.fail(f"atf {' '.join(args)} did not end within {RUN_TIMEOUT} s")
                counts[p.returncode] = counts.get(p.returncode, 0) + 1
                if ": refused: reading it " in p.stderr:
                    counts["refused unsafe"] = counts.get("refused unsafe", 0) + 1
                self.assertIn(p.returncode, (0, 2, 3, 4), f"{args}: {p.stderr!r}")
                if p.returncode == 2:
                    lines = error_lines(p.stderr)
                    self.assertEqual(len(lines), 1, p.stderr)
                    self.assertIn("flipped.h5", lines[0], p.stderr)
                    self.assertFalse(os.path.exists(out), "exit 2 wrote an output")
                leftovers = [f for f in os.listdir(SCRATCH) if ".tmp." in f]
                self.assertEqual(leftovers, [], "temporary files left")
        CorruptFiles.tally[name] = counts

    def test_problem(self):
        self.fuzz("prob.h5", 11)

    def test_result(self):
        self.fuzz("res.h5", 12)

    def test_mlp(self):
        self.fuzz("mlp.h5", 13)

    def test_dataset(self):
        self.fuzz("data.h5", 14)

    def test_time_limit(self):
        """The check of a valid file that takes longer than the limit is stopped: a file that
        makes libhdf5 loop forever costs at most the limit."""
        p = run(["features", "--data", "synthetic:d=64", "--n-train", "600", "--n-test", "0",
                 "--widths", "64,32,1", "-o", "large.h5"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(os.path.getsize(os.path.join(SCRATCH, "large.h5")), 300000)
        # (no wall time is asserted: the message says the limit stopped the check, and run()'s
        # timeout catches a hang)
        p = run(["solve", "large.h5", "-o", "never.h5"], env={"ATF_H5_CHECK_SECONDS": "1e-6"})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, "atf solve: large.h5: refused: reading it did not finish "
                         "within 1e-06 s (a corrupt file can hang libhdf5)\n")
        self.assertFalse(os.path.exists(os.path.join(SCRATCH, "never.h5")))
        # the same file with the default limit is read
        p = run(["baseline", "large.h5", "-o", "once.h5", "--quiet"])
        self.assertEqual(p.returncode, 0, p.stderr)


def fsize_limit(limit, ignore_sigxfsz):
    def apply():
        if ignore_sigxfsz:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


# Every command that writes a file: arguments, the output written.
WRITERS = [
    (["solve", "prob.h5", "-o", "W.h5", "--quiet", "--max-iter", "500"], "W.h5"),
    (["baseline", "prob.h5", "-o", "W.h5", "--quiet"], "W.h5"),
    (["features"] + SYN + ["--widths", "6,5,1", "-o", "W.h5"], "W.h5"),
    (["train"] + SYN + ["--widths", "6,5,1", "--epochs", "1", "--quiet", "-o", "W.h5"], "W.h5"),
    (["predict", "prob.h5", "res.h5", "-o", "W.h5"], "W.h5"),
    (["kernel", "prob.h5", "res.h5", "-o", "W.h5"], "W.h5"),
]


class FailedWrites(unittest.TestCase):
    def test_file_size_limit(self):
        old = b"the previous output\n"
        for args, target in WRITERS:
            for ignore in (True, False):
                with self.subTest(cmd=" ".join(args[:2]), sigxfsz_ignored=ignore):
                    path = os.path.join(SCRATCH, target)
                    with open(path, "wb") as f:
                        f.write(old)
                    p = run(args, preexec_fn=fsize_limit(4096, ignore))
                    self.assertEqual(p.returncode, 1, p.stderr)
                    lines = p.stderr.splitlines()
                    self.assertEqual(len(lines), 1, p.stderr)
                    self.assertTrue(lines[0].startswith(f"atf {args[0]}: {target}: cannot "),
                                    p.stderr)
                    self.assertIn("File too large", lines[0])
                    with open(path, "rb") as f:
                        self.assertEqual(f.read(), old, "the old output was not kept")
                    self.assertEqual([f for f in os.listdir(SCRATCH) if ".tmp." in f], [])

    def test_figures_at_the_file_size_limit(self):
        """The experiment commands' figures are written atomically and checked like their
        tables: a figure cut at the file-size limit (PLplot does not report the failed write)
        fails the run with exit 1 and one line naming it, leaves no figure, temporary or lock;
        the same command without the limit then draws it (nothing to re-run)."""
        run(["features", "--data", "synthetic:d=6,r=2", "--n-train", "40", "--n-test", "60",
             "--widths", "6,10,10,1", "-o", "fig_prob.h5"])
        commands = [  # the tables and results stay below 30 000 bytes, the SVG figures do not
            (["sweep", "fig_prob.h5", "--out", "D", "--families", "sq", "--scales", "1e-2,1",
              "--structures", "layer", "--quiet"], "sweep"),
            (["experiment", "samples", "--ns", "20,40", "--seeds", "1", "--n-test", "30",
              "--hidden", "8", "--models", "ntk,p16", "--out", "D"], "samples"),
            (["path", "fig_prob.h5", "--loss", "squared", "--lambdas", "1,10", "-o", "D",
              "--quiet"], "path"),
        ]
        for args, name in commands:
            for ignore in (True, False):
                with self.subTest(cmd=" ".join(args[:2]), sigxfsz_ignored=ignore):
                    out = f"fig_{name}_{int(ignore)}"
                    argv = [out if a == "D" else a for a in args]
                    p = run(argv, preexec_fn=fsize_limit(30000, ignore))
                    self.assertEqual(p.returncode, 1, p.stderr)
                    lines = [l for l in error_lines(p.stderr) if l.startswith("atf ")]
                    self.assertEqual(len(lines), 1, p.stderr)  # (besides the progress lines)
                    self.assertIn(f"{out}/{name}.svg: could not write the figure", lines[0])
                    left = os.listdir(os.path.join(SCRATCH, out))
                    self.assertEqual([f for f in left if f.endswith((".svg", ".png"))
                                      or ".tmp." in f or f.endswith(".lock")], [], left)
                    p = run(argv)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    with open(os.path.join(SCRATCH, out, f"{name}.svg")) as f:
                        self.assertTrue(f.read().rstrip().endswith("</svg>"))

    def test_unwritable_outputs(self):
        """Refused with exit 2 before any work: the input is missing too, yet the message is
        about the output."""
        with open(os.path.join(SCRATCH, "plainfile"), "w") as f:
            f.write("x")
        if os.path.exists(os.path.join(SCRATCH, "W.h5")):
            os.remove(os.path.join(SCRATCH, "W.h5"))
        cases = [
            ["solve", "missing.h5", "-o", "nodir/W.h5"],
            ["baseline", "missing.h5", "-o", "nodir/W.h5"],
            ["features", "--data", "missing.h5", "-o", "nodir/W.h5"],
            ["features", "--data", "missing.h5", "-o", "W.h5", "--save-mlp", "nodir/W.h5"],
            ["train", "--data", "missing.h5", "-o", "nodir/W.h5"],
            ["train", "--data", "missing.h5", "-o", "W.h5", "--save-init", "nodir/W.h5"],
            ["predict", "missing.h5", "missing2.h5", "-o", "nodir/W.h5"],
            ["predict", "--mlp", "missing.h5", "--data", "missing.h5", "-o", "nodir/W.h5"],
            ["kernel", "missing.h5", "-o", "nodir/W.h5"],
            ["kernel", "missing.h5", "-o", "."],
            ["sweep", "missing.h5", "--out", "plainfile/sub"],
            ["experiment", "alignment", "--out", "plainfile/sub"],
            ["experiment", "penalties", "--out", "plainfile/sub"],
            ["experiment", "samples", "--out", "plainfile/sub"],
            ["demo", "--out", "plainfile/sub"],
        ]
        for args in cases:
            with self.subTest(cmd=" ".join(args)):
                p = run(args, timeout=60)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertNotIn("missing", p.stderr)
                self.assertTrue("nodir" in p.stderr or "plainfile" in p.stderr
                                or "directory" in p.stderr, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(SCRATCH, "W.h5")))


class OutputsOnFailure(unittest.TestCase):
    def test_numerical_breakdown_writes_nothing(self):
        """Exit 1 writes nothing and keeps the old output. Provoked by a warm start whose
        entries are near the largest double (the iteration overflows) and by a problem whose
        data are 1e300 with the abs penalty; at least one of them must break down."""
        warm = os.path.join(SCRATCH, "huge_warm.h5")
        shutil.copy(os.path.join(SCRATCH, "res.h5"), warm)
        with h5py.File(warm, "r+") as f:
            for b in f["blocks"]:
                B = f["blocks"][b]["B"]
                B[...] = np.full(B.shape, 1e307)
        rng = np.random.default_rng(1)
        with h5py.File(os.path.join(SCRATCH, "huge.h5"), "w") as f:
            f.attrs.update(format="atf-problem", version=1, samples=6, outputs=1)
            f["r"] = rng.standard_normal(6) * 1e300
            g = f.create_group("blocks/W")
            g.attrs.update(index=0, rows=4, cols=3, operator="dense", penalty="abs",
                           structure="matrix")
            g["J"] = rng.standard_normal((6, 12))
        provocations = [
            ["solve", "prob.h5", "--warm", "huge_warm.h5", "--max-iter", "5", "--quiet"],
            ["solve", "huge.h5", "--quiet", "--max-iter", "200"],
        ]
        old = b"the previous output\n"
        broke = 0
        for args in provocations:
            with self.subTest(cmd=" ".join(args)):
                path = os.path.join(SCRATCH, "kept.h5")
                with open(path, "wb") as f:
                    f.write(old)
                p = run(args + ["-o", "kept.h5"])
                self.assertIn(p.returncode, (0, 1, 2, 3, 4), p.stderr)
                with open(path, "rb") as f:
                    written = f.read() != old
                if p.returncode in (1, 2):
                    self.assertFalse(written, "a failure replaced the output")
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                if p.returncode == 1:
                    broke += 1
                    self.assertIn("kept.h5 not written", p.stderr)
                elif p.returncode != 2:  # solved, infeasible, max_iterations: written
                    self.assertTrue(written, p.stderr)
        self.assertGreater(broke, 0, "no provocation broke down: find a new one")


def main():
    global SCRATCH, SANITIZED
    SCRATCH = os.path.abspath(sys.argv[1])
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    with open(ATF, "rb") as f:
        SANITIZED = b"__asan_init" in f.read()
    Fixtures.make()
    t0 = time.monotonic()
    prog = unittest.main(argv=[sys.argv[0], "-v"], exit=False)
    for name, counts in sorted(CorruptFiles.tally.items()):
        print(f"{name}: exit codes {counts}")
    print(f"{'sanitized' if SANITIZED else 'plain'} build: {time.monotonic() - t0:.1f} s")
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
