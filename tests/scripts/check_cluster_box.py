#!/usr/bin/env python3
"""minictx on a real multi-host cluster in a box (cluster_box.py: 2 hosts as network
namespaces with their own addresses, a bridge between them and their own hostnames, one
shared filesystem).

MPI across the hosts, for Open MPI (when its build is given) and MPICH (hydra), each
launching through its own remote-shell mechanism (an ssh stand-in that enters the host's
namespaces): a 4-point deck (ring, usp, double_ring, burst) on 2 hosts of 2 ranks must find
2 ranks per node from MPI_COMM_TYPE_SHARED, put each rank on the host the launcher chose,
send per rank exactly the intra- and inter-node bytes of the formulas (docs/user-guide.md,
"Backends") and of the emulated run of the same deck on one host
(topology.ranks_per_node: 2), keep the intra-node bytes off TCP (the loopback carries a small fraction of them: shared memory),
send the inter-node bytes over the veths by TCP (each host's veth counts at least the
inter-node bytes its ranks sent; through shared memory it counts a few kB), and verify
VALID at every point as the emulated run does. The hosts have their own IPC namespaces, so
that UCX (MPICH's transport) does not take shared memory between them; MPICH's ranks run
with mpich_finalize_order preloaded (Mpi says why). The watchdog: rank 1, alone on the
second host, is stopped (SIGSTOP); rank 0 must name it, the job end within the limit, and
the results file keep its completed point, readable by the report.

Slurm across the hosts: slurmctld and one slurmd per host (own NodeName, NodeAddr, spool,
pid and log file), jobs/minictx.sbatch with --nodes=2 --ntasks-per-node=2 (srun --mpi=pmi2),
the time-limit signal (scancel --signal=TERM, what --signal=TERM@ sends) after the first
point and --resume, then a 2-task array, one task per node, writing distinct files. Its
hosts share the machine's IPC namespace (srun's PMI-2 ranks get no finalize-order library),
so MPICH's bytes between them go through UCX's shared memory.

Teardown: a run killed by SIGKILL (what a ctest timeout sends) while an MPI job runs across
the hosts leaves no namespace, link, mount or process behind.

  check_cluster_box.py [--mpich MINICTX --mpich-finalize-order LIBRARY] [--openmpi MINICTX]
                       --source SOURCE_DIR
  check_cluster_box.py --cleanup      removes the clusters of runs that died
Each implementation is checked when its binary (and for MPICH the library,
libmpich_finalize_order.so of the build) is given and exists; Slurm needs the MPICH binary. Exits 77 (ctest SKIP_RETURN_CODE) where namespaces cannot be made (not root, no ip
netns) or no binary exists."""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))  # job_support
import cluster_box  # noqa: E402
from job_support import INTERRUPTIBLE_SWEEP, interrupt_after_first_point, points_in, rank_pids, slurm_conf, stop_daemons, stop_rank_and_wait  # noqa: E402

HOSTS, PER_HOST = 2, 2
RANKS = HOSTS * PER_HOST
LIMIT_S = 120  # bound on every wait on a loaded machine, never a pass criterion
WATCHDOG_S = 5
# The abort must come within the watchdog's limit plus the job's teardown across hosts.
END_WITHIN_S = WATCHDOG_S + 25
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

# The deck's problem: the tiny model's attention (H = 8 query heads, Hkv = 4, D = 32),
# B = 1, 512 tokens (a multiple of 2·RANKS, so zigzag pads nothing: L = 512 / 4 = 128).
B, S, H, HKV, D = 1, 512, 8, 4, 32
BACKENDS = ["ring", "usp", "double_ring", "burst"]
DECK = f"""run: {{mode: attention, warmup: 0, iters: 1}}
sequence: {{length: {S}, batch: {B}}}
attention:
  backend: [{", ".join(BACKENDS)}]
  ring_type: zigzag
  ulysses_degree: [1, 2, 1, 1]
sweep: {{zip: [attention.backend, attention.ulysses_degree]}}
"""


LSE_PLANES = 2  # the host device's (Device::lse_planes)


