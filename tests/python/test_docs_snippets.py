"""docs/python.md is a notebook a reader can run top to bottom: every ```python block in it runs
as written, each alone (self-contained: no name from another block), in a scratch directory, with
this build's package. A block that needs a data set this machine lacks says so in its first line
(`# needs: fashion-mnist`) and is skipped when the data is absent, with a line saying so."""
import os
import re
import subprocess
import sys
import tempfile

import atf_env

root = os.environ["ATF_SOURCE_ROOT"]
DOC = os.path.join(root, "docs", "python.md")
DATA_ROOTS = [os.environ.get("ATF_DATA", ""), os.path.join(root, "data"), "/usr/share/datasets"]


def blocks(text):
    """(line number, code) of every ```python block."""
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        yield text[:m.start()].count("\n") + 1, m.group(1)


def missing_data(code):
    """The data set a block needs and this machine lacks, or None."""
    m = re.match(r"#\s*needs:\s*([\w-]+)", code)
    if not m:
        return None
    name = m.group(1)
    have = any(r and os.path.exists(os.path.join(r, name, "train-images-idx3-ubyte")) or
               r and os.path.exists(os.path.join(r, name, "train-images-idx3-ubyte.gz"))
               for r in DATA_ROOTS)
    return None if have else name


with open(DOC, encoding="utf-8") as f:
    text = f.read()
found = list(blocks(text))
atf_env.check(len(found) >= 5, f"docs/python.md has its snippets ({len(found)} found)")
for line, code in found:
    lack = missing_data(code)
    if lack:
        print(f"skip: docs/python.md:{line} needs {lack}, absent here")
        continue
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([sys.executable, "-c", code], cwd=d, capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    atf_env.check(p.returncode == 0, f"docs/python.md:{line}: the snippet fails (exit "
                  f"{p.returncode}):\n{p.stdout[-1500:]}\n{p.stderr[-3000:]}")
atf_env.finish("test_docs_snippets")
