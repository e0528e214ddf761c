"""The HDF5 guard from Python (problems/io/, atf-h5check): before libatf lets libhdf5 parse a
file in this process, a checker program started with posix_spawn reads it under a time limit.

1. While torch threads are busy, a corrupt file that makes libhdf5 loop forever is refused at the
   floor of the time limit (the message says "within 3 s"; no wall time is asserted), one that
   crashes libhdf5 is refused as a crash, and a valid file is read.
2. While h5py reads in another thread (holding libhdf5's lock most of the time), 300 reads of a
   valid file are never refused (a forked child used to inherit that lock held and time out).
3. A caller killed with SIGKILL during a check leaves no checker running (PR_SET_PDEATHSIG).
"""
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid

import h5py
import numpy as np
import torch

import atf
import atf_env
import pyprob

d = atf_env.scratch()
good = os.path.join(d, "good.h5")
pyprob.build().write(good)


def gheap_variant(src, dst, hang):
    """src with the length of the first object of its first global heap collection changed
    (atf's string attributes live there; layout: "GCOL", version, 3 reserved bytes, size (8);
    objects: index (2), references (2), reserved (4), size (8), data padded to 8; index 0 is the
    free space, zeros). hang: libhdf5 1.10 decoding the collection then lands in the zeros of the
    free space and steps by 0 forever; else the length is 2^40, copied into a small buffer."""
    with open(src, "rb") as f:
        blob = bytearray(f.read())
    g = blob.find(b"GCOL")
    assert g >= 0, "no global heap in the file"
    end = g + struct.unpack_from("<Q", blob, g + 8)[0]
    first = p = g + 16
    while True:
        idx, size = struct.unpack_from("<H", blob, p)[0], struct.unpack_from("<Q", blob, p + 8)[0]
        if idx == 0:
            break
        p += 16 + (size + 7) // 8 * 8
        assert p + 16 <= end, "no free space in the global heap"
    struct.pack_into("<Q", blob, first + 8, p - first if hang else 1 << 40)
    with open(dst, "wb") as f:
        f.write(blob)


hang = os.path.join(d, "hang.h5")
crash = os.path.join(d, "crash.h5")
gheap_variant(good, hang, True)
gheap_variant(good, crash, False)
os.environ.pop("ATF_H5_CHECK_SECONDS", None)
os.environ.pop("ATF_H5CHECK", None)
if "ASAN_OPTIONS" in os.environ:
    # The checker that crashes on purpose reports through AddressSanitizer, which symbolizes its
    # stack first: on a loaded machine that took more than the 3 s limit, and the crash was
    # refused as a hang (seen beside two other jobs on the two cores; 8/8 with symbolize=0).
    os.environ["ASAN_OPTIONS"] += ":symbolize=0"


def refused(path):
    """The message of atf.Problem.read(path), which must raise atf.InputError."""
    try:
        atf.Problem.read(path)
    except atf.InputError as e:
        return e.message
    except Exception as e:  # noqa: BLE001 — the wrong class is the failure reported
        return f"raised {type(e).__name__}: {e}"
    return "nothing raised"


# ---- 1. corrupt files while torch threads are busy
torch.set_num_threads(2)
stop = threading.Event()
products = [0]


def burn():
    a = torch.randn(300, 300)
    while not stop.is_set():
        a = torch.tanh(a @ a / 300.0)
        products[0] += 1


burner = threading.Thread(target=burn)
burner.start()
try:
    msg = refused(hang)
    atf_env.check(msg == f"{hang}: refused: reading it did not finish within 3 s (a corrupt "
                  "file can hang libhdf5)", f"hang: {msg!r}")
    msg = refused(crash)
    atf_env.check(msg.startswith(f"{crash}: refused: reading it crashed libhdf5 (")
                  and "\n" not in msg, f"crash: {msg!r}")
    p = atf.Problem.read(good)
    atf_env.check(p is not None, "the valid file is read while torch is busy")
finally:
    stop.set()
    burner.join()
atf_env.check(products[0] > 0, "the torch thread ran")

# ---- 2. 300 reads while h5py reads in another thread
big = os.path.join(d, "h5py_busy.h5")
with h5py.File(big, "w") as f:
    f["x"] = np.random.default_rng(0).standard_normal((1000, 1000))
stop2 = threading.Event()
h5py_reads = [0]


def h5py_busy():
    with h5py.File(big, "r") as f:
        while not stop2.is_set():
            f["x"][...]
            h5py_reads[0] += 1


reader = threading.Thread(target=h5py_busy)
reader.start()
messages = []
try:
    for k in range(300):
        try:
            atf.Problem.read(good)
        except atf.Error as e:
            messages.append(e.message)
finally:
    stop2.set()
    reader.join()
atf_env.check(messages == [], f"300 reads with h5py busy: {len(messages)} refused, first "
              f"{messages[:1]}")
atf_env.check(h5py_reads[0] > 0, "the h5py thread read meanwhile")


# ---- 3. a caller killed during a check leaves no checker
def checkers_of(path):
    """{pid: state} of the atf-h5check processes that have `path` in their argv."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv and argv[0].endswith(b"atf-h5check") and path.encode() in argv:
            found[int(pid)] = state
    return found


unique = os.path.join(d, f"hang-{uuid.uuid4().hex}.h5")
shutil.copy(hang, unique)
env = dict(os.environ, ATF_H5_CHECK_SECONDS="120")  # the check would last two minutes
caller = subprocess.Popen([sys.executable, "-c", "import sys, atf; atf.Problem.read(sys.argv[1])",
                           unique], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seen = {}
for _ in range(600):  # until the checker runs (importing atf takes a moment)
    seen = checkers_of(unique)
    if seen or caller.poll() is not None:
        break
    time.sleep(0.1)
atf_env.check(len(seen) == 1, f"one checker started by the caller: {seen}, caller "
              f"{caller.poll()}")
caller.send_signal(signal.SIGKILL)
caller.wait()
alive = seen
for _ in range(100):  # the kernel delivers the parent-death signal at once
    alive = {p: s for p, s in checkers_of(unique).items() if s not in ("Z", "X")}
    if not alive:
        break
    time.sleep(0.1)
atf_env.check(alive == {}, f"no checker left running after the caller was killed: {alive}")
for p in alive:
    os.kill(p, signal.SIGKILL)

atf_env.finish("test_h5guard")
