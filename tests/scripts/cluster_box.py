"""A cluster in a box: N hosts on this machine, each a network namespace with its own
address (a veth pair into a bridge that lives in a switch namespace of its own) and its own
hostname (a UTS namespace), optionally its own IPC namespace, all sharing the filesystem
as cluster nodes share one.

Every object (and the run's scratch directories) is named with the prefix mx<PID>-, PID
the creating process's, so that
leftovers of a run that died are recognised (their PID is gone) and removed by
cleanup_stale(). A reaper process, detached from the test's process tree, waits on a pipe
the test holds and tears the cluster down when the test ends on any path, SIGKILL
included. The addresses are 10.77.0.0/24 and exist only inside the namespaces created here.

  with Cluster(2, tmpdir) as box:
      subprocess.run(box.on(0, ["hostname"]))   # box0
      box.ssh                                   # an ssh stand-in for launchers: ssh HOST CMD...
"""
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import time

SUBNET = "10.77.0"
NETNS_DIR = "/run/netns"
ETC_NETNS = "/etc/netns"  # ip netns exec bind-mounts /etc/netns/NS/hosts over /etc/hosts


def hostname(i):
    return f"box{i}"


def address(i):
    return f"{SUBNET}.{i + 1}"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespaces(prefix):
    """The network namespaces whose names start with PREFIX."""
    if not os.path.isdir(NETNS_DIR):
        return []
    return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(prefix))


def run_prefix(pid=None):
    """The prefix of every object a run (PID, default this process) creates."""
    return f"mx{pid or os.getpid()}-"


def scratch_dir():
    """A temporary directory of this run, removed with its cluster if the run dies."""
    return tempfile.mkdtemp(prefix=run_prefix())


def _scratch_dirs(prefix):
    top = tempfile.gettempdir()
    return [os.path.join(top, n) for n in os.listdir(top) if n.startswith(prefix)]


def leftovers(prefix):
    """Everything named PREFIX that exists: namespaces, links in this namespace, mounts,
    /etc/netns entries, processes inside the namespaces. Empty once torn down."""
    found = ["netns " + n for n in namespaces(prefix)]
    found += ["link " + l for l in re.findall(r"^\d+: ([^:@]+)", _ip("-o", "link", "show").stdout, re.M)
              if l.startswith(prefix)]
    with open("/proc/self/mountinfo") as f:
        found += ["mount " + line.split()[4] for line in f if "/" + prefix in line.split()[4]]
    if os.path.isdir(ETC_NETNS):
        found += [ETC_NETNS + "/" + n for n in os.listdir(ETC_NETNS) if n.startswith(prefix)]
    found += [f"process {pid} ({comm})" for pid, comm in _processes_named(prefix)]
    return found + ["directory " + d for d in _scratch_dirs(prefix)]


def _processes_named(prefix):
    """Processes in a PREFIX namespace (by the inode of their network namespace), plus the
    namespace holders, which are tagged in their command line."""
    inodes = set()
    for n in namespaces(prefix):
        try:
            inodes.add(os.stat(os.path.join(NETNS_DIR, n)).st_ino)
        except OSError:
            pass
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/comm") as f:
                comm = f.read().strip()
            net = os.stat(f"/proc/{entry}/ns/net").st_ino
        except OSError:
            continue
        if net in inodes or ("cluster_box_holder " + prefix).encode() in cmdline:
            found.append((int(entry), comm))
    return found


def cleanup(prefix, scratch=True):
    """Removes every PREFIX object: kills the processes in its namespaces, deletes the
    namespaces (their veths go with them), links left in this namespace, /etc/netns
    entries and (SCRATCH) the run's scratch directories. Safe on a partial or stale
    state; returns what could not be removed."""
    for _ in range(50):
        procs = _processes_named(prefix)
        if not procs:
            break
        for pid, _comm in procs:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    for n in namespaces(prefix):
        _ip("netns", "delete", n, check=False)
    for line in _ip("-o", "link", "show").stdout.splitlines():
        m = re.match(r"^\d+: ([^:@]+)", line)
        if m and m.group(1).startswith(prefix):
            _ip("link", "delete", m.group(1), check=False)
    if os.path.isdir(ETC_NETNS):
        for n in os.listdir(ETC_NETNS):
            if n.startswith(prefix):
                d = os.path.join(ETC_NETNS, n)
                for f in os.listdir(d):
                    os.unlink(os.path.join(d, f))
                os.rmdir(d)
    if scratch:
        for d in _scratch_dirs(prefix):
            shutil.rmtree(d, ignore_errors=True)
    # A namespace's processes can take a moment to leave after SIGKILL (zombies of a
    # dead parent): wait for the list to empty before reporting.
    deadline = time.monotonic() + 10
    while _cluster_left(prefix) and time.monotonic() < deadline:
        time.sleep(0.1)
    return leftovers(prefix)


def _cluster_left(prefix):
    return [l for l in leftovers(prefix) if not l.startswith("directory ")]


def cleanup_stale():
    """Tears down the clusters of runs that died (their mx<PID> creator is gone)."""
    prefixes = set()
    for n in namespaces("mx"):
        m = re.match(r"mx(\d+)-", n)
        if m and not _alive(int(m.group(1))):
            prefixes.add(m.group(0))
    for p in sorted(prefixes):
        cleanup(p)
    return sorted(prefixes)


