"""The `atf` command from the Python package: `python -m atf ...` and the `atf` console script
that `pip install .` creates both run the package's own bin/atf (the C program) with the
arguments given, replacing this process (so that signals, exit codes and the terminal are the
program's own)."""
import os
import sys

from ._cli import program


def main() -> None:
    exe = program()
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
