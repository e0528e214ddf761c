"""The examples of docs/python.md (drivers/python/examples/torch_mlp.py and penalized_path.py)
run as written: each is executed in a scratch directory and must print every line the doc shows (values may differ in the
last digits where torch's float32 training differs between machines, so only the lines' starts
and the shapes are compared)."""
import os
import subprocess
import sys
import tempfile

root = os.environ["ATF_SOURCE_ROOT"]
EXPECTED = {
    "torch_mlp.py": ["test error: network", "NTK baseline", "adaptive (sq+sq)",
                     "ntk (4, 3, 1, 1) adapted (4, 3, 1, 1)", "W1: d[:4]"],
    "penalized_path.py": ["atf.Problem(samples=300, outputs=3", "<atf.Result solved",
                          "test error", "lambda     3: validation error",
                          "lambda  0.03: validation error", "best lambda"],
}
for name, wanted in EXPECTED.items():
    example = os.path.join(root, "drivers", "python", "examples", name)
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([sys.executable, example], cwd=d, capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            sys.exit(f"{name} failed (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
    for want in wanted:
        if want not in p.stdout:
            sys.exit(f"{name}: the output lacks {want!r}:\n{p.stdout}")
print("ok: the docs/python.md examples run")
