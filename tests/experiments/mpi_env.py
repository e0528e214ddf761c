"""What the tests of atf under mpirun share (tests/experiments/test_mpi_samples.py,
test_mpi_sweep.py, tests/solver/test_mpi_solve.py): importing it skips the test (exit 77,
saying why) in a build without MPI or where mpirun is missing, and otherwise gives the atf
program, a fresh scratch directory (argv[1]), the environment mpirun needs here (as root, more
ranks than cores, one BLAS thread, not itself inside a job), a counted check, atf runs in one
process or K ranks, the processes a job left behind, a job stopped by Ctrl-C or a killed rank,
and the exit with the count of failures."""
import os
import shutil
import signal
import subprocess
import sys
import time

ATF = os.environ["ATF"]
if os.environ.get("ATF_MPI") != "1":
    print("skipped: this build has no MPI (meson setup -Dmpi=enabled; scripts/test.sh runs "
          "these tests in build-mpi)")
    sys.exit(77)
MPIRUN = shutil.which("mpirun")
if not MPIRUN:
    print("skipped: no mpirun (scripts/setup.sh installs openmpi-bin)")
    sys.exit(77)

scratch = sys.argv[1]
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OPENBLAS_NUM_THREADS="1")
for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"):
    ENV.pop(k, None)
failures = []


def path(*names):
    """A file of this test's scratch directory."""
    return os.path.join(scratch, *names)


def fashion():
    """The Fashion-MNIST directory that scripts/setup.sh installs."""
    d = "/usr/share/datasets/fashion-mnist"
    assert os.path.isdir(d), "dataset-fashion-mnist is not installed (scripts/setup.sh)"
    return d


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def mpi(k, argv):
    """atf with argv under mpirun with k ranks."""
    return [MPIRUN, "-np", str(k), "--oversubscribe", ATF, *argv]


def run(cmd, expect=0, timeout=600, threads=1):
    """Run cmd (atf alone, or mpi(…)) on `threads` BLAS threads and check its exit code."""
    env = dict(ENV, OPENBLAS_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    shown = " ".join(os.path.basename(c) if c in (ATF, MPIRUN) else c for c in cmd)
    check(p.returncode == expect, f"{shown[:300]}: exit {p.returncode}, expected {expect}: "
                                  f"{p.stderr[-800:]}")
    return p


def leftovers(name):
    """Processes (other than this one) with `name` (an output) among their arguments."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if int(pid) != os.getpid() and name.encode() in argv:
            found.append(pid)
    return found


def stop_job(job, out, part, how):
    """Once rank 1 has recorded a row in its part table `part`, stop the job writing to `out`:
    Ctrl-C to mpirun (how = "sigint") or SIGKILL to one rank; then the job must fail and leave no
    process behind."""
    deadline = time.time() + 120
    while time.time() < deadline and job.poll() is None:  # until rank 1 recorded a row
        if os.path.exists(part) and sum(1 for _ in open(part)) >= 2:
            break
        time.sleep(0.05)
    check(job.poll() is None, f"{how}: the job ended before the stop")
    if how == "sigint":
        job.send_signal(signal.SIGINT)
    else:
        ranks = [p for p in leftovers(out) if p != str(job.pid)]
        check(len(ranks) >= 1, "kill-rank: no rank found")
        if ranks:
            os.kill(int(ranks[-1]), signal.SIGKILL)
    job.wait(timeout=120)
    check(job.returncode != 0, f"{how}: the job exited 0")
    time.sleep(1)
    check(not leftovers(out), f"{how}: processes left: {leftovers(out)}")


def kill_a_rank(argv, out, ranks, after, what):
    """Start atf argv under mpirun with `ranks` ranks (its own process group), kill the last rank
    `after` seconds after all have started, and check that the job then ends badly
    (ended_badly: no `out`, no process left)."""
    proc = subprocess.Popen(mpi(ranks, argv), env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    victim = None
    for _ in range(600):  # up to a minute: a loaded machine starts ranks slowly
        time.sleep(0.1)
        kids = subprocess.run(["pgrep", "-P", str(proc.pid), "-x", "atf"], capture_output=True,
                              text=True).stdout.split()
        if len(kids) == ranks:
            victim = int(sorted(kids)[-1])
            break
    check(victim is not None, f"{what}: the ranks started")
    if victim:
        time.sleep(after)
        check(proc.poll() is None, f"{what}: the job ended before the kill")
        os.kill(victim, signal.SIGKILL)
    ended_badly(proc, out, what)


def ended_badly(proc, out, what):
    """After one of its ranks was killed, the job `proc` (started in its own process group) must
    end by itself (killed whole if it hangs), fail, write no `out` and leave no process."""
    try:
        proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # mpirun and its ranks: none outlives the test
        proc.communicate()
        check(False, f"{what}: the job hung")
    check(proc.returncode != 0, f"{what}: exit {proc.returncode}")
    check(not os.path.exists(out), f"{what}: an output was written")
    time.sleep(1)
    check(not leftovers(out), f"{what}: processes left: {leftovers(out)}")


def finish(name):
    """Say how many checks failed and exit accordingly."""
    print(f"{name}: {len(failures)} failures")
    sys.exit(1 if failures else 0)
