#!/usr/bin/env bash
# Regenerate docs/cli.md from the binary's own --help texts, so the page cannot drift from the
# program: `bash scripts/gen_cli_doc.sh [path/to/atf] > docs/cli.md`. tests/cli checks that the
# committed page equals this script's output.
set -euo pipefail
atf=${1:-build/drivers/atf}
cat <<'HEAD'
# Command line reference

This page is generated from the program's own help (`bash scripts/gen_cli_doc.sh > docs/cli.md`);
`atf CMD --help` prints the same text. Contract: results go to files written atomically
(temporary file, then rename: a failure never leaves a half file); `--json` prints one line of JSON
on stdout; progress and iteration tables go to stderr. Exit codes: 0 solved, 2 bad input or usage
(one line naming the file, the item and the reason), 3 infeasible, 4 iteration limit (result
written), 130 interrupted by SIGINT (last iterate written), 1 other failures. Exit 1 writes
nothing and keeps an existing output (a numerical breakdown included); output locations are
checked before any work (exit 2); an input file that libhdf5 cannot read safely (it crashes or
hangs on it) is refused with exit 2 — see docs/formats.md, "Outputs on failure" and "Corrupt files".

Options are parsed the same way by every command (GNU getopt_long): `--opt value` and
`--opt=value` are the same, positional arguments may come before, between or after the options,
`--` ends the options, and a long option may be shortened to any unambiguous prefix. An unknown
option, a missing value or a value given to a flag is one line and exit 2, e.g.
`atf solve: unknown option '--tolerance' (atf solve --help)` or
`atf solve: option '--tol' needs a value`.

Data sets named `mnist` and `fashion-mnist` (without `:DIR`) are looked up in data roots that do
not depend on the working directory: the `:`-separated directories of the environment variable
`ATF_DATA` if it is set and not empty (and only those), else the `data/` folder of the repository
the `atf` binary was built in, the source repository's `data/` and `/usr/share/datasets`; the
message of a missing data set lists every directory it looked in.

## atf
HEAD
printf '\n```text\n'
"$atf" --help
printf '```\n'
section=$("$atf" --help | sed -n '/^commands:/,/^$/p' | awk 'NF && $1 != "commands:" {print $1}')
for cmd in $section; do
  printf '\n## atf %s\n\n```text\n' "$cmd"
  "$atf" "$cmd" --help
  printf '```\n'
done
