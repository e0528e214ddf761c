#!/usr/bin/env python3
"""Per-seed counts beside the means: paired comparisons of the models of `atf experiment samples`
tables, seed by seed (the same θ0 and the same examples for every model of a seed).

    /usr/bin/python3 scripts/per_seed_counts.py TABLE.csv [TABLE.csv ...]
        [--pair A B ...] [--metric test_error|test_rel_mse|test_xent] [--level X]

For every n and every pair A B (--pair, repeated; default: every adaptive model present against every fixed-feature
model present, as in the sample-complexity ratios) it prints the mean and standard deviation of
A − B over the seeds where both have a row with status `solved` or `trained`, and in how many seeds
A is behind (larger), ahead (smaller) or level (|A − B| ≤ --level; default 0, exactly equal).
Test errors are printed in points (×100). Then, per n, in how many seeds each model is the best of
all the models of that seed (a strict minimum). Models are named by the last field of the row's
key (`p16-xent:sq`, `network`, ...); the older names `adaptive` and `mlp` read as `p16` and
`network`. The metric defaults to test_error, and to test_rel_mse where a table has no finite
test error (regression). Several tables are read as one (their keys must not collide).
"""
import csv
import math
import statistics as st
import sys
from collections import defaultdict

FIXED = ("ntk", "ntk-xent", "ntk-ridge", "ntk-sgd")
ADAPTIVE = ("p16", "p16-xent", "p16-ridge", "factorized-sgd", "network")
OLD_NAMES = {"adaptive": "p16", "mlp": "network"}
USABLE = ("solved", "trained")


def fail(msg):
    sys.exit(f"per_seed_counts: {msg}")


def parse_args(argv):
    opts = {"pairs": None, "metric": None, "level": 0.0, "tables": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        need = 2 if a == "--pair" else 1 if a in ("--metric", "--level") else 0
        if i + need >= len(argv):
            fail(f"{a} needs {need} value{'s' if need > 1 else ''}")
        if a == "--pair":
            opts["pairs"] = (opts["pairs"] or []) + [(argv[i + 1], argv[i + 2])]
        elif a == "--metric":
            v = argv[i + 1]
            if v not in ("test_error", "test_rel_mse", "test_xent"):
                fail(f"--metric {v}: want test_error, test_rel_mse or test_xent")
            opts["metric"] = v
        elif a == "--level":
            try:
                opts["level"] = float(argv[i + 1])
            except ValueError:
                fail(f"--level {argv[i + 1]}: not a number")
        elif a.startswith("--"):
            fail(f"unknown option {a}")
        else:
            opts["tables"].append(a)
        i += need + 1
    if not opts["tables"]:
        fail("no table given (usage: per_seed_counts.py TABLE.csv ... [--pair A B ...])")
    return opts


def model_name(row):
    name = row["key"].split("|")[-1] if row.get("key") else row["method"]
    return OLD_NAMES.get(name, name)


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return math.nan
    return v


def read(tables):
    rows = []
    for path in tables:
        try:
            with open(path, newline="") as fh:
                got = list(csv.DictReader(fh))
        except OSError as e:
            fail(f"{path}: {e.strerror}")
        for need in ("n", "seed", "status"):
            if got and need not in got[0]:
                fail(f"{path}: no column '{need}' (not a samples table)")
        rows += [(path, r) for r in got]
    return rows


def family(name):
    """The model kind of a name (p16-xent:sq -> p16-xent)."""
    return name.split(":", 1)[0]


def main():
    o = parse_args(sys.argv[1:])
    rows = read(o["tables"])
    metric = o["metric"]
    if metric is None:
        finite = any(math.isfinite(number(r.get("test_error"))) for _, r in rows
                     if r["status"] in USABLE)
        metric = "test_error" if finite else "test_rel_mse"
    scale = 100.0 if metric == "test_error" else 1.0
    unit = " pts" if metric == "test_error" else ""
    value = defaultdict(dict)  # (n, seed) -> model -> metric
    seen = {}
    for path, r in rows:
        if r["status"] not in USABLE:
            continue
        v = number(r.get(metric))
        if not math.isfinite(v):
            continue
        k, m = (int(r["n"]), int(r["seed"])), model_name(r)
        if m in value[k] and seen[(k, m)] != path:
            fail(f"{path}: n={k[0]} seed={k[1]} {m} is also in {seen[(k, m)]}")
        value[k][m] = v
        seen[(k, m)] = path
    models = sorted({m for d in value.values() for m in d})
    pairs = o["pairs"]
    if pairs is None:
        pairs = [(a, b) for b in models if family(b) in FIXED
                 for a in models if family(a) in ADAPTIVE]
    for a, b in pairs:
        for m in (a, b):
            if m not in models:
                fail(f"model {m} has no usable row (models: {', '.join(models)})")
    print(f"# {', '.join(o['tables'])}: {metric}{' in points' if unit else ''}; "
          "A − B per seed (behind: A larger)")
    for n in sorted({k[0] for k in value}):
        runs = [value[k] for k in sorted(value) if k[0] == n]
        print(f"\nn = {n} ({len(runs)} seeds)")
        for a, b in pairs:
            d = [scale * (t[a] - t[b]) for t in runs if a in t and b in t]
            if not d:
                continue
            k = 2 if unit else 4
            sd = f" ± {st.stdev(d):.{k}f}" if len(d) > 1 else ""
            behind = sum(x > o["level"] * scale for x in d)
            ahead = sum(x < -o["level"] * scale for x in d)
            print(f"  {a} − {b}: {st.mean(d):+.{k}f}{sd}{unit}; behind in "
                  f"{behind}, ahead in {ahead}, level in {len(d) - behind - ahead} of {len(d)}")
        best = defaultdict(int)
        for t in runs:
            lo = min(t.values())
            winners = [m for m, v in t.items() if v == lo]
            if len(winners) == 1:
                best[winners[0]] += 1
        if best:
            print("  best of all the seed's models: " + ", ".join(
                f"{m} {c}/{len(runs)}" for m, c in sorted(best.items(), key=lambda x: -x[1])))


if __name__ == "__main__":
    main()
