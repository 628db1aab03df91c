#!/ usr / bin / env python3
"""`minictx bench` on a tiny grid: it prints the table, writes every row to HDF5 with the
documented datasets, every measured value is positive, the tracked memory of the memory
rows grows exactly linearly in S, and an existing file is not replaced without --force."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

minictx = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "bench.h5")
    args = [minictx, "bench", "--seq", "64,96", "--head-dim", "16", "--memory-seq", "256,128",
            "--layer-seq", "64", "--gemm-sizes", "32,64", "--min-seconds", "0", "--clock", "cpu", "-o", path]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| attn_fwd_bwd |" in run.stdout and "calibration (cpu clock):" in run.stdout, run.stdout
    with h5py.File(path, "r") as f:
        b = f["bench"]
        kind = [k.decode() if isinstance(k, bytes) else k for k in b["kind"][:]]
#sgemm, 2 memory rows, 2 kinds x 1 head dim x 2 masks x 2 lengths, 2 gemm sizes, the
#layer's 8 element-wise kernels, the layer step twice
        expected = (["sgemm", "attn_memory", "attn_memory"] + ["attn_fwd"] * 4 + ["attn_fwd_bwd"] * 4 +
                    ["gemm"] * 2 + ["elementwise"] * 8 + ["layer_step", "layer_step_causal"])
        assert kind == expected, kind
        n = len(kind)
        kernel = [k.decode() if isinstance(k, bytes) else k for k in b["kernel"][:]]
        assert kernel[13:21] == ["rmsnorm_fwd", "rmsnorm_bwd", "rope", "swiglu_fwd", "swiglu_bwd", "copy", "add",
                                 "fill"], kernel
        assert (b["bytes"][13:21] > 0).all() and (b["bytes"][:13] == 0).all(), b["bytes"][:]
        measured = ["seconds", "calibration_gflops", "peak_tracked_bytes", "peak_rss_bytes", "core_share"]
        rates = ["gflops", "fraction_of_calibration"]  # none for the element-wise rows (bytes, not FLOPs)
        for name in ["seq_len", "head_dim", "causal", "bytes"] + measured + rates:
            assert b[name].shape == (n,), (name, b[name].shape)
        for name in measured:
            assert (b[name][:] > 0).all(), (name, b[name][:])
        for name in rates:
            values = np.delete(b[name][:], range(13, 22))
            assert (values > 0).all(), (name, b[name][:])
        assert list(b["seq_len"][11:13]) == [32, 64], b["seq_len"][:]
        assert b.attrs["clock"] == "cpu"
        assert b.attrs["calibration_gflops"] > 0 and b.attrs["calibration_after_gflops"] > 0
        seq = b["seq_len"][:]
        assert list(seq[1:3]) == [128, 256] and list(seq[3:7]) == [64, 96, 64, 96], seq
        assert list(b["causal"][3:7]) == [1, 1, 0, 0], b["causal"][:]
        tracked = b["peak_tracked_bytes"][:]
        assert tracked[2] == 2 * tracked[1], tracked  # linear in S: tensors only, no S x S
        assert np.isclose(b["gflops"][0], b.attrs["calibration_gflops"])
        assert np.allclose(b["fraction_of_calibration"][:], b["gflops"][:] / b["calibration_gflops"][:])
        assert b["fraction_of_calibration"][-1] < b["fraction_of_calibration"][-2]  # attention halved
        assert "bench" in f["provenance"].attrs["command_line"]
    again = subprocess.run(args, capture_output=True, text=True)
    assert again.returncode != 0 and "exists" in again.stderr, again.stdout + again.stderr
print("bench ok")
