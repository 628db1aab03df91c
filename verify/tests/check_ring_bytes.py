#!/usr/bin/env python3
"""Run `minictx run` with the ring backend for one timed attention step and check each
rank's bytes_sent_intra / bytes_sent_inter in the results file against the formulas at
the top of backends/ring/ring_engine.cpp.

usage: check_ring_bytes.py MPIEXEC MINICTX RANKS RANKS_PER_NODE [--set key=value ...]
"""
import os
import subprocess
import sys
import tempfile

try:
    import h5py
except ImportError:
    sys.exit("check_ring_bytes.py needs h5py (Debian: python3-h5py, see ci/setup-deps.sh)")


def expected_bytes(labels):
    """Bytes each rank sends in one step, from the run's own labels; n = B·L·Hkv·D."""
    P = int(labels["world_size"])
    unit = (2 if labels["ring_type"] == "zigzag" else 1) * P
    padded = (int(labels["seq_len"]) + unit - 1) // unit * unit
    n = int(labels["batch"]) * (padded // P) * int(labels["kv_heads"]) * int(labels["head_dim"])
    forward = 8 * (P - 1) * n
    backward = (16 * P - 8) * n if P > 1 else 0
    return forward + (0 if labels["fwd_only"] == "true" else backward)


def main():
    mpiexec, minictx, ranks, per_node = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bytes.h5")
        subprocess.run([mpiexec, "-n", str(ranks), minictx, "run", "-o", out,
                        "--set", "attention.backend=ring", "--set", "run.mode=attention",
                        "--set", "run.iters=1", "--set", "run.warmup=0",
                        "--set", f"topology.ranks_per_node={per_node}"] + sys.argv[5:], check=True)
        with h5py.File(out, "r") as f:
            point = f["points/point_0000"]
            labels = {k: str(v) for k, v in point["labels"].attrs.items()}
            intra, inter = point["bytes_sent_intra"][:], point["bytes_sent_inter"][:]

    total = expected_bytes(labels)
    ok = True
    for r in range(ranks):
        # Everything goes to ring rank r+1: intra-node when r+1 shares r's node.
        same_node = r // per_node == ((r + 1) % ranks) // per_node
        want = (total, 0) if same_node else (0, total)
        got = (int(intra[r]), int(inter[r]))
        print(f"rank {r}: sent intra {got[0]} inter {got[1]}, formula {want[0]} / {want[1]}")
        ok &= got == want
    print("bytes match the formula" if ok else "BYTES DIFFER FROM THE FORMULA")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
