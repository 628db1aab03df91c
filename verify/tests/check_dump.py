#!/usr/bin/env python3
"""`minictx verify --dump`: the file holds the global inputs, weights, outputs and
gradients with the reference beside them, readable with h5py one line per dataset, and a
second dump to the same name is refused without touching the first."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

minictx = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "dump.h5")
    args = [minictx, "verify", "--set", "sequence.length=37", "--set", "sequence.batch=2", "--dump", path]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0 and "VALID" in run.stdout, run.stdout + run.stderr
    with h5py.File(path, "r") as f:
        assert f["inputs/x"].shape == (2, 37, 256), f["inputs/x"].shape
        assert f["weights/layer1/wq"].shape == (256 * 256,)
        y, y_ref = f["outputs/y"][:], f["reference/outputs/y"][:]
        assert y.shape == (2, 37, 256)
        assert np.abs(y - y_ref).max() / np.abs(y_ref).max() < 1e-4
        assert f["grads/layer0/w2"].shape == (688, 256)
        assert f["outputs/loss"][0] == f["outputs/loss"][0]  # finite, not NaN
    before = os.path.getmtime(path)
    again = subprocess.run(args, capture_output=True, text=True)
    assert again.returncode != 0 and "file exists" in again.stderr, again.stderr
    assert os.path.getmtime(path) == before
print("dump ok")
