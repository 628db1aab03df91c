#!/usr/bin/env python3
"""One writer per results file, and nobody's results lost.

  check_one_writer.py MINICTX MPIEXEC race-fresh | race-resume | replaced | deleted

race-fresh: two runs started together on one new output: exactly one runs, the other is
  refused with one line (exit 2) naming the holder's host and pid (or, if the winner has
  already finished, that the file exists); the file holds every point the winner reported.
race-resume: a --resume of a file whose run is still going is refused with one line naming
  the holder, and so are `bench -o` and `project -o` of it with --force; then two --resume
  runs started together: exactly one runs. The file holds every point reported.
replaced: the output replaced under a run by another results file: the run stops with one
  line (exit 2), the other file is left byte for byte, and the run's completed points are
  in the .saved file beside it.
deleted: the same with the output deleted: nothing is written at its name again.
No lock or scratch file remains. Every wait is bounded; none is the pass criterion."""
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import own_lines, points_in, rank_pids  # noqa: E402

minictx, mpiexec, mode = sys.argv[1], sys.argv[2], sys.argv[3]
DECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "inputs", "quickstart.yaml")
LIMIT_S = 240
# Each point takes a noticeable fraction of a second on two ranks, so a second launch
# meets the first one mid-sweep.
SWEEP = ["run", "--set", "run.mode=attention", "--set", "attention.backend=ring", "--set", "run.warmup=0",
         "--set", "run.iters=2", "--set", "sequence.length=[1024,1536,2048,2560,3072]"]


def launch(args):
    return subprocess.Popen([mpiexec, "-n", "2", minictx] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(job):
    out, err = job.communicate(timeout=LIMIT_S)
    return job.returncode, out, err


def reported(out):
    """The points a run said it wrote: one FOM or skipped line each."""
    return sum(1 for line in out.splitlines() if line.startswith(("FOM ", "skipped: ")))


def one_line(err):
    lines = own_lines(err)
    assert len(lines) == 1 and lines[0].startswith("minictx: error: "), err
    return lines[0]


def refused_by_claim(code, err, path):
    assert code == 2, (code, err)
    line = one_line(err)
    holder = re.search(r"is being written by another run \(host (\S+), pid (\d+)\)", line)
    assert holder and holder.group(1) == socket.gethostname(), line
    assert path in line, line
    return line


def wait_for(job, text):
    """Reads the job's stdout until a line holds `text`; returns what it read."""
    seen = ""
    deadline = time.monotonic() + LIMIT_S
    while text not in seen:
        line = job.stdout.readline()
        assert line or job.poll() is None, "the run ended before '%s':\n%s" % (text, seen)
        assert time.monotonic() < deadline, "no '%s' after %d s" % (text, LIMIT_S)
        seen += line
    return seen


def leftovers(directory):
    return glob.glob(os.path.join(directory, "*.partial")) + glob.glob(os.path.join(directory, "*.lock"))


def race(tmp, extra, expected_points):
    """Two identical launches started together: one runs, one is refused."""
    path = os.path.join(tmp, "r.h5")
    jobs = [launch(SWEEP + ["-o", path] + extra) for _ in range(2)]
    results = [finish(j) for j in jobs]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], [(r[0], r[2]) for r in results]
    winner = next(r for r in results if r[0] == 0)
    loser = next(r for r in results if r[0] == 2)
    line = one_line(loser[2])
    assert "is being written by another run" in line or "the file exists" in line, line
    print(line)
    assert reported(winner[1]) == expected_points, winner[1]
    return path


def others_refused(path):
    """Every other writer of the file, --force or not, is refused by the claim of the run,
    and the file is left as it was."""
    with open(path, "rb") as f:
        before = f.read()
    for args in (["bench", "--seq", "64", "--head-dim", "16", "--mask", "causal", "--memory-seq", "64",
                  "--layer-seq", "64", "--gemm-sizes", "32", "--min-seconds", "0", "-o", path, "--force"],
                 ["project", DECK, "--machine", "a100-80gb-hdr", "--ranks", "2"] + SWEEP[1:] +
                 ["-o", path, "--force"]):
        r = subprocess.run([minictx] + args, capture_output=True, text=True, timeout=LIMIT_S)
        print(refused_by_claim(r.returncode, r.stderr, path))
    with open(path, "rb") as f:
        assert f.read() == before, "another writer changed the file of a running run"


