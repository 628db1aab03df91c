#!/usr/bin/env python3
"""Projects the seed decks on datasheet machine profiles with `minictx project` and prints
each published row against its projection, with the error, as the markdown tables of
README.md (Projection). No figure of the model is fitted to these tables; the published
values below are the published figures (docs/algorithms.md; the USP and LoongTrain tables), copied
verbatim.

  ci/compare-published.py [MINICTX]       (default build/miniapp/minictx; needs h5py)"""
import os
import subprocess
import sys
import tempfile

import h5py

MINICTX = sys.argv[1] if len(sys.argv) > 1 else "build/miniapp/minictx"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# BurstAttention README (docs/algorithms.md): tokens/s per GPU, variants A-D.
BURST = {
    "burst-7b-2048k-32gpu": {"A": 79.5, "B": 81.0, "C": 100.1, "D": 101.9},
    "burst-7b-4096k-64gpu": {"A": 35.8, "B": 39.0, "C": 50.3, "D": 51.8},
    "burst-13b-1024k-32gpu": {"A": 98.1, "B": 98.7, "C": 118.5, "D": 122.9},
    "burst-13b-2048k-64gpu": {"A": 44.4, "B": 50.9, "C": 54.8, "D": 63.5},
}
# The USP table, 8 x RTX 4090D: (latency ms/iter, peak memory MB/device) by
# (ring type, seq_len, ulysses, ring, fwd_only).
USP = {
    ("basic", 4096, 2, 4, True): (11.902, 240.0), ("basic", 8192, 2, 4, True): (11.785, 480.0),
    ("basic", 16384, 2, 4, True): (22.596, 960.0), ("basic", 32768, 2, 4, True): (77.898, 1920.0),
    ("basic", 65536, 2, 4, True): (155.191, 3841.0), ("basic", 128000, 2, 4, True): (378.174, 7518.9),
    ("stripe", 4096, 2, 4, True): (16.767, 244.1), ("stripe", 8192, 2, 4, True): (20.638, 488.3),
    ("stripe", 16384, 2, 4, True): (31.408, 976.7), ("stripe", 32768, 2, 4, True): (56.078, 1953.5),
    ("stripe", 65536, 2, 4, True): (152.911, 3907.0), ("stripe", 128000, 2, 4, True): (314.057, 7638.8),
    ("zigzag", 4096, 2, 4, True): (13.942, 240.1), ("zigzag", 8192, 2, 4, True): (22.592, 480.3),
    ("zigzag", 16384, 2, 4, True): (31.249, 960.5), ("zigzag", 32768, 2, 4, True): (58.700, 1921.0),
    ("zigzag", 65536, 2, 4, True): (165.935, 3842.0), ("zigzag", 128000, 2, 4, True): (320.243, 7514.0),
    ("zigzag", 4096, 4, 2, True): (4.923, 240.1), ("zigzag", 8192, 4, 2, True): (9.768, 480.3),
    ("zigzag", 16384, 4, 2, True): (19.518, 960.5), ("zigzag", 32768, 4, 2, True): (50.709, 1921.0),
    ("zigzag", 65536, 4, 2, True): (116.098, 3842.0), ("zigzag", 128000, 4, 2, True): (274.807, 7514.0),
    ("zigzag", 4096, 2, 4, False): (31.631, 240.1), ("zigzag", 8192, 2, 4, False): (49.505, 480.3),
    ("zigzag", 16384, 2, 4, False): (95.121, 960.5), ("zigzag", 32768, 2, 4, False): (175.013, 1921.0),
    ("zigzag", 65536, 2, 4, False): (468.519, 3842.0), ("zigzag", 128000, 2, 4, False): (854.512, 7514.0),
}
# The LoongTrain table: double ring, context 8, window 4: (latency ms/iter, peak memory
# MB/device) by (seq_len, fwd_only).
DOUBLE_RING = {
    (4096, True): (17.509, 228.1), (8192, True): (21.480, 456.3), (16384, True): (32.471, 912.7),
    (32768, True): (55.610, 1825.5), (65536, True): (134.849, 3651.0), (128000, True): (305.810, 7145.8),
    (4096, False): (34.002, 228.1), (8192, False): (54.853, 456.4), (16384, False): (92.736, 912.7),
    (32768, False): (179.200, 1825.5), (65536, False): (563.702, 3651.0), (128000, False): (1001.561, 7145.8),
}


