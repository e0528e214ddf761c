"""The installed tree: `meson install --destdir` into a scratch directory must hold the public
headers (and no private one), libatf.so, libatf.a and atf.pc, and a program must compile and
link against it with `pkg-config --cflags --libs atf` alone, then run.

usage: test_install.py BUILD_ROOT SCRATCH PROGRAM.c CC SANITIZE [CXX]
(CC, CXX: the compiler command lines; with CXX the same program is also built as C++ against
the installed headers)

pkg-config is pointed at the scratch tree with PKG_CONFIG_PATH and relocated into it with
PKG_CONFIG_SYSROOT_DIR (its -I and -L paths are prefixed by the scratch directory). SANITIZE is
meson's b_sanitize ("none" or e.g. "address,undefined"): a sanitized libatf needs the program
built with the same flags."""
import glob
import os
import shlex
import shutil
import subprocess
import sys

build_root, scratch, program, cc, sanitize = sys.argv[1:6]
cxx = sys.argv[6] if len(sys.argv) > 6 else ""
dest = os.path.join(scratch, "destdir")
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit("FAIL: %s\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr))
    return proc


run(["meson", "install", "-C", build_root, "--no-rebuild", "--destdir", dest, "--quiet"])

pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "atf.pc"), recursive=True)
assert len(pcs) == 1, pcs
headers = glob.glob(os.path.join(dest, "**", "include", "atf", "*.h"), recursive=True)
names = sorted(os.path.basename(h) for h in headers)
print("installed headers:", " ".join(names))
PUBLIC = ["atf_error.h", "atf_version.h", "atf_penalty.h", "atf_problem.h", "atf_result.h",
          "atf_loss.h", "atf_solver.h", "atf_data.h", "atf_mlp.h", "atf_features.h",
          "atf_kernel.h"]
assert names == sorted(PUBLIC), (names, sorted(PUBLIC))  # and nothing else (no atf_util.h)
for header in headers:  # no third-party header in a public one
    with open(header, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#include <"):
                name = line.split("<")[1].split(">")[0]
                assert "/" not in name and not name.startswith(("jansson", "hdf5", "cholmod")), \
                    (header, line)
for name in names:  # the public headers are atf_*.h; private ones stay in internal/ folders
    assert name.startswith("atf_") and "internal" not in name, name
libdir = os.path.dirname(os.path.dirname(pcs[0]))
for lib in ["libatf.so", "libatf.a"]:
    assert os.path.exists(os.path.join(libdir, lib)), (lib, os.listdir(libdir))

env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]), PKG_CONFIG_SYSROOT_DIR=dest)
flags = run(["pkg-config", "--cflags", "--libs", "atf"], env=env).stdout.split()
print("pkg-config --cflags --libs atf:", " ".join(flags))
assert any(f.startswith("-I" + dest) for f in flags), flags
extra = ["-fsanitize=" + sanitize] if sanitize not in ("", "none") else []
builds = [(cc, ["-std=c11"], program, "program")]
if cxx:  # the same file as C++ (only the installed headers on the include path)
    builds.append((cxx, ["-x", "c++", "-std=c++11"], program, "program_cpp"))
for compiler, lang, source, name in builds:
    exe = os.path.join(scratch, name)
    run([*shlex.split(compiler), *lang, "-Wall", "-Wextra", "-Werror", *extra, source, "-x", "none",
         "-o", exe, *flags, "-lm"])
    out = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir)).stdout
    print(name + ":", out, end="")
    assert out.rstrip().endswith("ok"), out
shutil.rmtree(scratch)  # the installed copy is only needed for the checks above
