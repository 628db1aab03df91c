#!/usr/bin/env python3
"""jobs/minictx.sbatch on a real Slurm: starts slurmctld and slurmd on this host (a one-node
cluster in a temporary directory, auth/none, no cgroups), submits a 3-point sweep on 2
ranks, sends the job SIGTERM with scancel once the first point is in the results file
(what --signal=TERM@ does before the time limit), checks the one-line message and the
completed point, resubmits with --resume and checks the finished file and its Slurm
provenance. Exits 77 (ctest SKIP_RETURN_CODE) when the Slurm programs are absent or
the test does not run as root (slurmd's requirement here).

  check_slurm.py MINICTX SOURCE_DIR"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

minictx, source = sys.argv[1], sys.argv[2]
programs = ["slurmctld", "slurmd", "sbatch", "scancel", "squeue", "sinfo", "scontrol", "srun"]
missing = [p for p in programs if shutil.which(p) is None]
if missing:
    print("skipping: no " + ", ".join(missing) + " (Debian: slurmctld slurmd slurm-client)")
    sys.exit(77)
if os.geteuid() != 0:
    # slurmd launches job steps through setuid/setgid calls; only tried as root.
    print("skipping: slurmd needs root to launch job steps")
    sys.exit(77)

import h5py  # noqa: E402  (after the skip: the skip must not need it)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))  # job_support
from job_support import INTERRUPTIBLE_SWEEP, interrupt_after_first_point, points_in, slurm_conf, stop_daemons  # noqa: E402

LIMIT_S = 300  # bound on every wait on a loaded machine, never a pass criterion


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def wait_for(what, check):
    deadline = time.monotonic() + LIMIT_S
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.1)


tmp = tempfile.mkdtemp(prefix="minictx_slurm_")
node = socket.gethostname().split(".")[0]
user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
conf = os.path.join(tmp, "slurm.conf")
for d in ("state", "spool-" + node, "jobs"):
    os.makedirs(os.path.join(tmp, d))
with open(conf, "w") as f:
    f.write(slurm_conf(tmp, "minictx-test", node, [f"NodeName={node} CPUs={os.cpu_count()} State=UNKNOWN"],
                       f"PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
                       user))
    # Free ports: the test may run beside a Slurm of this machine's.
    f.write(f"SlurmctldPort={free_port()}\nSlurmdPort={free_port()}\n")
env = dict(os.environ, SLURM_CONF=conf)
for k in [k for k in env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
    del env[k]  # a test run inside a Slurm job must not leak that job into ours
daemons = [subprocess.Popen([d, "-D", "-f", conf], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
           for d in ("slurmctld", "slurmd")]


def slurm(*args):
    # From the test's own folder: the job script writes its status file where it is
    # submitted (SLURM_SUBMIT_DIR), not into the build or the source tree.
    return subprocess.run(list(args), env=env, capture_output=True, text=True, cwd=tmp)


def log_tail():
    out = ""
    for name in ("slurmctld.log", f"slurmd-{node}.log"):
        path = os.path.join(tmp, name)
        if os.path.exists(path):
            out += f"--- {name}\n" + "".join(open(path).readlines()[-20:])
    return out


try:
    wait_for("the node to be idle", lambda: slurm("sinfo", "-h", "-o", "%T").stdout.strip() == "idle")

    deck = os.path.join(tmp, "sweep.yaml")
    with open(deck, "w") as f:
        f.write(INTERRUPTIBLE_SWEEP)
    results = os.path.join(tmp, "results.h5")
    sbatch = ["sbatch", "--parsable", "-n", "2", "-J", "minictx-test", "-D", tmp, "-o", tmp + "/jobs/%j.out",
              "--export=ALL,MINICTX=" + minictx + ",MINICTX_ROOT=" + source,
              os.path.join(source, "jobs", "minictx.sbatch"), deck, "-o", results]

    def finished(job):
        return slurm("squeue", "-h", "-j", job).stdout.strip() == ""

    def job_output(job):
        with open(os.path.join(tmp, "jobs", job + ".out")) as f:
            return f.read()

    first_job, out = interrupt_after_first_point(slurm, sbatch, results, finished, job_output, wait_for)
    print(out)
    assert "minictx job " + first_job + ": 2 ranks on 1 node(s)" in out, out
    assert "interrupted by SIGTERM: sweep interrupted with 1 of 3 points" in out, out
    assert points_in(results) == ["point_0000"]
    state = slurm("scontrol", "show", "job", first_job).stdout
    assert "ExitCode=143:0" in state or "ExitCode=0:15" in state or state == "", state

    # Waited for as the first job is: sbatch --wait polls at growing intervals (2 s, then 8 s).
    resume = slurm(*(sbatch + ["--resume"]))
    assert resume.returncode == 0, resume.stderr
    second_job = resume.stdout.strip().split(";")[0]
    wait_for("the resumed job to end", lambda: finished(second_job))
    state = slurm("scontrol", "show", "job", second_job).stdout
    assert "ExitCode=0:0" in state, state + job_output(second_job) + log_tail()
    out = job_output(second_job)
    print(out)
    assert out.count("FOM") == 2 and "in the file already (--resume)" in out, out
    assert points_in(results) == ["point_0000", "point_0001", "point_0002"]
    assert open(os.path.join(tmp, f"minictx-{second_job}.status")).read().strip() == "0"
    with h5py.File(results, "r") as f:
        prov = f["provenance"].attrs
        assert prov["env.SLURM_JOB_ID"] == second_job, dict(prov)
        assert prov["env.SLURM_JOB_NODELIST"] == node, dict(prov)
        assert prov["world_size"] == 2
        assert prov["resumed_points"] == 1
        assert f["points/point_0002/labels"].attrs["world_size"] == "2"
    print("slurm ok: jobs", first_job, second_job)
except AssertionError:
    print(log_tail())
    raise
finally:
    stop_daemons(daemons)
    shutil.rmtree(tmp, ignore_errors=True)