def _start_reaper(prefix):
    """A process outside the test's tree (double fork, own session) that tears the
    cluster down when the write end of its pipe closes: at Cluster.down(), which first
    writes a byte (the run goes on: its scratch directories stay), or when the test
    dies, however it dies (they go too). Returns the write end."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        os.close(write_end)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        try:
            orderly = False
            while True:
                data = os.read(read_end, 64)
                if not data:
                    break
                orderly = True
            cleanup(prefix, scratch=not orderly)
        finally:
            os._exit(0)
    os.close(read_end)
    os.waitpid(pid, 0)
    return write_end


class Cluster:
    def __init__(self, hosts, workdir, own_ipc=True, prefix=None):
        assert 2 <= hosts <= 4, hosts
        self.hosts = hosts
        # A host's own IPC namespace hides its System V / POSIX shared memory from the
        # others, as a real node's is; without it the hosts share the machine's.
        self.own_ipc = own_ipc
        self.workdir = workdir
        self.prefix = prefix or run_prefix()
        self.holders = []
        self.ssh = os.path.join(workdir, "ssh")
        self._reaper = None

    def netns(self, i):
        return f"{self.prefix}h{i}"

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc):
        self.down()

    def up(self):
        cleanup_stale()
        self._reaper = _start_reaper(self.prefix)
        switch = self.prefix + "sw"
        _ip("netns", "add", switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n" + "".join(f"{address(i)} {hostname(i)}\n" for i in range(self.hosts))
        for i in range(self.hosts):
            ns, port = self.netns(i), f"{self.prefix}p{i}"
            _ip("netns", "add", ns)
            os.makedirs(os.path.join(ETC_NETNS, ns), exist_ok=True)
            with open(os.path.join(ETC_NETNS, ns, "hosts"), "w") as f:
                f.write(hosts_file)
            # Created here with prefixed names, moved at once: a link left in this
            # namespace by a crash in between is found by its name.
            _ip("link", "add", port, "type", "veth", "peer", "name", ns)
            _ip("link", "set", port, "netns", switch)
            _ip("link", "set", ns, "netns", ns)
            _ip("-n", switch, "link", "set", port, "master", "br0", "up")
            _ip("-n", ns, "link", "set", ns, "name", "eth0")
            _ip("-n", ns, "addr", "add", address(i) + "/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            # The UTS namespace lives as long as its holder, which sleeps in it.
            holder = subprocess.Popen(
                ["ip", "netns", "exec", ns, "unshare", "--uts", *(["--ipc"] if self.own_ipc else []), "bash", "-c",
                 f'hostname {hostname(i)} && exec -a "cluster_box_holder {self.prefix}" sleep 100000'],
                stdin=subprocess.DEVNULL, start_new_session=True)
            self.holders.append(holder)
        for i in range(self.hosts):
            self._wait_hostname(i)
        self._write_ssh()

    def _wait_hostname(self, i):
        deadline = time.monotonic() + 30
        while True:
            out = subprocess.run(self.on(i, ["hostname"]), capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip() == hostname(i):
                return
            assert time.monotonic() < deadline, f"host {i} has no hostname: {out.stderr}"
            time.sleep(0.05)

    def on(self, i, argv, machine_sys=False):
        """argv run on host I: its network namespace, its /etc/hosts, its hostname. ip netns
        exec mounts a /sys of the namespace (its interfaces), without the machine's cgroup
        mounts; machine_sys keeps the machine's /sys (slurmd needs its cgroups)."""
        enter = self._enter(self.holders[i].pid)
        if machine_sys:
            hosts = os.path.join(ETC_NETNS, self.netns(i), "hosts")
            return ["nsenter", f"--net={NETNS_DIR}/{self.netns(i)}", *enter, "--", "unshare", "--mount", "sh", "-c",
                    'mount --bind "$0" /etc/hosts && exec "$@"', hosts, *argv]
        return ["ip", "netns", "exec", self.netns(i), "nsenter", *enter, "--", *argv]

    def _enter(self, holder):
        ns = f"/proc/{holder}/ns"
        return [f"--uts={ns}/uts"] + ([f"--ipc={ns}/ipc"] if self.own_ipc else [])

    def _write_ssh(self):
        """ssh HOST CMD...: what a launcher's remote shell does (the words joined and run by
        sh on HOST, in the current directory, as cluster nodes share one filesystem)."""
        cases = "".join(f"    {hostname(i)}|{address(i)}) ns={self.netns(i)}; enter='{' '.join(self._enter(h.pid))}' ;;\n"
                        for i, h in enumerate(self.holders))
        with open(self.ssh, "w") as f:
            f.write(f"""#!/bin/sh
# ssh stand-in for the cluster in a box: options are ignored, the host picks the namespace.
while [ $# -gt 0 ]; do
  case "$1" in
    -[oplLiFJ]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1; shift
case "$host" in
{cases}    *) echo "ssh: no host $host in the cluster" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" nsenter $enter -- sh -c "$*"
""")
        os.chmod(self.ssh, 0o755)

    def link_bytes(self, i, dev):
        """tx bytes of DEV (eth0: the veth to the switch, lo) on host I."""
        out = subprocess.run(self.on(i, ["cat", f"/sys/class/net/{dev}/statistics/tx_bytes"]), capture_output=True,
                             text=True, check=True)
        return int(out.stdout)

    def down(self):
        if self._reaper is None:
            return
        os.write(self._reaper, b"d")
        os.close(self._reaper)  # the reaper tears down; this waits for it
        self._reaper = None
        for h in self.holders:
            try:
                h.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + 60
        while _cluster_left(self.prefix) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _cluster_left(self.prefix)
        if left:
            print("cluster_box: left behind: " + ", ".join(left), file=sys.stderr)


def usable():
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    for tool in ("ip", "unshare", "nsenter"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            return f"no {tool} (iproute2, util-linux)"
    probe = run_prefix() + "probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return "ip netns add fails: " + made.stderr.strip()
    _ip("netns", "delete", probe, check=False)
    return None
