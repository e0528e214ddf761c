"""Option parsing of every command (getopt_long, drivers/cli/atf_cli.h): `--opt value` and
`--opt=value` give identical outputs, positional arguments may come anywhere, an unknown option
or a missing value is one line and exit 2 (nothing written), and the data directory does not
depend on the working directory."""
import json
import re
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from test_experiments import combine_lsan_suppressions  # noqa: E402 (PLplot's leaks under LSan)

ATF = os.path.abspath(os.environ.get("ATF", "build/drivers/atf"))
SYN = ["--data", "synthetic:d=4", "--n-train", "10", "--n-test", "3", "--widths", "4,5,1"]


def run(*args, cwd=None, env=None):
    p = subprocess.run([ATF, *map(str, args)], capture_output=True, text=True, timeout=120,
                       cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def equals_form(args):
    """['--tol', '1e-6', ...] -> ['--tol=1e-6', ...] for the options that take a value."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and a in VALUED and i + 1 < len(args):
            out.append(f"{a}={args[i + 1]}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out


VALUED = {"--data", "--n-train", "--n-test", "--widths", "--seed", "--data-seed", "--classes",
          "--targets", "--teacher-seed", "--param", "--init", "--mlp", "--penalty", "--tol",
          "--max-iter", "--eps-abs", "--rho", "--alpha", "--structure", "--method", "--warm",
          "--log-every", "--output", "--from", "--to", "--num", "--t", "--epochs", "--batch",
          "--lr", "--momentum", "--shuffle-seed", "--save-mlp", "--save-init", "--mlp0",
          "--path-points", "--path-method", "--checkpoint-every", "--out", "--families",
          "--scales", "--structures", "--p", "--loss", "--lambdas", "--validation-fraction"}


def json_line(out):
    v = json.loads(out.strip().splitlines()[-1])
    # wall-clock times (*seconds) and the memory available when `auto` chose (its note states
    # it) are the only values allowed to differ between two runs
    if "method_note" in v:
        v["method_note"] = re.sub(r"[0-9.e+]+ GiB available", "… GiB available",
                                  v["method_note"])
    return {k: x for k, x in v.items() if not k.endswith("seconds")}


def write_idx(d, n=40, side=4):
    """A tiny MNIST-format data set (IDX files) in d."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(5)
    images = rng.integers(0, 256, (n, side, side), dtype=np.uint8)
    labels = (np.arange(n) % 2).astype(np.uint8)
    with open(os.path.join(d, "train-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, n, side, side) + images.tobytes())
    with open(os.path.join(d, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">BBBBI", 0, 0, 8, 1, n) + labels.tobytes())


class Options(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        cls.prob, cls.res = os.path.join(t, "p.h5"), os.path.join(t, "r.h5")
        cls.mlp, cls.out = os.path.join(t, "m.h5"), os.path.join(t, "out.h5")
        for args in (["features", *SYN, "-o", cls.prob, "--save-mlp", cls.mlp],
                     ["solve", cls.prob, "-o", cls.res, "--quiet"]):
            code, _, err = run(*args)
            assert code == 0, (args, err)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def same(self, a, b, compare=json_line, fresh=None):
        """Both command lines succeed with the same (JSON or plain) standard output; `fresh`:
        an output directory removed before each run (a sweep resumes what it finds)."""
        if fresh:
            shutil.rmtree(fresh, ignore_errors=True)
        ca, oa, ea = run(*a)
        if fresh:
            shutil.rmtree(fresh, ignore_errors=True)
        cb, ob, eb = run(*b)
        self.assertEqual(ca, 0, (a, ea))
        self.assertEqual(cb, 0, (b, eb))
        self.assertEqual(compare(oa), compare(ob), (a, b))
        return oa

    def forms(self, first, rest, compare=json_line, words=1, fresh=None):
        """`first + rest` against the --opt=value form of rest, with the positional arguments
        of `first` (after the command's `words` words) moved to the end, and to the middle."""
        cmd, pos = first[:words], first[words:]
        base = [*cmd, *pos, *rest]
        eq = equals_form(rest)
        self.same(base, [*cmd, *eq, *pos], compare, fresh)
        half = len(eq) // 2
        self.same(base, [*cmd, *eq[:half], *pos, *eq[half:]], compare, fresh)

    def test_solve(self):
        self.forms(["solve", self.prob], ["--output", self.out, "--penalty", "sq", "--tol",
                                          "1e-7", "--max-iter", "400", "--structure", "layer",
                                          "--rho", "1", "--quiet", "--json"])
        self.same(["solve", self.prob, "-o", self.out, "--json", "--quiet"],
                  ["solve", f"-o{self.out}", "-q", "--json", self.prob])

    def test_baseline(self):
        self.forms(["baseline", self.prob], ["--output", self.out, "--json", "--quiet"])

    def test_penalty(self):
        self.forms(["penalty", "pow:p=1.5"], ["--from", "0", "--to", "3", "--num", "7", "--t",
                                              "0.5"], compare=lambda s: s)
        # a value may begin with '-' (here: refused as before, by the range check)
        code, _, err = run("penalty", "sq", "--from=-1")
        self.assertEqual((code, err.count("\n")), (2, 1), err)
        self.assertIn("--from", err)

    def test_features(self):
        self.forms(["features"], [*SYN, "--seed", "3", "--bias", "--penalty", "abs", "--output",
                                  self.out, "--json"])

    def test_train(self):
        self.forms(["train"], [*SYN, "--epochs", "2", "--batch", "4", "--lr", "0.05",
                               "--init", "torch", "--output", self.out, "--json", "--quiet"])

    def test_predict(self):
        self.forms(["predict", self.prob, self.res], ["--json"])
        self.forms(["predict"], ["--mlp", self.mlp, *SYN, "--json"])

    def test_kernel(self):
        self.forms(["kernel", self.prob, self.res], ["--output", self.out, "--mlp0", self.mlp,
                                                     "--json"])

    def test_experiment_and_sweep(self):
        d = os.path.join(self.tmp.name, "pen")
        self.forms(["experiment", "penalties"], ["--out", d, "--num", "5", "--t", "0.5",
                                                 "--penalty", "pow:p=1.5", "--json"], words=2)
        d = os.path.join(self.tmp.name, "sweep")
        self.forms(["sweep", self.prob], ["--out", d, "--families", "sq", "--scales", "1",
                                          "--structures", "layer", "--max-iter", "200",
                                          "--quiet", "--json"], fresh=d)
        d = os.path.join(self.tmp.name, "path")
        self.forms(["path", self.prob], ["--out", d, "--loss", "squared", "--lambdas", "1,0.5",
                                         "--validation-fraction", "0.3", "--seed", "2",
                                         "--max-iter", "200", "--quiet", "--json"], fresh=d)

    def test_bad_options(self):
        """Every command: one line naming the option, exit 2, nothing on stdout or on disk."""
        needs_value = {"solve": "--tol", "baseline": "--output", "penalty": "--num",
                       "features": "--data", "train": "--epochs", "predict": "--mlp",
                       "kernel": "--mlp0", "sweep": "--out", "demo": "--out", "path": "--lambdas",
                       "experiment alignment": "--data", "experiment penalties": "--num",
                       "experiment samples": "--out"}
        for cmd, opt in needs_value.items():
            words = cmd.split()
            for args, words in [
                ([*words, "--bogus"], ["unknown option '--bogus'", f"atf {cmd} --help"]),
                ([*words, "--bogus=1", "x"], ["unknown option '--bogus'"]),
                ([*words, "-Z"], ["unknown option '-Z'"]),
                ([*words, opt], [f"option '{opt}' needs a value"]),
                ([*words, "--help=1"], ["option '--help' takes no value"]),
            ]:
                if os.path.exists(self.out):
                    os.remove(self.out)
                code, out, err = run(*args)
                self.assertEqual(code, 2, (args, err))
                self.assertEqual(out, "", args)
                self.assertEqual(err.count("\n"), 1, (args, err))
                self.assertTrue(err.startswith(f"atf {cmd}: "), (args, err))
                for w in words:
                    self.assertIn(w, err, args)
                self.assertFalse(os.path.exists(self.out), args)
        code, _, err = run("solve", self.prob, "-o", self.out, "--json=yes")
        self.assertEqual((code, err.strip()), (2, "atf solve: option '--json' takes no value"))
        code, _, err = run("solve", self.prob, "-o")
        self.assertEqual((code, err.strip()), (2, "atf solve: option '-o' needs a value"))
        code, _, err = run("features", "--n-t", "3", "-o", self.out)
        self.assertEqual(code, 2)
        self.assertIn("option '--n-t' is ambiguous (--n-train, --n-test)", err)
        code, _, err = run("--bogus")
        self.assertEqual((code, err.strip()), (2, "atf: unknown option '--bogus' (atf --help)"))

    def test_positionals(self):
        for args, word in [(["solve", self.prob, self.prob, "-o", self.out], "unexpected"),
                           (["penalty", "sq", "abs"], "unexpected argument 'abs'"),
                           (["features", "stray", *SYN, "-o", self.out], "unexpected argument"),
                           (["kernel", "-o", self.out], "missing PROBLEM.h5"),
                           (["solve", "-o", self.out], "missing PROBLEM.h5")]:
            code, out, err = run(*args)
            self.assertEqual((code, out, err.count("\n")), (2, "", 1), (args, err))
            self.assertIn(word, err, args)
        # "--" ends the options: what follows is positional even if it looks like an option
        code, _, err = run("penalty", "--num", "2", "--", "--from")
        self.assertEqual(code, 2)
        self.assertIn("--from", err)  # the spec '--from' is refused by the penalty parser


class DataDirectory(unittest.TestCase):
    """MNIST-format data found through the data roots, whatever the working directory."""

    def features(self, cwd, env, out):
        return run("features", "--data", "mnist", "--n-train", "10", "--n-test", "5",
                   "--widths", "16,4,1", "-o", out, "--json", cwd=cwd, env=env)

    def test_atf_data_and_working_directory(self):
        with tempfile.TemporaryDirectory() as t:
            root, empty1, empty2 = (os.path.join(t, n) for n in ("root", "e1", "e2"))
            write_idx(os.path.join(root, "mnist"))
            os.makedirs(empty1)
            os.makedirs(empty2)
            env = dict(os.environ, ATF_DATA=root)
            out = os.path.join(t, "p.h5")
            results = []
            for cwd in (t, "/", empty1):
                code, stdout, err = self.features(cwd, env, out)
                self.assertEqual(code, 0, (cwd, err))
                results.append(json_line(stdout))
            self.assertEqual(results[0], results[1])
            self.assertEqual(results[0], results[2])
            # ATF_DATA names the only roots: not found there is an error listing where it looked
            os.remove(out)
            code, stdout, err = self.features(t, dict(os.environ, ATF_DATA=f"{empty1}:{empty2}"),
                                              out)
            self.assertEqual((code, stdout, err.count("\n")), (2, "", 1), err)
            self.assertIn(os.path.join(empty1, "mnist"), err)
            self.assertIn(os.path.join(empty2, "mnist"), err)
            self.assertFalse(os.path.exists(out))

    def test_repository_data_from_anywhere(self):
        """Without ATF_DATA: the repository's data/mnist (when fetched) from any directory."""
        root = os.environ.get("ATF_SOURCE_ROOT", ".")
        if not os.path.exists(os.path.join(root, "data", "mnist", "train-labels-idx1-ubyte")):
            self.skipTest("data/mnist not fetched (scripts/fetch_mnist.sh)")
        env = {k: v for k, v in os.environ.items() if k != "ATF_DATA"}
        with tempfile.TemporaryDirectory() as t:
            out = os.path.join(t, "p.h5")
            args = ["features", "--data", "mnist", "--classes", "0,1", "--n-train", "10",
                    "--n-test", "5", "--widths", "784,4,1", "-o", out, "--json"]
            a = run(*args, cwd=root, env=env)
            b = run(*args, cwd=t, env=env)
            c = run(*args, cwd=t, env=dict(env, ATF_DATA=""))  # empty: as if unset
            for r in (a, b, c):
                self.assertEqual(r[0], 0, r[2])
            self.assertEqual(json_line(a[1]), json_line(b[1]))
            self.assertEqual(json_line(a[1]), json_line(c[1]))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        with warnings.catch_warnings():  # the helper leaves its input files to the collector
            warnings.simplefilter("ignore", ResourceWarning)
            combine_lsan_suppressions(scratch)  # the sweep and the experiment draw figures
        result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
