#!/usr/bin/env python3
"""A full disk when the results file is first written: one `minictx: error:` line naming
the file and the errno text, exit 2 on every rank, and no crash inside HDF5 at exit (it
used to segfault when the library tidied up a half-closed file). The full disk is a
16 KiB tmpfs filled to the brim, so the test needs root; without it, it is skipped.

  check_full_disk.py MPIEXEC MINICTX"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import own_lines  # noqa: E402

mpiexec, minictx = sys.argv[1], sys.argv[2]
SKIP = 77
small = ["--set", "model.layers=1", "--set", "model.d_model=64", "--set", "model.heads=4", "--set", "model.kv_heads=2",
         "--set", "model.ffn_hidden=128", "--set", "sequence.length=256"]

with tempfile.TemporaryDirectory() as tmp:
    disk = os.path.join(tmp, "disk")
    os.mkdir(disk)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", disk],
                                           capture_output=True).returncode != 0:
        print("skipped: mounting a small tmpfs needs root")
        sys.exit(SKIP)
    try:
        fill = os.open(os.path.join(disk, "fill"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fill, b"\0" * 512)
        except OSError:  # ENOSPC: the disk is full
            pass
        os.close(fill)
        for ranks, extra in ((1, []), (2, ["--set", "attention.backend=ring"])):
            r = subprocess.run([mpiexec, "-n", str(ranks), minictx, "run", *small, *extra, "-o",
                                os.path.join(disk, f"r{ranks}.h5")], capture_output=True, text=True, timeout=120)
            print(r.stdout + r.stderr)
            assert r.returncode == 2, r.returncode
            lines = own_lines(r.stderr)
            assert len(lines) == 1, lines
            assert lines[0].startswith("minictx: error: results file") and "No space left on device" in lines[0], lines
            assert sorted(os.listdir(disk)) == ["fill"], os.listdir(disk)  # no scratch left behind
    finally:
        subprocess.run(["umount", disk])
print("full disk ok")
