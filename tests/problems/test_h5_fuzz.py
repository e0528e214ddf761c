"""The checker-then-read path under many heap layouts: no corrupt file crashes a reader.

Issue 46: a byte-flipped problem passed atf-h5check and then crashed the reading process
(SIGSEGV in libhdf5's H5Aexists_by_name under h5io_attr_exists), in one release build and not
in another. libhdf5 1.10 reads past the end of its heap buffers on such files (an attribute
message whose sizes point beyond its object header); the checker made the same reads, and
what lay beyond its buffers, or the reader's, decided whether anything happened. So this test
mutates the parts of the files that libhdf5 parses (object headers, attribute messages, global
heaps, B-trees, symbol tables and local heaps; the raw data of the arrays is left alone) and
reads every mutated file through the public API (read_any: atf-h5check first, then the reader
in its own process, as every atf command does) under several heap layouts: glibc malloc's
tunables, its debugging malloc, perturbed memory, and AddressSanitizer's runtime preloaded,
which aborts the reader at any read past a heap block, whether or not it would have crashed.
Every read must end with exit 0 (read) or 2 (refused), or 1 (out of memory for a size the
damage made huge), with one line naming the file when it fails; a signal or a timeout fails
the test. Valid files of every shape h5py writes are read under every layout too: the
checker's guarded heap must not refuse them.

The files: a problem with a test split (its three readers: whole, shard, test shard), a result,
a checkpoint, a preconditioner file, an MLP and a data set, made by the atf CLI and h5py.

Mutations (seeded): xor a byte, set a byte to 0 / 0xff / ±1, overwrite an aligned 2-, 4- or
8-byte field with 0, all ones or a random value, and truncate the file, drawn from the size
fields of the attribute messages (a quarter of them: the sizes of an attribute's name, type and
shape, which make libhdf5 1.10 read past the object header), the rest of the attribute
messages (a quarter), the rest of the object headers, the global heap collections and the other
metadata.

Usage: test_h5_fuzz.py READ_ANY SCRATCH_DIR   (the atf binary from the ATF variable)
       test_h5_fuzz.py READ_ANY SCRATCH_DIR --campaign N [--layouts a,b] [--kinds k,l]
           [--seed S]   a longer run: every failed read printed, then the tally; exit 1 if any
Environment: ATF_H5_FUZZ_COUNT (mutated files per kind in the test, default 60; 20 in a
sanitizer build, whose reader runs under AddressSanitizer anyway, under no other layout).
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import unittest

import h5py
import numpy as np

from test_corrupt_files import data_extents  # the raw data's byte ranges: the rest is metadata

ATF = os.environ.get("ATF")
READ_ANY = None
SCRATCH = None
RUN_TIMEOUT = 60      # no read may take longer (a hang is refused by the checker's 10 s limit)
CHECK_SECONDS = "10"  # atf-h5check's limit during the fuzz

MALLOC_DEBUG = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"


def find_libasan():
    """gcc's AddressSanitizer runtime, if installed (preloaded into a reader built without it,
    it checks every memcpy, strlen, ... of libhdf5 against the bounds of its heap blocks)."""
    try:
        p = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                           text=True, timeout=30)
        path = os.path.realpath(p.stdout.strip())
        return path if p.returncode == 0 and os.path.isfile(path) else None
    except (OSError, subprocess.SubprocessError):
        return None


LIBASAN = find_libasan()

# Heap layouts: the environment of the reading process (its checker gets the same, less
# LD_PRELOAD: it places libhdf5's heap blocks itself, h5check.c "the guarded heap"). glibc's
# tunables move what lies beside libhdf5's buffers: no thread cache (freed chunks go straight
# back to the bins), every allocation of 4 KB or more mapped on its own (a read past it faults),
# freed and new memory filled with a pattern, one arena; its debugging malloc puts a header and
# a trailer around every chunk and checks them.
LAYOUTS = {
    "default": {},
    "perturb": {"MALLOC_PERTURB_": "165"},
    "no-tcache": {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0", "MALLOC_PERTURB_": "90"},
    "mmap-4k": {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4096:glibc.malloc.tcache_count=0"
                ":glibc.malloc.arena_max=1"},
    "top-pad-0": {"GLIBC_TUNABLES": "glibc.malloc.top_pad=0:glibc.malloc.trim_threshold=0"
                  ":glibc.malloc.mxfast=0", "MALLOC_PERTURB_": "255"},
    "malloc-debug": {"LD_PRELOAD": MALLOC_DEBUG, "MALLOC_CHECK_": "3"},
    # a read past a heap block aborts the reader (SIGABRT), even one that would not crash it
    "asan": {"LD_PRELOAD": LIBASAN or "", "ASAN_OPTIONS": "abort_on_error=1:detect_leaks=0"
             ":verify_asan_link_order=0:allocator_may_return_null=1"},
}


def run(args, env=None, timeout=RUN_TIMEOUT):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(args, capture_output=True, text=True, errors="replace",
                          timeout=timeout, env=e, cwd=SCRATCH)


# ------------------------------------------------------------------ the files' structure

def object_addresses(path):
    """The address of every object header (the root's, every group's and dataset's)."""
    addrs = set()
    with h5py.File(path, "r") as f:
        addrs.add(h5py.h5o.get_info(f.id).addr)
        f.visititems(lambda _, obj: addrs.add(h5py.h5o.get_info(obj.id).addr) and None)
    return sorted(addrs)


def header_chunks(blob, addr):
    """The chunks of a version-1 object header: (start, end) of each, and its messages as
    (type, data start, data end). atf writes version-1 headers (libhdf5's default format)."""
    if addr + 16 > len(blob) or blob[addr] != 1:
        return [], []
    nmsgs, size = struct.unpack_from("<H", blob, addr + 2)[0], struct.unpack_from("<I", blob,
                                                                                 addr + 8)[0]
    chunks, msgs, todo = [(addr, addr + 16 + size)], [], [(addr + 16, addr + 16 + size)]
    while todo and len(msgs) < nmsgs:
        pos, end = todo.pop(0)
        while pos + 8 <= end and len(msgs) < nmsgs:
            mtype, msize = struct.unpack_from("<HH", blob, pos)
            data = pos + 8
            msgs.append((mtype, data, data + msize))
            if mtype == 0x10 and data + 16 <= len(blob):  # continuation: another chunk
                caddr, clen = struct.unpack_from("<QQ", blob, data)
                chunks.append((caddr, caddr + clen))
                todo.append((caddr, caddr + clen))
            pos = data + msize
    return chunks, msgs


def signature_spans(blob, sig, size_of):
    """(start, end) of every structure that starts with the 4-byte signature sig."""
    spans, pos = [], blob.find(sig)
    while pos >= 0:
        n = size_of(blob, pos)
        if n:
            spans.append((pos, min(pos + n, len(blob))))
        pos = blob.find(sig, pos + 1)
    return spans


def gcol_size(blob, pos):
    return struct.unpack_from("<Q", blob, pos + 8)[0] if pos + 16 <= len(blob) else 0


def regions(path):
    """Byte positions by kind: 'attrsize' (the sizes at the start of every attribute message:
    of its name, datatype and dataspace, which libhdf5 1.10 trusts when it decodes the
    attribute), 'attr' (the rest of the attribute messages), 'header' (the rest of the object
    headers), 'gheap' (global heap collections: the variable-length strings), 'meta' (every
    other byte that is not raw data: superblock, B-trees, symbol tables, local heaps)."""
    with open(path, "rb") as f:
        blob = f.read()
    attrsize, attr, header = set(), set(), set()
    for addr in object_addresses(path):
        chunks, msgs = header_chunks(blob, addr)
        for a, b in chunks:
            header.update(range(a, min(b, len(blob))))
        for mtype, a, b in msgs:
            if mtype == 0x0C:
                attr.update(range(a, min(b, len(blob))))
                attrsize.update(range(a + 2, min(a + 8, b, len(blob))))
    gheap = set()
    for a, b in signature_spans(blob, b"GCOL", gcol_size):
        gheap.update(range(a, b))
    raw = set()
    for a, b in data_extents(path):
        raw.update(range(a, b))
    attr -= attrsize
    header -= attr | attrsize
    gheap -= attr | attrsize | header
    meta = set(range(len(blob))) - raw - attrsize - attr - header - gheap
    out = {k: sorted(v) for k, v in (("attrsize", attrsize), ("attr", attr), ("header", header),
                                     ("gheap", gheap), ("meta", meta))}
    return blob, {k: v for k, v in out.items() if v}


# ------------------------------------------------------------------ mutations

REGION_WEIGHTS = (("attrsize", 4), ("attr", 4), ("header", 4), ("gheap", 2), ("meta", 2))


def pick_position(rng, where):
    kinds = [k for k, _ in REGION_WEIGHTS if k in where]
    weights = [w for k, w in REGION_WEIGHTS if k in where]
    kind = rng.choices(kinds, weights)[0]
    return kind, rng.choice(where[kind])


def mutate(blob, where, rng):
    """One seeded mutation of blob: (description, new bytes)."""
    kind, pos = pick_position(rng, where)
    b = bytearray(blob)
    op = rng.randrange(10)
    if op < 4:
        b[pos] ^= rng.randrange(1, 256)
        return f"{kind} xor byte {pos}", bytes(b)
    if op < 6:
        b[pos] = rng.choice((0, 0xff, (b[pos] + 1) & 0xff, (b[pos] - 1) & 0xff))
        return f"{kind} set byte {pos}", bytes(b)
    if op < 9:
        width = rng.choice((2, 4, 8))
        start = min(pos - pos % width, len(b) - width)
        value = rng.choice((0, (1 << (8 * width)) - 1, rng.getrandbits(8 * width),
                            rng.randrange(1, 64)))
        b[start:start + width] = value.to_bytes(width, "little")
        return f"{kind} field {start}+{width}", bytes(b)
    return f"{kind} truncate at {pos}", bytes(b[:max(pos, 1)])


# ------------------------------------------------------------------ the files

def make_files():
    """Small valid files of every kind: (kind, file name, extra read_any arguments)."""
    def atf(*args):
        p = run([ATF] + list(args))
        assert p.returncode in (0, 4), p.stderr
    atf("features", "--data", "synthetic:d=6", "--n-train", "20", "--n-test", "6",
        "--widths", "6,4,1", "--bias", "-o", "prob.h5", "--save-mlp", "mlp.h5")
    atf("solve", "prob.h5", "-o", "res.h5", "--quiet")
    # admm stopped at its iteration limit keeps its checkpoint; with its projection by CG and
    # the gram32 preconditioner it keeps the factor's file too
    atf("solve", "prob.h5", "-o", "res2.h5", "--quiet", "--method", "admm", "--linsys", "pcg",
        "--precond", "gram32", "--precond-file", "pc.h5", "--checkpoint", "cp.h5",
        "--checkpoint-every", "1e-9", "--max-iter", "3")
    rng = np.random.default_rng(5)
    with h5py.File(os.path.join(SCRATCH, "data.h5"), "w") as f:
        f["X"] = rng.standard_normal((20, 6))
        f["Y"] = rng.standard_normal((20, 1))
        f["labels"] = np.arange(20, dtype=np.int64) % 2
    with h5py.File(os.path.join(SCRATCH, "pc.h5"), "r") as f:
        pc_args = [f.attrs["key"], str(f["factor"].shape[0])]
    files = [("problem", "prob.h5", []), ("result", "res.h5", []),
             ("checkpoint", "cp.h5", []), ("precond", "pc.h5", pc_args),
             ("mlp", "mlp.h5", []), ("data", "data.h5", [])]
    for kind, name, extra in files:  # every one reads as it is
        p = run([READ_ANY, kind, name] + extra)
        assert p.returncode == 0, f"{kind} {name}: {p.stderr}"
    return files


def make_unusual_files():
    """Valid data sets (/X, /Y, /labels) that carry, besides, what h5py can write and atf never
    does: both object-header formats, attributes in dense storage (the latest format, more
    than 8 or larger than 64 KB), creation order tracked, a user block, small integer, boolean,
    single-precision, string and array attributes and datasets, chunked data with gzip, shuffle
    and checksums, unallocated and empty datasets, a scalar, soft links (one dangling), a hard
    link alias, deep groups and an external link. The checker reads all of it, every block of
    its heap guarded: none may be refused."""
    rng = np.random.default_rng(3)
    names = []

    def extras(f, dense):
        g = f.create_group("extra")
        g.attrs["i8"], g.attrs["u16"], g.attrs["b"] = np.int8(3), np.uint16(7), True
        g.attrs["f32"], g.attrs["arr"] = np.float32(1.5), np.arange(10.0)
        g.attrs["fixed"], g.attrs["vlen"] = np.bytes_("fixed-length"), "variable \u00fcn\u00efcode"
        g.attrs["vlenarr"] = ["a", "bb", "ccc"]
        if dense:
            g.attrs["big"] = np.arange(20000.0)
            for k in range(40):
                g.attrs[f"many{k:02d}"] = k
        g["f32"] = rng.standard_normal(50).astype(np.float32)
        g["u8"], g["bool"] = np.arange(200, dtype=np.uint8), np.ones(5, dtype=bool)
        g.create_dataset("gz", data=rng.standard_normal((400, 9)), chunks=(50, 9),
                         compression="gzip", shuffle=True, fletcher32=True)
        g["scalar"], g["empty"] = 3.25, np.zeros((0, 3))
        g.create_dataset("unallocated", shape=(10, 10), dtype="f8")
        g.create_dataset("no_chunks", shape=(100, 10), chunks=(10, 10), dtype="f8",
                         fillvalue=2.0)
        g["strings"] = np.array([b"x", b"yy"])
        g["vstrings"] = np.array(["a", "bcd"], dtype=h5py.string_dtype())
        g["soft"], g["dangling"] = h5py.SoftLink("/X"), h5py.SoftLink("/nowhere/at/all")
        g["alias"] = f["X"]
        g.create_group("deep/er/group").attrs["x"] = 1
        g["ext"] = h5py.ExternalLink("target.h5", "/t")

    with h5py.File(os.path.join(SCRATCH, "target.h5"), "w") as f:
        f["t"] = np.arange(5.0)
    for libver in ("earliest", "latest"):
        for track in (False, True):
            name = f"unusual-{libver}-{int(track)}.h5"
            with h5py.File(os.path.join(SCRATCH, name), "w", libver=libver, track_order=track,
                           userblock_size=512 if track else 0) as f:
                f["X"], f["Y"] = rng.standard_normal((20, 6)), rng.standard_normal((20, 1))
                f["labels"] = np.arange(20) % 3
                extras(f, libver == "latest")
            names.append(name)
    return names


# ------------------------------------------------------------------ the fuzz

def read_mutated(kind, extra, data, layout):
    """Write data to a file and read it as kind under the heap layout: (return code, stderr);
    return code None for a timeout."""
    name = f"mutated-{kind}.h5"
    with open(os.path.join(SCRATCH, name), "wb") as f:
        f.write(data)
    env = dict(LAYOUTS[layout])
    env["ATF_H5_CHECK_SECONDS"] = CHECK_SECONDS
    try:
        p = run([READ_ANY, kind, name] + extra, env=env)
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stderr


def verdict(kind, rc, stderr):
    """None when the read ended as it must, else what is wrong."""
    name = f"mutated-{kind}.h5"
    if rc is None:
        return f"no end within {RUN_TIMEOUT} s"
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc not in (0, 1, 2):
        return f"exit {rc}"
    lines = stderr.splitlines()
    if rc and (len(lines) != 1 or name not in lines[0]):
        return f"exit {rc} without one line naming the file"
    return None


def sanitized():
    """A sanitizer build: read_any has AddressSanitizer's own allocator and checks already."""
    with open(READ_ANY, "rb") as f:
        return b"__asan_init" in f.read()


def available_layouts():
    if sanitized():  # glibc's tunables and preloads mean nothing under ASan's allocator
        return ["default"]
    return [k for k in LAYOUTS if (k != "malloc-debug" or os.path.exists(MALLOC_DEBUG)) and
            (k != "asan" or LIBASAN)]


def layout_of(i, layouts):
    """The layout of the i-th read: AddressSanitizer's for every other one when it is among
    them (it sees every read past a block, where the others see the few that crash), the others
    in turn."""
    others = [k for k in layouts if k != "asan"]
    if "asan" in layouts and (i % 2 or not others):
        return "asan"
    return others[(i // (2 if "asan" in layouts else 1)) % len(others)]


def fuzz(files, count, layouts, seed, report):
    """count mutations of each file, each read under a layout of layouts (layout_of);
    report(kind, layout, description, rc, stderr, problem) for every read. Returns the tally
    {(kind, outcome): n}."""
    tally = {}
    for k, (kind, name, extra) in enumerate(files):
        blob, where = regions(os.path.join(SCRATCH, name))
        rng = random.Random(seed * 1000 + k)
        for i in range(count):
            what, data = mutate(blob, where, rng)
            layout = layout_of(i, layouts)
            rc, err = read_mutated(kind, extra, data, layout)
            bad = verdict(kind, rc, err)
            outcome = "bad" if bad else f"exit {rc}"
            tally[(kind, outcome)] = tally.get((kind, outcome), 0) + 1
            report(kind, layout, what, rc, err, bad)
    return tally


class CheckerThenRead(unittest.TestCase):
    files = None

    @classmethod
    def setUpClass(cls):
        cls.files = make_files()

    def test_regions_found(self):
        """The parser of object headers finds the attribute messages of every file (else the
        fuzz would flip other bytes only)."""
        for kind, name, _ in self.files:
            _, where = regions(os.path.join(SCRATCH, name))
            with self.subTest(kind=kind):
                if kind != "data":  # h5py's data set has no attributes
                    self.assertGreater(len(where.get("attr", [])), 50)
                    self.assertGreaterEqual(len(where.get("attrsize", [])), 6 * 3)
                self.assertGreater(len(where.get("header", [])), 50)

    def test_unusual_files_read(self):
        """No valid file is refused: the guarded heap of the checker (a block followed by
        unreadable pages) makes libhdf5 crash only where it reads past a block."""
        for name in make_unusual_files():
            for layout in available_layouts():
                with self.subTest(file=name, layout=layout):
                    p = run([READ_ANY, "data", name], env=LAYOUTS[layout])
                    self.assertEqual(p.returncode, 0, p.stderr)

    def test_fuzz(self):
        """Every mutated file read through the checker and the reader ends with a clear
        answer, never a signal, under every heap layout."""
        count = int(os.environ.get("ATF_H5_FUZZ_COUNT", "20" if sanitized() else "60"))
        layouts = available_layouts()
        failures = []

        def report(kind, layout, what, rc, err, bad):
            if bad:
                failures.append(f"{kind} [{layout}] {what}: {bad}: {err.strip()!r}")
        tally = fuzz(self.files, count, layouts, 46, report)
        print("h5_fuzz:", len(self.files) * count, "reads;",
              ", ".join(f"{k} {o}: {n}" for (k, o), n in sorted(tally.items())),
              file=sys.stderr)
        self.assertEqual(failures, [])
        # the fuzz reached both outcomes: files refused, and files (changed where nothing reads
        # or in ways the checks let through) read
        outcomes = {o for (_, o) in tally}
        self.assertIn("exit 2", outcomes)
        self.assertIn("exit 0", outcomes)


def campaign(argv):
    """A longer run: every failure printed, the tally at the end; exit 1 if any failed."""
    opts = dict(zip(argv[0::2], argv[1::2]))
    count = int(opts["--campaign"])
    layouts = opts.get("--layouts", ",".join(available_layouts())).split(",")
    kinds = opts.get("--kinds")
    files = make_files()
    if kinds:
        files = [f for f in files if f[0] in kinds.split(",")]
    bad = []

    def report(kind, layout, what, rc, err, problem):
        if problem:
            bad.append(1)
            print(f"FAIL {kind} [{layout}] {what}: {problem}: {err.strip()!r}", flush=True)
    tally = fuzz(files, count, layouts, int(opts.get("--seed", "46")), report)
    for (kind, outcome), n in sorted(tally.items()):
        print(f"{kind}\t{outcome}\t{n}")
    print(f"total {len(files) * count} reads, {len(bad)} failures, layouts {','.join(layouts)}")
    return 1 if bad else 0


if __name__ == "__main__":
    READ_ANY = os.path.abspath(sys.argv[1])
    SCRATCH = os.path.abspath(sys.argv[2])
    shutil.rmtree(SCRATCH, ignore_errors=True)  # a checkpoint left there would be resumed
    os.makedirs(SCRATCH)
    if len(sys.argv) > 3 and sys.argv[3] == "--campaign":
        sys.exit(campaign(sys.argv[3:]))
    unittest.main(argv=[sys.argv[0]], verbosity=2)
