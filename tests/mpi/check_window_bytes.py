#!/usr/bin/env python3
"""A windowed ring's bytes per step: every rank's intra- and inter-node bytes of one
attention step (forward and backward) against the schedule written out here from
docs/algorithms.md, "Sliding windows", for the basic and stripe layouts on 4 ranks as 2
emulated nodes, MLA head shapes (head_dim_v 48 beside head_dim 32) and GQA; the mean per
device falls as the window shrinks; and `minictx project` sends the same bytes.

The schedule: ring rank j's K/V block (B·L·Hkv·(D + Dv) elements) travels hops[j] steps,
the last step at which a rank's queries see one of its keys within the window (all the
way round, P − 1, without a window); in the backward its dK/dV sums travel the same
edges a step behind and then go straight home.

  check_window_bytes.py MPIEXEC MINICTX SOURCE_DIR"""
import subprocess
import sys
import tempfile

import h5py

mpiexec, minictx, source = sys.argv[1], sys.argv[2], sys.argv[3]
P, RPN, S, B, KV, D, DV = 4, 2, 400, 1, 4, 32, 48
L = S // P
WINDOWS = ["global", "301", "201", "101", "100", "1"]
BLOCK = B * L * KV * (D + DV) * 4  # K and V (or their sums) of one rank, fp32


def hops(layout, window):
    """How far each rank's block travels: the last step s at which rank j + s sees it;
    without a window, all the way round."""
    if window == "global":
        return [P - 1] * P
    w = int(window)
    out = []
    for j in range(P):
        seen = [s for s in range(1, P) if (layout == "basic" and j + s < P and (s - 1) * L + 1 < w)
                or (layout == "stripe" and s < w)]
        out.append(max(seen, default=0))
    return out


def expected(layout, window):
    """(intra, inter) bytes per rank of one forward and backward."""
    sent = [[0, 0] for _ in range(P)]

    def send(src, dst, nbytes):
        sent[src][src // RPN != dst // RPN] += nbytes
    for j, h in enumerate(hops(layout, window)):
        for s in range(h):
            a, b = (j + s) % P, (j + s + 1) % P
            send(a, b, BLOCK)      # forward: the block
            send(a, b, 2 * BLOCK)  # backward: the block and, a step behind it, its sums
        if h:
            send((j + h) % P, j, BLOCK)  # the sums home
    return [[float(x[0]) for x in sent], [float(x[1]) for x in sent]]


cases = [("basic", w) for w in WINDOWS] + [("stripe", w) for w in ("global", "3", "2")]
sweep = ["--set", "attention.ring_type=[" + ",".join(c[0] for c in cases) + "]",
         "--set", "attention.window=[" + ",".join(c[1] for c in cases) + "]",
         "--set", "sweep.zip=[attention.ring_type,attention.window]"]
common = ["--set", "run.mode=attention", "--set", "attention.backend=ring", "--set", f"sequence.length={S}",
          "--set", f"model.kv_heads={KV}", "--set", f"model.head_dim={D}", "--set", f"model.head_dim_v={DV}",
          "--set", "attention.sinks=true", "--set", f"topology.ranks_per_node={RPN}"] + sweep
ok = True
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([mpiexec, "-n", str(P), minictx, "run", "-o", f"{tmp}/m.h5", "--force", "--set", "run.iters=1",
                    "--set", "run.warmup=0"] + common, check=True, capture_output=True)
    subprocess.run([minictx, "project", "inputs/quickstart.yaml", "--machine", "a100-80gb-hdr", "--ranks", str(P),
                    "-o", f"{tmp}/p.h5", "--force"] + common, check=True, capture_output=True, cwd=source)
    with h5py.File(f"{tmp}/m.h5", "r") as m, h5py.File(f"{tmp}/p.h5", "r") as p:
        names = sorted(m["points"].keys())
        assert len(names) == len(cases), names
        means = {}
        for name, (layout, window) in zip(names, cases):
            pt = m["points"][name]
            assert pt["labels"].attrs["sliding_window"] == window, dict(pt["labels"].attrs)
            got = [list(pt["bytes_sent_intra"][:]), list(pt["bytes_sent_inter"][:])]
            want = expected(layout, window)
            proj = p["points"][name]["metrics"].attrs
            projected = (proj["bytes_sent_intra_per_device"], proj["bytes_sent_inter_per_device"])
            mean = (sum(want[0]) / P, sum(want[1]) / P)
            means.setdefault(layout, []).append(sum(mean))
            good = got == want and all(abs(a - b) <= 1e-9 * max(b, 1) for a, b in zip(projected, mean))
            ok = ok and good
            print(f"{layout} window {window}: per rank {got}, schedule {want}; projected {projected}"
                  f"{'' if good else '  <-- differs'}")
        for layout, totals in means.items():
            falls = all(a >= b for a, b in zip(totals, totals[1:])) and totals[-1] < totals[0]
            ok = ok and falls
            print(f"{layout}: bytes per device {totals} {'fall' if falls else 'do not fall'} as the window shrinks")
print("window bytes ok" if ok else "window bytes differ")
sys.exit(0 if ok else 1)
