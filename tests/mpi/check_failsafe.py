#!/usr/bin/env python3
"""Results files are never mixed or lost, and no start-up failure hangs.

  check_failsafe.py MINICTX MPIEXEC resume-mismatch | force-killed | four-jobs | special-files

resume-mismatch: --resume with another deck, another world size or more stored points
  than the deck has is refused in one line naming the first difference, and the file is
  left byte for byte; the same deck with more points resumes.
force-killed: a --force run killed (SIGKILL, then SIGTERM) before its first point leaves
  the old file intact; a --force run that completes replaces it. No scratch file remains.
four-jobs: four jobs started together in one directory with default output names all
  finish with distinct files, also when their batch job names collide.
special-files: a FIFO as the deck, the report input, -o or --dump, and a directory as -o
  with --force, are refused by type in one line (exit 2), nothing blocks, nothing is left;
  so are a name ending in '/' and a default outputs/ that cannot be made.
Every wait is bounded; none is the pass criterion."""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import own_lines, points_in, rank_pids  # noqa: E402

minictx, mpiexec, mode = sys.argv[1], sys.argv[2], sys.argv[3]
LIMIT_S = 240
TINY = ["--set", "run.mode=attention", "--set", "attention.backend=ring", "--set", "run.warmup=0",
        "--set", "run.iters=1"]
RUN = ["run"] + TINY


def run(args, ranks=2, cwd=None, env=None):
    command = [mpiexec, "-n", str(ranks), minictx] + args if ranks else [minictx] + args
    return subprocess.run(command, capture_output=True, text=True, timeout=LIMIT_S, cwd=cwd, env=env)


def refused(result, pattern):
    """Exit 2 and exactly one line on stderr, `minictx: error: ...` containing pattern."""
    lines = own_lines(result.stderr)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("minictx: error: "), result.stderr
    assert pattern in lines[0], (pattern, lines[0])
    return lines[0]


def slurp(path):
    with open(path, "rb") as f:
        return f.read()


def scratch_in(directory):
    return glob.glob(os.path.join(directory, "*.partial"))


def resume_mismatch(tmp):
    path = os.path.join(tmp, "r.h5")
    first = run(RUN + ["--set", "sequence.length=[256,512]", "-o", path])
    assert first.returncode == 0, first.stderr
    before = slurp(path)
    line = refused(run(RUN + ["--set", "sequence.length=[1024,512]", "-o", path, "--resume"]),
                   "point_0000's sequence.length was 256 in that run, 1024 in this one")
    print(line)
    refused(run(RUN + ["--set", "sequence.length=[256,512]", "--set", "attention.causal=false", "-o", path,
                        "--resume"]), "point_0000's attention.causal was true in that run, false in this one")
    refused(run(RUN + ["--set", "sequence.length=[256,512]", "-o", path, "--resume"], ranks=1),
            "world_size was 2 in that run, 1 in this one")
    refused(run(RUN + ["--set", "sequence.length=256", "-o", path, "--resume"]),
            "the file holds point_0001, but this deck has 1 point(s)")
    assert slurp(path) == before, "a refused resume changed the file"
    # Where results go is not what they are: output.* may differ.
    more = run(RUN + ["--set", "sequence.length=[256,512,768]", "--set", "output.overwrite=true", "-o", path,
                       "--resume"])
    assert more.returncode == 0, more.stderr
    assert more.stdout.count("in the file already (--resume)") == 2 and more.stdout.count("FOM") == 1, more.stdout
    assert points_in(path) == ["point_0000", "point_0001", "point_0002"]
    with h5py.File(path, "r") as f:
        assert f["provenance"].attrs["resumed_points"] == 2
    assert not scratch_in(tmp), scratch_in(tmp)


def kill_before_first_point(path, sig):
    """Starts a --force run whose first point takes seconds, stops it with `sig` as soon as
    the point has started, and returns its output."""
    command = [mpiexec, "-n", "2", minictx] + RUN + [
        "--set", "sequence.length=[1024,256]", "--set", "run.iters=[100,1]", "--set",
        "sweep.zip=[sequence.length,run.iters]", "-o", path, "--force"]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    deadline = time.monotonic() + LIMIT_S
    seen = ""
    while "[1/2] point_0000" not in seen:
        line = job.stdout.readline()
        assert line or job.poll() is None, "the run ended before its first point:\n" + seen
        assert time.monotonic() < deadline, "no progress line after %d s" % LIMIT_S
        seen += line
    if sig == signal.SIGKILL:
        # mpiexec and every rank, as a batch system's hard kill (Open MPI's ranks are not
        # in mpiexec's process group).
        ranks = rank_pids(path)
        assert len(ranks) == 2, ranks
        for pid in ranks.values():
            os.kill(pid, signal.SIGKILL)
        os.killpg(job.pid, signal.SIGKILL)
    else:
        job.send_signal(sig)
    return seen + job.communicate(timeout=LIMIT_S)[0]


