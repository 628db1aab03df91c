"""What the batch and MPI checks share about a running minictx job: the points its
results file holds, its ranks' processes, its own output lines, the daemons it ran under."""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "outputs"))


def points_in(path):
    """The points written to the results file so far (none before it exists): those in it
    and those in its journal."""
    import h5py  # here, so that a check can skip before it needs h5py
    from journal_points import journal_points
    if not os.path.exists(path):
        return []
    with h5py.File(path, "r") as f:
        names = set(f["points"].keys()) if "points" in f else set()
        journal_id = f.attrs.get("journal_id")
    return sorted(names | {p["name"] for p in journal_points(path, journal_id)})


def rank_pids(results_path):
    """rank -> pid of the minictx processes writing RESULTS_PATH (their command line names
    the file). The rank is the launcher's variable: MPICH's hydra and Slurm's PMI set
    PMI_RANK, Open MPI OMPI_COMM_WORLD_RANK, PMIx launchers PMIX_RANK."""
    ranks = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue
        if argv and argv[0].endswith(b"minictx") and results_path.encode() in argv:
            rank = env.get(b"PMI_RANK", env.get(b"OMPI_COMM_WORLD_RANK", env.get(b"PMIX_RANK")))
            if rank is not None:
                ranks[int(rank)] = int(entry)
    return ranks


def own_lines(text):
    """TEXT's lines less what the launcher adds about the job: Open MPI's mpiexec frames its
    notices (a rank exited non-zero, the job was aborted) between lines of dashes, and says
    when it forwards a signal; MPICH's hydra adds nothing."""
    lines, in_notice = [], False
    for line in text.strip().splitlines():
        if re.fullmatch(r"-{20,}", line):
            in_notice = not in_notice
        elif not in_notice and not re.fullmatch(r"mpiexec(\.\w+)?: Forwarding signal \d+ to job", line):
            lines.append(line)
    return lines


def stop_daemons(daemons):
    """SIGTERM to each, then SIGKILL to any still there after 30 s."""
    for d in daemons:
        d.terminate()
    for d in daemons:
        try:
            d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()


def stop_rank_and_wait(job, pid, limit_s):
    """SIGSTOPs PID, a rank of JOB (a Popen with its output piped), and waits for JOB to
    end: (its output, seconds from the stop to the end). The stopped rank is killed
    after, whatever happened: no stopped process is left behind."""
    try:
        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        output = job.communicate(timeout=limit_s)[0]
        return output, time.monotonic() - t0
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def slurm_conf(tmp, cluster, controller, nodes, partition, user):
    """slurm.conf of a test cluster whose files all live in TMP: no authentication
    (auth/none), no cgroups, accounting or CPU binding; one spool directory, pid and log
    file per node (%n: the node's name; TMP/spool-NODE must exist). CONTROLLER and each
    line of NODES and PARTITION are given as Slurm writes them."""
    node_lines = "".join(line + "\n" for line in nodes)
    return f"""ClusterName={cluster}
SlurmctldHost={controller}
AuthType=auth/none
CredType=cred/none
SlurmUser={user}
SlurmdUser={user}
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool-%n
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd-%n.pid
SlurmctldLogFile={tmp}/slurmctld.log
SlurmdLogFile={tmp}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
{node_lines}{partition}
"""


# A 3-point sweep whose first point ends fast and whose second (30 iterations of 1024
# tokens) is still running when a test signals the job after the first point.
INTERRUPTIBLE_SWEEP = """run: {mode: attention, warmup: 0, iters: [1, 100, 1]}
attention: {backend: ring}
sequence: {length: [256, 1024, 256]}
sweep: {zip: [sequence.length, run.iters]}
"""


def interrupt_after_first_point(slurm, sbatch, results, finished, job_output, wait_for):
    """Submits `sbatch` (its arguments, --parsable), waits until the job has written its
    first point to `results`, sends it SIGTERM and waits for it to end; returns the job id
    and its output."""
    submit = slurm(*sbatch)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    wait_for("the first point", lambda: points_in(results) or finished(job))
    assert points_in(results) == ["point_0000"], (points_in(results), job_output(job))
    cancel = slurm("scancel", "--signal=TERM", job)
    assert cancel.returncode == 0, cancel.stderr
    wait_for("the job to end", lambda: finished(job))
    return job, job_output(job)