def expected_bytes(backend):
    """(intra, inter) bytes each rank sends in one step, from the formulas of
    docs/user-guide.md, "Backends", for RANKS ranks in nodes of PER_HOST. The host device
    keeps the LSE in LSE_PLANES fp32 planes, which travel with it."""
    L = S // RANKS
    n = B * L * HKV * D  # one K (or V) block, floats
    ring_total = lambda p: (8 * (p - 1) + 16 * p - 8)  # noqa: E731  forward + backward, ×n
    if backend == "ring":
        # Everything goes to rank r+1: across a node boundary from the last rank of a node.
        return [(0, ring_total(RANKS) * n) if (r + 1) % PER_HOST == 0 else (ring_total(RANKS) * n, 0)
                for r in range(RANKS)]
    if backend == "usp":
        u, r = 2, RANKS // 2  # Ulysses pairs of consecutive ranks (one node), rings across
        s = HKV // u
        ulysses = 4 * B * L * (u - 1) * ((6 * H // u + 6 * s) * D + 2 * LSE_PLANES * H // u)
        return [(ulysses, ring_total(r) * B * u * L * s * D)] * RANKS
    w = PER_HOST  # one window (double_ring) / inner ring (burst) per node
    W = RANKS // w
    if backend == "double_ring":
        return [(8 * W * (w - 1) * n + 4 * W * (4 * w - 2) * n, 8 * (W - 1) * n + 4 * (4 * W - 2) * n)] * RANKS
    assert backend == "burst"  # intra ring, bwd_comm q
    m = B * L * H * D
    block = 2 * m + (LSE_PLANES + 1) * B * L * H  # Q, dO; the LSE's planes and D
    return [(8 * W * (w - 1) * n + 4 * W * ((w - 1) * block + w * m),
             8 * (W - 1) * n + 4 * ((W - 1) * block + W * m))] * RANKS


def read_results(path):
    """Per point: labels, per-rank (intra, inter) bytes, verdict; and the provenance."""
    import h5py
    with h5py.File(path, "r") as f:
        points = {}
        for name in sorted(f["points"]):
            p = f["points"][name]
            labels = dict(p["labels"].attrs)
            points[name] = {
                "backend": str(labels.get("backend", "")),
                "bytes": [(int(a), int(b)) for a, b in zip(p["bytes_sent_intra"][:], p["bytes_sent_inter"][:])],
                "verdict": str(p.attrs.get("verdict", "")),
            }
        prov = dict(f["provenance"].attrs)
        hosts = [h.decode() if isinstance(h, bytes) else str(h) for h in f["provenance/hostnames"][:]] \
            if "hostnames" in f["provenance"] else []
    return points, prov, hosts


def wait_for(what, check, limit=LIMIT_S, step=0.1):
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(step)


class Mpi:
    """One MPI implementation: its binary, its launch across the hosts (through the
    box's ssh stand-in) and on one host. Open MPI's (ob1) transports pick shared memory
    (vader) within a node and TCP between nodes. MPICH (ch4:ucx) takes its own shared
    memory within a node and leaves the rest to UCX, which takes shared memory to any
    process of the same machine and IPC namespace, TCP otherwise (hosts with their own
    IPC namespaces). Over TCP, MPICH 4.0's MPI_Finalize hangs about one run in two: it
    waits in a blocking PMI barrier after flushing its endpoints, while a peer's flush
    needs its answer (mpich_finalize_order.cpp has the details). MPICH's ranks run with
    that library preloaded (finalize_order), which gives MPI_Finalize MPICH 4.2's order."""

    def __init__(self, name, minictx, finalize_order=None):
        self.name, self.minictx, self.finalize_order = name, minictx, finalize_order

    def across(self, box, per_host, argv):
        hosts = ",".join(f"{cluster_box.hostname(i)}:{per_host}" for i in range(box.hosts))
        n = str(per_host * box.hosts)
        if self.name == "mpich":
            launch = ["mpiexec.mpich", "-launcher", "ssh", "-launcher-exec", box.ssh, "-hosts", hosts, "-n", n,
                      "-genv", "LD_PRELOAD", self.finalize_order]
        else:
            launch = ["mpiexec.openmpi", "--mca", "plm_rsh_agent", box.ssh, "--host", hosts, "-n", n, "-x",
                      "MINICTX_DATA_DIR"]
        return box.on(0, launch + [self.minictx, *argv])

    def one_host(self, ranks, argv):
        launch = ["mpiexec.mpich", "-n", str(ranks)] if self.name == "mpich" else \
            ["mpiexec.openmpi", "--oversubscribe", "-n", str(ranks)]
        return launch + [self.minictx, *argv]


def run(argv, timeout=LIMIT_S):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **ROOT_ENV),
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def check_bytes_and_verdicts(box, mpi, tmp):
    """The deck across the hosts and emulated on one: layout, bytes, links, verdicts."""
    deck = os.path.join(tmp, "backends.yaml")
    with open(deck, "w") as f:
        f.write(DECK)
    real, emulated = (os.path.join(tmp, f"{mpi.name}-{k}.h5") for k in ("real", "emulated"))
    links = lambda: [(box.link_bytes(i, "eth0"), box.link_bytes(i, "lo")) for i in range(HOSTS)]  # noqa: E731
    before = links()
    run(mpi.across(box, PER_HOST, ["run", deck, "--set", "run.verify=true", "-o", real]))
    after = links()
    run(mpi.one_host(RANKS, ["run", deck, "--set", "run.verify=true", "--set", f"topology.ranks_per_node={PER_HOST}",
                             "-o", emulated]))
    points, prov, hosts = read_results(real)
    epoints, eprov, _ = read_results(emulated)

    # The layout: the launcher's hosts, found by MPI_COMM_TYPE_SHARED, not set by the deck.
    want_hosts = [cluster_box.hostname(r // PER_HOST) for r in range(RANKS)]
    assert hosts == want_hosts, (hosts, want_hosts)
    assert (prov["ranks_per_node"], prov["nodes"]) == (PER_HOST, HOSTS), prov
    assert (eprov["ranks_per_node"], eprov["nodes"]) == (PER_HOST, HOSTS), eprov
    assert "topology.ranks_per_node" not in str(prov.get("deck", "")), prov.get("deck")

    inter_by_host = [0] * HOSTS
    intra_by_host = [0] * HOSTS
    for name, p in points.items():
        want = expected_bytes(p["backend"])
        for results, label in ((points, "across hosts"), (epoints, "emulated")):
            got = results[name]["bytes"]
            assert results[name]["backend"] == p["backend"], (label, name)
            assert got == want, f"{mpi.name} {label} {p['backend']}: bytes (intra, inter) per rank {got}, formula {want}"
        for r, (intra, inter) in enumerate(p["bytes"]):
            intra_by_host[r // PER_HOST] += intra
            inter_by_host[r // PER_HOST] += inter
        assert p["verdict"] == "VALID" == epoints[name]["verdict"], \
            (mpi.name, p["backend"], p["verdict"], epoints[name]["verdict"])
        print(f"{mpi.name} {p['backend']}: bytes per rank (intra, inter) {p['bytes']} = formula = emulated; "
              f"VALID across hosts and emulated")

    # What the links carried during the run: each host's loopback well under a tenth of
    # its ranks' intra-node bytes (those went through shared memory, not TCP), each host's
    # veth at least its ranks' inter-node bytes (TCP across the bridge; had they gone
    # through shared memory, it would have carried a few kB of the launcher's traffic).
    for i in range(HOSTS):
        veth = after[i][0] - before[i][0]
        lo = after[i][1] - before[i][1]
        print(f"{mpi.name} host {cluster_box.hostname(i)}: veth sent {veth} B for {inter_by_host[i]} B inter-node; "
              f"loopback {lo} B for {intra_by_host[i]} B intra-node")
        assert lo < intra_by_host[i] / 10, f"{mpi.name}: intra-node bytes over TCP: loopback {lo} B"
        assert veth >= inter_by_host[i], \
            f"{mpi.name}: the inter-node bytes did not cross the veth by TCP: {veth} B < {inter_by_host[i]} B"


def check_watchdog(box, mpi, tmp):
    """Rank 1, alone on the second host, is stopped in the second point."""
    results = os.path.join(tmp, f"{mpi.name}-watchdog.h5")
    argv = ["run", "--set", "run.mode=attention", "--set", "attention.backend=ring", "--set",
            "sequence.length=[256,2048,256]", "--set", "run.iters=[1,400,1]", "--set", "run.warmup=0", "--set",
            "sweep.zip=[sequence.length,run.iters]", "--set", f"run.watchdog_seconds={WATCHDOG_S}", "-o", results]
    job = subprocess.Popen(mpi.across(box, 1, argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, **ROOT_ENV), stdin=subprocess.DEVNULL)
    try:
        wait_for("the first point", lambda: points_in(results) or job.poll() is not None)
        assert job.poll() is None, "the sweep ended before its second point:\n" + job.stdout.read()
        # Into the second point: its 400 iterations take about 20 s unstopped, so the stop
        # lands in them however fast the transport or loaded the machine (the job then ends
        # by the watchdog, 5 s after the stop, not after the point).
        time.sleep(1)
        ranks = rank_pids(results)
        assert sorted(ranks) == [0, 1], ranks
        uts = os.stat(f"/proc/{box.holders[1].pid}/ns/uts").st_ino
        assert os.stat(f"/proc/{ranks[1]}/ns/uts").st_ino == uts, "rank 1 is not on the second host"
        output, ended = stop_rank_and_wait(job, ranks[1], LIMIT_S)
    finally:
        if job.poll() is None:
            job.kill()
    print(f"{mpi.name}: the job ended {ended:.1f} s after rank 1 (on {cluster_box.hostname(1)}) was stopped "
          f"(watchdog {WATCHDOG_S} s)")
    assert job.returncode != 0, job.returncode
    assert ended < END_WITHIN_S, (ended, output)
    lines = [l for l in output.splitlines() if l.startswith("minictx: watchdog:")]
    # Rank 0 speaks once. Open MPI resumes a stopped rank (SIGCONT) to end it, and rank 1,
    # whose own wait then exceeds the limit, may say so too before it is killed.
    from_rank_0 = [l for l in lines if l.startswith("minictx: watchdog: rank 0 ")]
    assert len(from_rank_0) == 1 and all(l.startswith("minictx: watchdog: rank 1 ") for l in lines
                                         if l not in from_rank_0), output
    print(from_rank_0[0])
    assert re.match(r"minictx: watchdog: rank 0 waited [\d.]+ s in MPI_\w+.*\((send to rank 1, receive from rank 1|"
                    r"group of 2 ranks \(0,1\))\) at point_0001 .*aborting the job", from_rank_0[0]), from_rank_0[0]
    assert points_in(results) == ["point_0000"], points_in(results)
    report = run([mpi.minictx, "report", results, "--format", "csv"])
    assert len(report.strip().splitlines()) == 2, report


def check_slurm(box, minictx, source, tmp):
    """One slurmd per host, slurmctld on the first; the batch script across both."""
    tmp = os.path.join(tmp, "slurm")
    os.makedirs(os.path.join(tmp, "state"))
    os.makedirs(os.path.join(tmp, "jobs"))
    names = [cluster_box.hostname(i) for i in range(HOSTS)]
    for name in names:
        os.makedirs(os.path.join(tmp, "spool-" + name))
    conf = os.path.join(tmp, "slurm.conf")
    with open(conf, "w") as f:
        f.write(slurm_conf(tmp, "minictx-box", f"{names[0]}({cluster_box.address(0)})",
                           [f"NodeName={names[i]} NodeAddr={cluster_box.address(i)} CPUs={os.cpu_count()} State=UNKNOWN"
                            for i in range(HOSTS)],
                           f"PartitionName=box Nodes=box[0-{HOSTS - 1}] Default=YES MaxTime=INFINITE State=UP", "root"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}  # no job of ours leaks in
    env["SLURM_CONF"] = conf
    daemons = [subprocess.Popen(box.on(0, ["slurmctld", "-D", "-f", conf]), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.STDOUT)]
    daemons += [subprocess.Popen(box.on(i, ["slurmd", "-D", "-f", conf, "-N", names[i]], machine_sys=True), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT) for i in range(HOSTS)]

    def slurm(*args):
        return subprocess.run(box.on(0, list(args)), env=env, capture_output=True, text=True, cwd=tmp)

    def finished(job):
        return slurm("squeue", "-h", "-j", job).stdout.strip() == ""

    def job_output(job):
        with open(os.path.join(tmp, "jobs", job + ".out")) as f:
            return f.read()

    def logs():
        out = ""
        for name in sorted(os.listdir(tmp)):
            if name.endswith(".log"):
                out += f"--- {name}\n" + "".join(open(os.path.join(tmp, name)).readlines()[-15:])
        return out

    try:
        wait_for("both nodes idle", lambda: slurm("sinfo", "-h", "-N", "-o", "%N %T").stdout.split()
                 == [w for name in names for w in (name, "idle")], step=0.25)
        deck = os.path.join(tmp, "sweep.yaml")
        with open(deck, "w") as f:
            f.write(INTERRUPTIBLE_SWEEP)
        results = os.path.join(tmp, "results.h5")
        export = f"--export=ALL,MINICTX={minictx},MINICTX_ROOT={source}"
        script = os.path.join(source, "jobs", "minictx.sbatch")
        sbatch = ["sbatch", "--parsable", f"--nodes={HOSTS}", f"--ntasks-per-node={PER_HOST}", "-J", "minictx-box",
                  "-D", tmp, "-o", tmp + "/jobs/%j.out", export, script, deck, "-o", results]
        first, out = interrupt_after_first_point(slurm, sbatch, results, finished, job_output, wait_for)
        print(out)
        assert f"minictx job {first}: {RANKS} ranks on {HOSTS} node(s) (box[0-1])" in out, out
        assert "interrupted by SIGTERM: sweep interrupted with 1 of 3 points" in out, out
        assert "minictx exit status: 143" in out, out
        assert points_in(results) == ["point_0000"]

        resume = slurm(*(sbatch + ["--resume"]))
        assert resume.returncode == 0, resume.stderr
        second = resume.stdout.strip().split(";")[0]
        wait_for("the resumed job to end", lambda: finished(second), step=0.25)
        out = job_output(second)
        print(out)
        assert out.count("FOM") == 2 and "in the file already (--resume)" in out, out + logs()
        assert "minictx exit status: 0" in out, out
        points, prov, hosts = read_results(results)
        assert sorted(points) == ["point_0000", "point_0001", "point_0002"], sorted(points)
        assert prov["env.SLURM_JOB_ID"] == second, prov
        assert prov["env.SLURM_JOB_NODELIST"] == "box[0-1]", prov
        assert prov["env.SLURM_JOB_NUM_NODES"] == str(HOSTS), prov
        assert (prov["world_size"], prov["ranks_per_node"], prov["nodes"]) == (RANKS, PER_HOST, HOSTS), prov
        assert hosts == [names[r // PER_HOST] for r in range(RANKS)], hosts
        assert prov["resumed_points"] == 1, prov
        print(f"slurm: jobs {first} (SIGTERM after point 0) and {second} (--resume) on {hosts}")

        # An array of two 1-node tasks, each of a whole node's CPUs: they run side by side,
        # one per node, and name their files by job and task.
        array = slurm("sbatch", "--parsable", "--array=0-1", "--nodes=1", f"--ntasks-per-node={os.cpu_count()}",
                      "-J", "minictx-array", "-D", tmp, "-o", tmp + "/jobs/%A_%a.out", export, script, deck,
                      "--set", "sequence.length=256", "--set", "run.iters=1", "--set", "sweep.zip=[]")
        assert array.returncode == 0, array.stderr
        array_id = array.stdout.strip().split(";")[0]
        wait_for("the array to end", lambda: finished(array_id), step=0.25)
        outputs = os.path.join(tmp, "outputs")
        files = sorted(f for f in os.listdir(outputs) if f.endswith(".h5")) if os.path.isdir(outputs) else []
        assert len(files) == 2, (files, [job_output(f"{array_id}_{t}") for t in (0, 1)], logs())
        assert sorted(re.search(r"-job\d+_(\d)\.h5$", f).group(1) for f in files) == ["0", "1"], files
        nodes = sorted(read_results(os.path.join(outputs, f))[2][0] for f in files)
        assert nodes == names, nodes
        print(f"slurm array {array_id}: {files} on {nodes}")
    except AssertionError:
        print(logs())
        raise
    finally:
        stop_daemons(daemons)


def check_forced_kill(mpi):
    """A run killed by SIGKILL while an MPI job spans the hosts leaves nothing behind."""
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--hold", mpi.name, mpi.minictx] +
                             ([mpi.finalize_order] if mpi.finalize_order else []),
                             stdout=subprocess.PIPE, text=True, env=dict(os.environ, **ROOT_ENV))
    prefix = cluster_box.run_prefix(child.pid)
    try:
        line = child.stdout.readline()
        assert line.startswith("holding"), line
        assert cluster_box.leftovers(prefix), "the held cluster is not there"
        results = line.split()[1]
        wait_for("the held job's ranks", lambda: len(rank_pids(results)) == RANKS)
    finally:
        child.kill()  # what ctest does at a test's timeout: SIGKILL to the test process
        child.wait()
    t0 = time.monotonic()
    deadline = t0 + 60
    while (cluster_box.leftovers(prefix) or rank_pids(results)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = cluster_box.leftovers(prefix) + [f"rank {r} pid {p}" for r, p in rank_pids(results).items()]
    assert not left, "left behind after SIGKILL: " + ", ".join(left)
    print(f"forced kill: nothing of {prefix} left {time.monotonic() - t0:.1f} s after SIGKILL of the test")


def hold(mpi):
    """The victim of check_forced_kill: a cluster and a job across it, until killed."""
    box = cluster_box.Cluster(HOSTS, cluster_box.scratch_dir())
    box.up()
    results = os.path.join(box.workdir, "held.h5")
    subprocess.Popen(mpi.across(box, PER_HOST, [
        "run", "--set", "run.mode=attention", "--set", "sequence.length=256", "--set", "run.iters=100000", "-o",
        results]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("holding", results, flush=True)
    time.sleep(LIMIT_S)


def timed(what, check, *args):
    t0 = time.monotonic()
    check(*args)
    print(f"{what}: {time.monotonic() - t0:.0f} s")


def implementations(args):
    """The MPI implementations to check: those whose binary was given and exists (the
    other preset's build directory may not be built yet), each with its launcher; MPICH
    with its finalize-order library."""
    mpis = []
    for name in ("mpich", "openmpi"):
        binary = args.get("--" + name)
        finalize_order = args.get("--mpich-finalize-order") if name == "mpich" else None
        if name == "mpich" and binary and not (finalize_order and os.path.exists(finalize_order)):
            print(f"mpich: not checked across hosts (no finalize-order library at {finalize_order})")
        elif binary and os.path.exists(binary) and shutil.which("mpiexec." + name):
            mpis.append(Mpi(name, binary, finalize_order))
        elif binary:
            print(f"{name}: not checked (no minictx of its preset at {binary}, or no mpiexec.{name})")
    return mpis


def main():
    if sys.argv[1:] == ["--cleanup"]:
        print("removed:", cluster_box.cleanup_stale() or "nothing")
        return 0
    if sys.argv[1] == "--hold":
        hold(Mpi(*sys.argv[2:5]))
        return 0
    why = cluster_box.usable()
    if why:
        print("skipping: " + why)
        return 77
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    source = args["--source"]
    mpis = implementations(args)
    mpich = next((m for m in mpis if m.name == "mpich"), None)
    slurm_missing = [p for p in ("slurmctld", "slurmd", "sbatch", "srun") if shutil.which(p) is None]
    if not mpis:
        print("skipping: no MPI build of minictx to run")
        return 77
    slurm = bool(mpich) and not slurm_missing
    if not slurm:
        # Slurm launches the MPICH build (srun --mpi=pmi2, what Debian's MPICH speaks).
        print("slurm: not checked (" + ("no " + ", ".join(slurm_missing) if slurm_missing else "no MPICH build") + ")")
    # The machine profiles, wherever the ranks start (a batch job's directory, say).
    os.environ.setdefault("MINICTX_DATA_DIR", os.path.join(source, "inputs"))
    t0 = time.monotonic()
    tmp = cluster_box.scratch_dir()
    try:
        timed("forced kill", check_forced_kill, mpis[0])
        # MPI on hosts with their own IPC namespaces (TCP between them), Slurm on hosts
        # that share the machine's (its PMI-2 ranks get no finalize-order library).
        for own_ipc, here, with_slurm in ((True, mpis, False), (False, [], slurm)):
            if not here and not with_slurm:
                continue
            work = os.path.join(tmp, "own-ipc" if own_ipc else "shared-ipc")
            os.makedirs(work)
            with cluster_box.Cluster(HOSTS, work, own_ipc=own_ipc) as box:
                for mpi in here:
                    timed(f"{mpi.name} bytes and verdicts", check_bytes_and_verdicts, box, mpi, work)
                    timed(f"{mpi.name} watchdog", check_watchdog, box, mpi, work)
                if with_slurm:
                    timed("slurm", check_slurm, box, mpich.minictx, source, work)
            left = [l for l in cluster_box.leftovers(box.prefix) if l != "directory " + tmp]
            assert not left, "left behind: " + ", ".join(left)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    checked = [m.name for m in mpis] + (["slurm"] if slurm else [])
    print(f"cluster box ok ({', '.join(checked)}) in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