def force_killed(tmp):
    path = os.path.join(tmp, "old.h5")
    old = run(RUN + ["--set", "sequence.length=256", "-o", path])
    assert old.returncode == 0, old.stderr
    before = slurp(path)
    kill_before_first_point(path, signal.SIGKILL)
    assert slurp(path) == before, "a --force run killed before its first point lost the old file"
    output = kill_before_first_point(path, signal.SIGTERM)
    assert "sweep interrupted before its first point; " + path + " keeps its previous results" in output, output
    assert slurp(path) == before, "a --force run stopped before its first point lost the old file"
    assert not scratch_in(tmp), scratch_in(tmp)
    new = run(RUN + ["--set", "sequence.length=[256,512]", "-o", path, "--force"])
    assert new.returncode == 0, new.stderr
    assert points_in(path) == ["point_0000", "point_0001"]
    with h5py.File(path, "r") as f:
        assert "--force" in f["provenance"].attrs["command_line"]
    assert not scratch_in(tmp), scratch_in(tmp)


def start_four(cwd, envs):
    os.makedirs(cwd)
    jobs = [subprocess.Popen([minictx] + RUN + ["--set", "sequence.length=128"], cwd=cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for env in envs]
    results = []
    for job in jobs:
        out, err = job.communicate(timeout=LIMIT_S)
        results.append((job.returncode, out, err))
    for code, out, err in results:
        assert code == 0, (code, out, err)
    files = sorted(glob.glob(os.path.join(cwd, "outputs", "*.h5")))
    assert len(files) == 4, files
    for f in files:
        assert points_in(f) == ["point_0000"], f
    named = sorted(os.path.join(cwd, out.strip().splitlines()[-1].split("results: ", 1)[1])
                   for _, out, _ in results)
    assert named == files, (named, files)
    assert not scratch_in(os.path.join(cwd, "outputs"))
    return [os.path.basename(f) for f in files]


def four_jobs(tmp):
    # Singletons (no mpiexec): a batch job's variables must not make mpiexec look for a
    # batch system. Without them each name carries the process id.
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PBS_"))}
    names = start_four(os.path.join(tmp, "plain"), [base] * 4)
    assert all("-pid" in n for n in names), names
    print("\n".join(names))
    # A Slurm array: one job id, four task ids.
    names = start_four(os.path.join(tmp, "array"),
                       [dict(base, SLURM_JOB_ID="4242", SLURM_ARRAY_TASK_ID=str(t)) for t in range(4)])
    assert sorted(n.split("-job4242_")[1] for n in names) == ["0.h5", "1.h5", "2.h5", "3.h5"], names
    # Four job steps of one job: the same name, taken once by O_EXCL, then suffixed. The
    # names of the next minute are taken already, so every job collides at least once.
    same = os.path.join(tmp, "same")
    os.makedirs(os.path.join(same, "outputs"))
    now = time.time()
    taken = set()
    for s in range(60):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + s))
        taken.add("minictx-%s-job77.h5" % stamp)
        open(os.path.join(same, "outputs", "minictx-%s-job77.h5" % stamp), "w").close()
    envs = [dict(base, SLURM_JOB_ID="77")] * 4
    jobs = [subprocess.Popen([minictx] + RUN + ["--set", "sequence.length=128"], cwd=same, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for env in envs]
    made = []
    for job in jobs:
        out, err = job.communicate(timeout=LIMIT_S)
        assert job.returncode == 0, (out, err)
        made.append(os.path.basename(out.strip().splitlines()[-1].split("results: ", 1)[1]))
    assert len(set(made)) == 4 and not taken & set(made), made
    assert all(n.startswith("minictx-") and "-job77-" in n for n in made), made
    for n in made:
        assert points_in(os.path.join(same, "outputs", n)) == ["point_0000"], n
    print("\n".join(sorted(made)))


def special_files(tmp):
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    refused(run(["run", fifo]), "deck " + fifo + ": is a FIFO, not a regular file")
    refused(run(["report", fifo], ranks=1), "results file " + fifo + ": is a FIFO, not a regular file")
    refused(run(RUN + ["-o", fifo, "--force"]), "results file " + fifo + ": is a FIFO, not a regular file")
    refused(run(["verify"] + TINY + ["--dump", fifo]), "--dump " + fifo + ": is a FIFO, not a regular file")
    directory = os.path.join(tmp, "existing_dir")
    os.mkdir(directory)
    refused(run(RUN + ["-o", directory, "--force"]), "results file " + directory + ": is a directory")
    assert os.listdir(directory) == [] and not scratch_in(tmp), os.listdir(tmp)
    refused(run(RUN + ["-o", os.path.join(tmp, "dir", "sub") + "/"]), "names a directory (ends in '/')")
    assert not os.path.exists(os.path.join(tmp, "dir")), "a refused name created a directory"
    assert sorted(os.listdir(tmp)) == ["existing_dir", "fifo"], os.listdir(tmp)
    # F1 with the default name: its directory cannot be made (a file is in its place).
    open(os.path.join(tmp, "outputs"), "w").close()
    refused(run(RUN, cwd=tmp), "cannot create the directory outputs: Not a directory")
    assert os.path.getsize(os.path.join(tmp, "outputs")) == 0


with tempfile.TemporaryDirectory() as tmp:
    {"resume-mismatch": resume_mismatch, "force-killed": force_killed, "four-jobs": four_jobs,
     "special-files": special_files}[mode](tmp)
print("failsafe ok:", mode)
