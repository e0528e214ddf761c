"""Progress off a terminal: the commands that report per epoch (`atf train`, the samples
experiment through `atf demo`) write a progress line only every ATF_PROGRESS_LOG_INTERVAL seconds
plus the first and the final one when stderr is a file, whatever the number of epochs; on a
terminal the line is redrawn in place. The bounds follow from the measured run time, which is
never asserted itself."""
import os
import pty
import re
import select
import shutil
import subprocess
import tempfile
import time
import unittest

ATF = os.environ.get("ATF", "build/drivers/atf")
ROOT = os.environ.get("ATF_SOURCE_ROOT", ".")


def interval(name, default):
    """The named interval of drivers/experiments/atf_experiments.h (seconds)."""
    path = os.path.join(ROOT, "drivers", "experiments", "atf_experiments.h")
    try:
        with open(path, encoding="utf-8") as f:
            m = re.search(r"#define\s+%s\s+([0-9.]+)" % name, f.read())
        return float(m.group(1)) if m else default
    except OSError:
        return default


LOG_INTERVAL = interval("ATF_PROGRESS_LOG_INTERVAL", 5.0)
TTY_INTERVAL = interval("ATF_PROGRESS_TTY_INTERVAL", 0.1)
EPOCHS = 3000
TRAIN = ["train", "--data", "synthetic", "--n-train", "200", "--n-test", "50", "--widths",
         "16,32,1", "--epochs", str(EPOCHS), "--batch", "8", "--lr", "0.01", "--stop", "final"]


def run_to_file(args):
    """Run with stderr redirected to a regular file; (exit code, stderr text, seconds)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        t0 = time.monotonic()
        p = subprocess.run([ATF, *args], stdout=subprocess.DEVNULL, stderr=err, timeout=600)
        elapsed = time.monotonic() - t0
        err.seek(0)
        return p.returncode, err.read(), elapsed


def bar_lines(text):
    """The progress lines: the bar, or an epoch line of any form."""
    return [l for l in text.splitlines() if l.startswith("[") or re.match(r"epoch\s", l)]


class OffATerminal(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="atf-progress-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check_bounded(self, text, elapsed, what):
        lines = bar_lines(text)
        bound = 2 + elapsed / LOG_INTERVAL
        self.assertGreaterEqual(len(lines), 1, f"{what}: no progress line in {text[:300]!r}")
        self.assertLessEqual(len(lines), bound,
                             f"{what}: {len(lines)} progress lines in {elapsed:.1f} s (at most "
                             f"2 + elapsed/{LOG_INTERVAL:g}):\n" + "\n".join(lines[:20]))
        self.assertNotIn("\r", text, f"{what}: terminal redraws in a file")
        return lines

    def test_train(self):
        code, text, elapsed = run_to_file([*TRAIN, "-o", os.path.join(self.dir, "net.h5")])
        self.assertEqual(code, 0, text)
        lines = self.check_bounded(text, elapsed, "atf train")
        # the final line is written, with the last epoch's numbers
        self.assertIn(f"{EPOCHS}/{EPOCHS}", lines[-1])
        self.assertIn(f"epoch {EPOCHS}/{EPOCHS}", lines[-1])

    def test_train_quiet(self):
        code, text, _ = run_to_file([*TRAIN, "--epochs", "50", "--quiet",
                                     "-o", os.path.join(self.dir, "q.h5")])
        self.assertEqual(code, 0, text)
        self.assertEqual(bar_lines(text), [])

    def test_demo(self):
        # the samples experiment: a callback per epoch of every trained network
        code, text, elapsed = run_to_file(["demo", "--out", os.path.join(self.dir, "demo"),
                                           "--ns", "20,40", "--seeds", "1", "--epochs", "400"])
        self.assertEqual(code, 0, text)
        lines = self.check_bounded(text, elapsed, "atf demo")
        self.assertIn("6/6", lines[-1])
        self.assertTrue(lines[-1].endswith("done"), lines[-1])


class OnATerminal(unittest.TestCase):
    def test_train_redraws_in_place(self):
        d = tempfile.mkdtemp(prefix="atf-progress-tty-")
        master, slave = pty.openpty()
        try:
            t0 = time.monotonic()
            p = subprocess.Popen([ATF, *TRAIN, "-o", os.path.join(d, "net.h5")],
                                 stdout=subprocess.DEVNULL, stderr=slave)
            os.close(slave)
            chunks = []
            while True:
                r, _, _ = select.select([master], [], [], 1.0)
                if r:
                    try:
                        data = os.read(master, 65536)
                    except OSError:  # the other side closed (Linux: EIO)
                        break
                    if not data:
                        break
                    chunks.append(data)
                elif p.poll() is not None:
                    break
            p.wait(timeout=600)
            elapsed = time.monotonic() - t0
        finally:
            os.close(master)
            shutil.rmtree(d, ignore_errors=True)
        text = b"".join(chunks).decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, text[-500:])
        redraws = text.count("\r\x1b[K")
        self.assertGreaterEqual(redraws, 1, text[:300])
        self.assertLessEqual(redraws, 3 + elapsed / TTY_INTERVAL, f"{redraws} redraws")
        # one header line and the final newline: the epochs do not scroll
        self.assertLessEqual(text.count("\n"), 3, text[:500])
        self.assertIn(f"{EPOCHS}/{EPOCHS}", text.rsplit("\r\x1b[K", 1)[-1])


if __name__ == "__main__":
    unittest.main()