def race_fresh(tmp):
    path = race(tmp, [], 5)
    assert points_in(path) == ["point_%04d" % i for i in range(5)]
    assert not leftovers(tmp), leftovers(tmp)


def race_resume(tmp):
    path = os.path.join(tmp, "r.h5")
    first = launch(SWEEP + ["-o", path])
    wait_for(first, "FOM ")
    # Its ranks held still, so that it cannot end before the others have tried.
    ranks = rank_pids(path)
    assert len(ranks) == 2, ranks
    for pid in ranks.values():
        os.kill(pid, signal.SIGSTOP)
    try:
        code, out, err = finish(launch(SWEEP + ["-o", path, "--resume"]))
        print(refused_by_claim(code, err, path))
        others_refused(path)
    finally:
        for pid in ranks.values():
            os.kill(pid, signal.SIGCONT)
    code, out, err = finish(first)
    assert code == 0, err
    assert points_in(path) == ["point_%04d" % i for i in range(5)]
    # A longer deck resumed by two jobs at once: the one that runs adds the new points.
    longer = [a.replace("3072]", "3072,3584,4096]") for a in SWEEP]
    jobs = [launch(longer + ["-o", path, "--resume"]) for _ in range(2)]
    results = [finish(j) for j in jobs]
    assert sorted(r[0] for r in results) == [0, 2], [(r[0], r[2]) for r in results]
    winner = next(r for r in results if r[0] == 0)
    loser = next(r for r in results if r[0] == 2)
    print(one_line(loser[2]))
    assert reported(winner[1]) == 2 and winner[1].count("in the file already (--resume)") == 5, winner[1]
    assert points_in(path) == ["point_%04d" % i for i in range(7)]
    assert not leftovers(tmp), leftovers(tmp)


def under_a_run(tmp, act):
    """Starts a sweep, pauses it after its first point, lets `act` change the output, and
    returns (exit code, stdout, stderr, path)."""
    path = os.path.join(tmp, "r.h5")
    job = launch(SWEEP + ["-o", path])
    seen = wait_for(job, "FOM ")
    os.killpg(job.pid, signal.SIGSTOP)
    try:
        act(path)
    finally:
        os.killpg(job.pid, signal.SIGCONT)
    code, out, err = finish(job)
    return code, seen + out, err, path


def saved_points(tmp, code, out, err, what):
    assert code == 2, (code, out, err)
    line = one_line(err)
    assert " was %s by someone else during this run" % what in line, line
    print(line)
    saved = re.search(r"points are saved in (\S+) ", line).group(1)
    assert os.path.dirname(saved) == tmp and saved.endswith(".saved"), saved
    points = points_in(saved)
    # Every point the run reported, and the one it was writing when it found out.
    assert len(points) == reported(out) + 1, (points, out)
    assert points == ["point_%04d" % i for i in range(len(points))]
    return saved


def replaced(tmp):
    other = os.path.join(tmp, "other.h5")
    made = subprocess.run([minictx, "run", "--set", "run.mode=attention", "--set", "sequence.length=128", "-o",
                           other], capture_output=True, text=True, timeout=LIMIT_S)
    assert made.returncode == 0, made.stderr
    with open(other, "rb") as f:
        theirs = f.read()

    def replace(path):
        os.replace(other, path)

    code, out, err, path = under_a_run(tmp, replace)
    saved_points(tmp, code, out, err, "replaced")
    with open(path, "rb") as f:
        assert f.read() == theirs, "the run wrote over the file that replaced its own"
    assert not leftovers(tmp), leftovers(tmp)


def deleted(tmp):
    code, out, err, path = under_a_run(tmp, os.remove)
    saved_points(tmp, code, out, err, "deleted")
    assert not os.path.exists(path), "the run wrote a deleted file again"
    assert not leftovers(tmp), leftovers(tmp)


with tempfile.TemporaryDirectory() as tmp:
    {"race-fresh": race_fresh, "race-resume": race_resume, "replaced": replaced, "deleted": deleted}[mode](tmp)
print("one writer ok")
