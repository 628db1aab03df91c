#!/usr/bin/env python3
"""fp32 attention at large logits against eager fp32 attention: a 2-rank zigzag ring at
run.input_scale 128, with random keys and with keys at 4 shared directions (tied large
logits), dumped by verify and compared by tools/compare-eager-attention.py (numpy float32
here; PyTorch on the GPU machine, ci/gpu-check.sh eager). Every tensor's error against
fp64 must stay within twice eager's.

  check_eager_attention.py MPIEXEC MINICTX SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

mpiexec, minictx, source = sys.argv[1:4]
tool = os.path.join(source, "tools", "compare-eager-attention.py")
with tempfile.TemporaryDirectory() as tmp:
    for name, extra in (("random keys", []), ("tied logits", ["--set", "run.key_directions=4"])):
        dump = os.path.join(tmp, name.replace(" ", "_") + ".h5")
        run = subprocess.run([mpiexec, "-n", "2", minictx, "verify", "--set", "run.mode=attention",
                              "--set", "sequence.length=255", "--set", "run.dtype=fp32",
                              "--set", "run.input_scale=128", "--set", "attention.backend=ring",
                              "--set", "attention.ring_type=zigzag", "--dump", dump, *extra],
                             capture_output=True, text=True)
        assert run.returncode == 0 and "VALID" in run.stdout, run.stdout + run.stderr
        compared = subprocess.run(["/usr/bin/python3", tool, dump, "--engine", "numpy", "--max-ratio", "2"],
                                  capture_output=True, text=True)
        print(f"{name}:\n{compared.stdout}{compared.stderr}")
        assert compared.returncode == 0, name
print("eager attention ok")
