"""`atf penalty` at extreme arguments: the CSV never holds NaN, the --log grid spans 1e-300 to
1e300 without overflowing (its ratio 1e600 is not a double), and zsq:scale=1e-300 at v = 1e300
is 2√γ v − γ = 2e150 (it printed -nan). Runs the binary in $ATF."""
import csv
import io
import math
import os
import subprocess
import unittest

ATF = os.environ.get("ATF", "build/drivers/atf")


def table(*args):
    p = subprocess.run([ATF, "penalty", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert rows[0] == ["v", "omega_tilde", "z", "prox", "s1", "s2"], rows[0]
    return [[float(x) for x in row] for row in rows[1:]]


class Extremes(unittest.TestCase):
    def test_zsq_tiny_scale(self):
        rows = table("zsq:scale=1e-300", "--from", "0", "--to", "1e300")
        self.assertEqual(len(rows), 101)
        for row in rows:
            self.assertFalse(any(math.isnan(x) for x in row), row)
        v, value = rows[-1][0], rows[-1][1]
        self.assertEqual(v, 1e300)
        self.assertAlmostEqual(value / 2e150, 1.0, delta=1e-12)

    def test_log_grid_over_600_decades(self):
        for spec in ("sq", "abs:scale=1e-300", "zsq:scale=1e300", "logsq", "sq+abs",
                     "pow:p=0.5", "nuclear", "fixed"):
            rows = table(spec, "--from", "1e-300", "--to", "1e300", "--num", "61", "--log",
                         "--t", "1e300")
            vs = [row[0] for row in rows]
            self.assertEqual((vs[0], vs[-1]), (1e-300, 1e300), spec)
            self.assertTrue(all(b > a for a, b in zip(vs, vs[1:])), spec)
            for row in rows:
                self.assertFalse(any(math.isnan(x) for x in row), (spec, row))
                self.assertTrue(0.0 <= row[3] <= row[0], (spec, row))  # 0 ≤ prox ≤ v


if __name__ == "__main__":
    unittest.main()
