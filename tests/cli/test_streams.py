"""The commands run in another process too (libatf_cli.so, drivers/cli/atf_cli_host.h: the
Python package's atf.path, atf.sweep, atf.train and atf.cli), where their output must reach the
host's streams and never the process's own: every command file writes through atf_cli_stdout()
and atf_cli_stderr(). Only main.c (the program's process) and cli_mpi.c (ranks, only under
mpirun) may name stdout and stderr. A scan of the sources, so that a new line cannot slip."""
import os
import re
import sys

root = os.environ.get("ATF_SOURCE_ROOT") or sys.argv[1]
cli = os.path.join(root, "drivers", "cli")
ALLOWED = {"main.c", "cli_mpi.c", "cli_gram.c"}
PATTERN = re.compile(r"\b(stdout|stderr)\b|(?<![A-Za-z_])(printf|puts|putchar|perror)\s*\(")
bad = []
for name in sorted(os.listdir(cli)):
    if not name.endswith(".c") or name in ALLOWED:
        continue
    with open(os.path.join(cli, name), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            code = re.sub(r'"([^"\\]|\\.)*"', '""', line.split("//")[0])  # strings aside
            if code.lstrip().startswith(("*", "/*")):
                continue
            code = re.sub(r"/\*.*?\*/", "", code)
            if PATTERN.search(code) and "host_out ? host_out" not in code and \
                    "host_err ? host_err" not in code:
                bad.append(f"drivers/cli/{name}:{n}: {line.strip()}")
if bad:
    sys.exit("the process's own streams named in a command (use atf_cli_stdout/atf_cli_stderr):\n"
             + "\n".join(bad))
print("ok: every command writes through atf_cli_stdout and atf_cli_stderr")
