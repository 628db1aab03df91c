#!/usr/bin/env python3
"""PyTorch's CPU attention on the shapes of `minictx bench`, for the comparison in docs/performance.md, "One core against its GEMM limit".

Run with the system Python and Debian's python3-torch (not a CI dependency):
    /usr/bin/python3 tools/bench-torch-sdpa-cpu.py --seq 1024,2048,4096,8192 --head-dim 64,128
One thread (as minictx: one rank per core): torch's own and its BLAS's, which otherwise
starts a thread per core. FLOPs by the same FlashAttention convention: forward
4*S^2*H*D (halved when causal), forward+backward 3.5x. The calibration is a 1024^3
float32 matmul through torch's BLAS, best of 5, as minictx's; --clock cpu times by the
process's CPU time (every thread's, in case a library starts one anyway), as
`minictx bench --clock cpu` does for its single thread.
"""
import argparse
import os
import resource
import time

# Read by the BLAS and OpenMP runtimes when torch loads them: set before the import.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import torch  # noqa: E402
import torch.nn.functional as F


def sdpa(q, k, v, causal):
    # torch >= 2.0 has the public name; Debian 12 ships 1.13 with the private one.
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)[0]


CLOCK = time.perf_counter


def best_seconds(f, min_seconds):
    best, spent = float("inf"), 0.0
    while True:
        t0 = CLOCK()
        f()
        t = CLOCK() - t0
        best, spent = min(best, t), spent + t
        if spent >= min_seconds:
            return best


def calibration_gflops():
    a, b = torch.full((1024, 1024), 0.5), torch.full((1024, 1024), 0.25)
    torch.mm(a, b)
    return 2 * 1024**3 / min(best_seconds(lambda: torch.mm(a, b), 0) for _ in range(5)) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seq", default="1024,2048,4096,8192")
    p.add_argument("--head-dim", default="64,128")
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--mask", choices=["causal", "full", "both"], default="both")
    p.add_argument("--min-seconds", type=float, default=1.0)
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="cpu: the process's CPU time, as `minictx bench --clock cpu`")
    a = p.parse_args()
    global CLOCK
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cal = calibration_gflops()
    print(f"torch {torch.__version__}, 1 thread, {a.clock} clock; calibration {cal:.2f} GFLOP/s")
    print("| kind | S | D | causal | time (ms) | GFLOP/s | of calibration | peak RSS MB |")
    print("| :----: | :----: | :----: | :----: | :----: | :----: | :----: | :----: |")
    masks = {"causal": [True], "full": [False], "both": [True, False]}[a.mask]
    for kind in ["attn_fwd", "attn_fwd_bwd"]:
        for d in [int(x) for x in a.head_dim.split(",")]:
            for causal in masks:
                for s in sorted(int(x) for x in a.seq.split(",")):
                    q, k, v, do = (torch.rand(1, a.heads, s, d) * 2 - 1 for _ in range(4))
                    if kind == "attn_fwd":
                        def step():
                            with torch.no_grad():
                                sdpa(q, k, v, causal)
                    else:
                        for t in (q, k, v):
                            t.requires_grad_(True)

                        def step():
                            for t in (q, k, v):
                                t.grad = None
                            sdpa(q, k, v, causal).backward(do)
                    t = best_seconds(step, a.min_seconds)
                    flops = 4.0 * s * s * a.heads * d / (2 if causal else 1) * (3.5 if kind != "attn_fwd" else 1)
                    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                    print(f"| {kind} | {s} | {d} | {'yes' if causal else 'no'} | {t * 1e3:.1f} | "
                          f"{flops / t / 1e9:.2f} | {100 * flops / t / 1e9 / cal:.1f} % | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
