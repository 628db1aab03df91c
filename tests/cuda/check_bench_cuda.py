#!/usr/bin/env python3
"""`minictx bench --device cuda` on a tiny grid (needs one GPU): it prints the attention
table and the calibration line, writes the rows to HDF5 in the layout of outputs/README.md
("Benchmark files"), every rate is positive and its fraction of the calibration is its
rate over the calibration's, and tools/compare-attention-gpu.py reads its output. Without
h5py (a GPU machine's Python may lack it) the file is not opened; that is said."""
import os
import subprocess
import sys
import tempfile

minictx, compare = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "bench.h5")
    args = [minictx, "bench", "--device", "cuda", "--seq", "256,320", "--head-dim", "64", "--heads", "2",
            "--calibration-size", "512", "--min-seconds", "0", "-o", path]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| S | mask | D | pass | time (ms) | TFLOPS | of GEMM |" in run.stdout, run.stdout
    assert "| 320 | full | 64 | fwd+bwd |" in run.stdout, run.stdout
    assert "calibration: bf16 GEMM 512^3" in run.stdout, run.stdout
    log = os.path.join(tmp, "bench.log")
    with open(log, "w") as f:
        f.write(run.stdout)
    sdpa = os.path.join(tmp, "sdpa.csv")
    with open(sdpa, "w") as f:
        f.write("seq_len,causal,head_dim,pass,backend,ms,tflops\n")
    joined = subprocess.run([sys.executable, compare, log, sdpa, "--format", "csv"], capture_output=True, text=True)
    assert joined.returncode == 0 and len(joined.stdout.splitlines()) == 1 + 8, joined.stdout + joined.stderr

    try:
        import h5py
    except ImportError:
        print("bench cuda ok (the HDF5 file not opened: no h5py)")
        sys.exit(0)
    with h5py.File(path, "r") as f:
        b = f["bench"]
        kind = [k.decode() if isinstance(k, bytes) else k for k in b["kind"][:]]
        # the calibration, then per length (D=64) both masks, each fwd and fwd+bwd
        assert kind == ["gemm_bf16"] + ["attn_fwd", "attn_fwd_bwd"] * 4, kind
        assert list(b["seq_len"][:]) == [512] + [256] * 4 + [320] * 4, b["seq_len"][:]
        assert list(b["causal"][1:5]) == [1, 1, 0, 0], b["causal"][:]
        assert list(b["head_dim"][1:]) == [64] * 8
        for name in ["seconds", "gflops", "calibration_gflops", "fraction_of_calibration", "peak_tracked_bytes"]:
            assert (b[name][:] > 0).all(), (name, b[name][:])
        assert (b["fraction_of_calibration"][:] - b["gflops"][:] / b["calibration_gflops"][:] == 0).all()
        # the FLOP convention: fwd 4·S²·H·D halved when causal, fwd+bwd 3.5×
        s, sec = b["seq_len"][1], b["seconds"][1]
        assert abs(b["gflops"][1] - 4 * s * s * 2 * 64 / 2 / sec / 1e9) < 1e-6 * b["gflops"][1]
        s, sec = b["seq_len"][4], b["seconds"][4]
        assert abs(b["gflops"][4] - 3.5 * 4 * s * s * 2 * 64 / sec / 1e9) < 1e-6 * b["gflops"][4]
        for key, value in {"device": "cuda", "dtype": "bf16", "clock": "wall"}.items():
            assert b.attrs[key] == value, (key, b.attrs[key])
        assert b.attrs["attention_heads"] == 2 and b.attrs["calibration_side"] == 512
        assert b.attrs["calibration_gflops"] > 0 and b.attrs["calibration_after_gflops"] > 0
        assert "--device cuda" in f["provenance"].attrs["command_line"]
print("bench cuda ok")
