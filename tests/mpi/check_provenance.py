#!/usr/bin/env python3
"""`minictx --version` names the version and the git revision, and a run's results file
records them with the system a submission describes: CPU model, OS and kernel, compilers,
MPI, HDF5 and Kokkos versions, and the NCCL settings of its environment. A run on the
host device records no GPU facts; the CUDA compiler is a fact of the build, recorded
exactly when the build has the cuda device.

  check_provenance.py MINICTX VERSION host|cuda"""
import os
import platform
import re
import subprocess
import sys
import tempfile

import h5py

minictx, version, build = sys.argv[1], sys.argv[2], sys.argv[3]
out = subprocess.run([minictx, "--version"], capture_output=True, text=True, check=True).stdout
m = re.fullmatch(r"minictx (\S+) \(([0-9a-f]{7,40}|unknown)(, dirty)?\)\n", out)
assert m, f"--version printed {out!r}"
assert m.group(1) == version, f"--version says {m.group(1)}, the project is {version}"

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "r.h5")
    subprocess.run([minictx, "run", "--set", "sequence.length=64", "--set", "run.iters=1", "--set",
                    "run.warmup=0", "-o", path], capture_output=True, text=True, check=True,
                   env=dict(os.environ, NCCL_DEBUG="WARN", NCCL_SOCKET_IFNAME="^lo"))
    with h5py.File(path, "r") as f:
        a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["provenance"].attrs.items()}
for key in ("version", "git_sha", "compiler", "c_compiler", "mpi_version", "hdf5_version", "kokkos_version",
            "os", "cpu_cores"):
    assert key in a and str(a[key]).strip(), f"provenance lacks {key}"
assert a["version"] == version, a["version"]
assert a.get("env.NCCL_DEBUG") == "WARN" and a.get("env.NCCL_SOCKET_IFNAME") == "^lo", a
assert a["git_sha"] == m.group(2), (a["git_sha"], m.group(2))
assert a["os"].split()[:2] == [platform.system(), platform.release()], a["os"]
assert re.fullmatch(r"\d+\.\d+\.\d+", a["hdf5_version"]), a["hdf5_version"]
assert re.fullmatch(r"\d+\.\d+\.\d+", a["kokkos_version"]), a["kokkos_version"]
cpuinfo = open("/proc/cpuinfo").read()
if model := re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M):
    assert a.get("cpu_model") == model.group(1).strip(), a.get("cpu_model")
for key in ("gpu_name", "gpu_driver", "cuda_runtime"):
    assert key not in a, f"a host run recorded {key}={a[key]}"
if build == "cuda":
    assert a.get("cuda_compiler", "").strip(), "a cuda build recorded no cuda_compiler"
else:
    assert "cuda_compiler" not in a, f"a host build recorded cuda_compiler={a['cuda_compiler']}"
print(f"provenance ok: {a['version']} {a['git_sha']}, {a.get('cpu_model', 'no CPU model')}, {a['os']}")
