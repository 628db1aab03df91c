#!/usr/bin/env python3
"""Projects the seed decks on datasheet machine profiles with `minictx project` and prints
each published row against its projection, with the error, as the markdown tables of
docs/projection.md, "Against the published tables". No figure of the model is fitted to these tables; the published
values are read from docs/published-tables.md, where the published figures are copied
verbatim with where they were published.

  tools/compare-published.py [MINICTX [PROFILE_4090D]]   (default build/miniapp/minictx and
                                                          rtx-4090d-pcie4; needs h5py)

PROFILE_4090D: the profile of the USP and double-ring tables' machine, e.g.
rtx-4090d-pcie4-nop2p (the link rate measured on a host of the class)."""
import os
import subprocess
import sys
import tempfile

from system_python import require

require("h5py")
import h5py  # noqa: E402  (after require)

MINICTX = sys.argv[1] if len(sys.argv) > 1 else "build/miniapp/minictx"
PROFILE_4090D = sys.argv[2] if len(sys.argv) > 2 else "rtx-4090d-pcie4"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TABLES = os.path.join(ROOT, "docs", "published-tables.md")


def published_tables():
    """The rows of each table in docs/published-tables.md, as dicts by column name, keyed by
    the (section, subsection) headings above the table."""
    tables, heading, header = {}, ("", ""), None
    with open(TABLES, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(("## ", "### ")):
                level = line.split(" ", 1)
                heading = (level[1], "") if level[0] == "##" else (heading[0], level[1])
                header = None
            elif line.startswith("|"):
                cells = [c.strip() for c in line.strip("|").split("|")]
                if header is None:
                    header = cells
                    tables[heading] = []
                elif not set(line) <= set("|:- "):
                    tables[heading].append(dict(zip(header, cells)))
            else:
                header = None
    return tables


PUBLISHED = published_tables()
# BurstAttention: tokens/s per GPU, variants A-D, by deck.
BURST = {row["deck"]: {v: float(row[v]) for v in "ABCD"}
         for row in PUBLISHED[("BurstAttention on 32 and 64 × A100", "")]}
# The USP tables, 8 x RTX 4090D: (latency ms/iter, peak memory MB/device) by
# (ring type, seq_len, ulysses, ring, fwd_only); the three tables share some rows.
USP = {(row["ring type"], int(row["seq_len"]), int(row["ulysses_degree"]), int(row["ring_degree"]),
        row["fwd_only"] == "True"): (float(row["latency(ms/iter)"]), float(row["peak memory(MB/device)"]))
       for (section, _), rows in PUBLISHED.items() if section == "USP on 8 × RTX 4090D" for row in rows}
# The LoongTrain table: double ring, context 8, window 4: (latency ms/iter, peak memory
# MB/device) by (seq_len, fwd_only).
DOUBLE_RING = {(int(row["seq_len"]), row["fwd_only"] == "True"):
               (float(row["latency(ms/iter)"]), float(row["peak memory(MB/device)"]))
               for row in PUBLISHED[("LoongTrain double ring on 8 × RTX 4090D", "Context 8, window 4")]}


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
            v = labels["variant"][1]  # "(A) BurstAttention w. ...": the backend names the paper's variants
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
    for labels, metrics in project(deck, PROFILE_4090D, extra):
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
    bf16 = ["--set", "run.dtype=bf16"]  # the published runs were 16-bit; the deck keeps the host's fp32
    print(f"### USP on {PROFILE_4090D}\n")
    attention_rows("usp-8dev", USP, lambda l: (l["ring_type"], int(l["seq_len"]), int(l["ulysses_degree"]),
                                                int(l["ring_degree"]), l["fwd_only"] == "true"), bf16)
    print(f"### Double ring on {PROFILE_4090D}\n")
    attention_rows("double-ring-8gpu", DOUBLE_RING, lambda l: (int(l["seq_len"]), l["fwd_only"] == "true"), [])


main()