def project(deck, machine, extra=()):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.h5")
        subprocess.run([MINICTX, "project", os.path.join(ROOT, "inputs", deck + ".yaml"), "--machine", machine,
                        "-o", out, *extra], check=True, capture_output=True, text=True)
        with h5py.File(out, "r") as f:
            return [(dict(p["labels"].attrs), dict(p["metrics"].attrs)) for p in f["points"].values()]


def err(projected, published):
    return 100.0 * (projected - published) / published


def burst_rows():
    print("| setting | variant | published tokens/s/GPU | projected | error | bound |")
    print("|---|---|---:|---:|---:|---|")
    within = 0
    for deck, published in BURST.items():
        points = project(deck, "a100-80gb-hdr")
        got = {}
        for labels, metrics in points:
            v = {("ring", "full"): "A", ("ulysses", "full"): "B", ("ring", "selective"): "C",
                 ("ulysses", "selective"): "D"}[(labels["intra"], labels["checkpointing"])]
            got[v] = (metrics["tokens_per_s_per_device"], labels["bound"])
        errors = []
        for v in "ABCD":
            e = err(got[v][0], published[v])
            errors.append(abs(e))
            print(f"| {deck} | {v} | {published[v]} | {got[v][0]:.1f} | {e:+.1f} % | {got[v][1]} |")
        order_pub = sorted("ABCD", key=lambda v: published[v])
        order_got = sorted("ABCD", key=lambda v: got[v][0])
        within += all(e <= 25 for e in errors)
        print(f"| {deck} | order (slowest first) | {' < '.join(order_pub)} | {' < '.join(order_got)} | "
              f"{'same' if order_pub == order_got else 'DIFFERENT'} | |")
    print(f"\nsettings with every variant within ±25 %: {within} of {len(BURST)}\n")


def attention_rows(deck, published, key, extra):
    print("| ring type | seq_len | u×r / window | fwd_only | published ms | projected ms | error | bound "
          "| published MB | estimated MB | sent MB/device | sent ÷ published ms (GB/s) |")
    print("|---|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
    big, big_within = 0, 0
    for labels, metrics in project(deck, "rtx-4090d-pcie4", extra):
        k = key(labels)
        if k not in published:
            continue
        (pub, pub_mb), got = published[k], metrics["latency_ms"]
        e = err(got, pub)
        sent = metrics["bytes_sent_intra_per_device"] + metrics["bytes_sent_inter_per_device"]
        if int(labels["seq_len"]) >= 32768:
            big += 1
            big_within += abs(e) <= 30
        layout = (f"{labels['ulysses_degree']}×{labels['ring_degree']}" if labels["backend"] == "usp"
                  else f"window {labels['window_size']}")
        print(f"| {labels['ring_type']} | {labels['seq_len']} | {layout} | {labels['fwd_only']} | {pub} | {got:.3f} | "
              f"{e:+.1f} % | {labels['bound']} | {pub_mb} | {metrics['peak_memory_mb']:.1f} | {sent / 1e6:.1f} | "
              f"{sent / (pub * 1e6):.2f} |")
    print(f"\nrows at S ≥ 32k within ±30 %: {big_within} of {big}\n")


def main():
    print("### BurstAttention on a100-80gb-hdr\n")
    burst_rows()
    bf16 = ["--set", "run.dtype=bf16"]  # the seed ran 16-bit; the deck keeps the host's fp32
    print("### USP on rtx-4090d-pcie4\n")
    attention_rows("usp-8dev", USP, lambda l: (l["ring_type"], int(l["seq_len"]), int(l["ulysses_degree"]),
                                                int(l["ring_degree"]), l["fwd_only"] == "true"), bf16)
    print("### Double ring on rtx-4090d-pcie4\n")
    attention_rows("double-ring-8gpu", DOUBLE_RING, lambda l: (int(l["seq_len"]), l["fwd_only"] == "true"), [])


main()
