"""The example of docs/python.md (drivers/python/examples/torch_mlp.py) runs as written: it is
executed in a scratch directory and must print every line the doc shows (values may differ in the
last digits where torch's float32 training differs between machines, so only the lines' starts
and the shapes are compared)."""
import os
import subprocess
import sys
import tempfile

root = os.environ["ATF_SOURCE_ROOT"]
example = os.path.join(root, "drivers", "python", "examples", "torch_mlp.py")
with tempfile.TemporaryDirectory() as d:
    p = subprocess.run([sys.executable, example], cwd=d, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"the example failed (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
out = p.stdout
for want in ["test error: network", "NTK baseline", "adaptive (sq+sq)",
             "ntk (4, 3, 1, 1) adapted (4, 3, 1, 1)", "W1: d[:4]"]:
    if want not in out:
        sys.exit(f"the example's output lacks {want!r}:\n{out}")
print("ok: the docs/python.md example runs")
