#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention throughput on the shapes of inputs/gpu-attention.yaml.

Counts FLOPs as minictx does (model/flops.cpp): forward 4·B·S²·H·D, halved when causal;
forward+backward 3.5 times that. Every SDPA backend that accepts the problem is timed and
the best is reported with its name. Prints CSV: seq_len,causal,pass,backend,ms,tflops.
"""
import argparse
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def flops(s, heads, d, causal, backward):
    f = 4.0 * s * s * heads * d * (0.5 if causal else 1.0)
    return 3.5 * f if backward else f


def time_ms(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lengths", default="4096,8192,16384,32768,65536")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--iters", type=int, default=5)
    a = p.parse_args()
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION}
    print("seq_len,causal,pass,backend,ms,tflops")
    for s in [int(x) for x in a.lengths.split(",")]:
        shape = (1, a.heads, s, a.head_dim)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        dout = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        for causal in (True, False):
            for backward in (False, True):
                best = None
                for name, backend in backends.items():
                    def step():
                        with sdpa_kernel(backend):
                            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            if backward:
                                o.backward(dout)
                    try:
                        ms = time_ms(step, 2, a.iters)
                    except RuntimeError as e:  # this backend refuses the shape
                        print(f"# {name} s={s} causal={causal}: {str(e).splitlines()[0]}", file=sys.stderr)
                        continue
                    if best is None or ms < best[1]:
                        best = (name, ms)
                if best:
                    tf = flops(s, a.heads, a.head_dim, causal, backward) / (best[1] * 1e-3) / 1e12
                    print(f"{s},{causal},{'fwd+bwd' if backward else 'fwd'},{best[0]},{best[1]:.3f},{tf:.1f}",
                          flush=True)


if __name__ == "__main__":
    main()
