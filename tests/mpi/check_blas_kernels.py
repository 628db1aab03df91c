#!/usr/bin/env python3
"""minictx runs OpenBLAS with kernels the CPU can run: when OpenBLAS falls back to its
Prescott kernels on a CPU with AVX2 or AVX-512 (a model newer than the library), minictx
re-executes itself with OPENBLAS_CORETYPE set and says so in its BLAS line; a core the
user chose is kept. Skipped (77) on a CPU without AVX2 and FMA."""
import os
import subprocess
import sys

minictx = sys.argv[1]
flags = set()
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
avx512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
if not ({"avx2", "fma"} <= flags):
    print("no AVX2/FMA: nothing for minictx to choose")
    sys.exit(77)


def blas_line(extra_env):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "MINICTX_BLAS_DETECTED_CORE")}
    env.update(extra_env)
    run = subprocess.run([minictx, "list"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    return lines[lines.index("blas:") + 1].strip()


line = blas_line({})
config, _, note = line.partition(" (")
fast = {"SkylakeX", "Cooperlake", "SapphireRapids"} if avx512 else {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                                                     "SapphireRapids"}
assert "Prescott" not in config.split(), line
assert fast & set(config.split()), line
if note:
    assert note.startswith("kernels chosen by minictx") and "OpenBLAS detected Prescott" in note, line
    assert ("SkylakeX" if avx512 else "Haswell") in config.split(), line

chosen = blas_line({"OPENBLAS_CORETYPE": "Haswell"})
assert "Haswell" in chosen.split() and "chosen by minictx" not in chosen, chosen
print("blas kernels ok:", line)
