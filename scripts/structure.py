#!/usr/bin/python3
"""structure.py — the structure of atf's C library drawn from its code: which file calls which
(a function one file defines and another names), the circles among them, the largest files and
functions. docs/architecture.md quotes its output before and after a restructuring.

    /usr/bin/python3 scripts/structure.py [--root DIR] [--folders penalties problems solver]

A file A depends on file B when A names a function that B defines without `static` (B's
definition at the start of a line, its body's braces in column 0, the project's style). Circles
are the strongly connected components of that graph with more than one file. Comments and
strings are removed before reading names. Header files are not nodes: they declare, the .c
files define and call.
"""
import argparse
import os
import re
import sys

DEF = re.compile(r"^(?!static\b)(?:[A-Za-z_][\w \t\*]*?[\s\*])(\w+)\s*\([^;{]*$")
STATIC_DEF = re.compile(r"^static\b[^=;]*?[\s\*](\w+)\s*\([^;{]*$")
WORD = re.compile(r"[A-Za-z_]\w*")


def strip(text):
    """The code without comments, string and character literals (their newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(lines):
    """(name, first line, last line, static) of every function defined in the file."""
    found, i = [], 0
    while i < len(lines):
        m = DEF.match(lines[i]) or STATIC_DEF.match(lines[i])
        if m:
            j = i
            while j < len(lines) and "{" not in lines[j] and ";" not in lines[j]:
                j += 1
            if j < len(lines) and lines[j].startswith("{") or (
                    j < len(lines) and lines[j].rstrip().endswith("{") and j == i):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                found.append((m.group(1), i + 1, k + 1, lines[i].startswith("static")))
                i = k + 1
                continue
        i += 1
    return found


def read_tree(root, folders):
    files = {}
    for folder in folders:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith(".c"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        raw = f.read()
                    code = strip(raw)
                    files[os.path.relpath(path, root)] = {
                        "lines": raw.count("\n"), "code": code,
                        "functions": functions(code.split("\n"))}
    return files


def graph(files, why=None):
    owner = {}
    for path, f in files.items():
        for name, _, _, static in f["functions"]:
            if not static:
                owner.setdefault(name, path)
    edges = {path: set() for path in files}
    for path, f in files.items():
        for word in set(WORD.findall(f["code"])):
            other = owner.get(word)
            if other and other != path:
                edges[path].add(other)
                if why is not None:
                    why.setdefault((path, other), []).append(word)
    return edges


def circles(edges):
    """Tarjan's strongly connected components with more than one file."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--folders", nargs="+", default=["penalties", "problems", "solver"])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--why", action="store_true", help="name what ties the files of a circle")
    a = ap.parse_args()
    files = read_tree(a.root, a.folders)
    why = {}
    edges = graph(files, why)
    found = circles(edges)
    funcs = sorted(((end - start + 1, f"{path}:{name}") for path, f in files.items()
                    for name, start, end, _ in f["functions"]), reverse=True)
    print(f"{len(files)} C files, {sum(f['lines'] for f in files.values())} lines, "
          f"{len(funcs)} functions, {sum(len(e) for e in edges.values())} calls between files")
    print(f"circles: {len(found)}")
    for comp in found:
        print("  " + ", ".join(comp))
        if a.why:
            for (x, y), names in sorted(why.items()):
                if x in comp and y in comp:
                    print(f"    {x} -> {y}: {', '.join(sorted(names))}")
    print("largest files:")
    for lines, path in sorted(((f["lines"], p) for p, f in files.items()), reverse=True)[:a.top]:
        print(f"  {lines:6d}  {path}")
    print("largest functions:")
    for lines, name in funcs[:a.top]:
        print(f"  {lines:6d}  {name}")
    print(f"functions over 100 lines: {sum(1 for n, _ in funcs if n > 100)} of {len(funcs)}")


if __name__ == "__main__":
    main()
