#!/usr/bin/env python3
"""One llama-7b decoder layer in plain PyTorch: the baseline of inputs/gpu-layer.yaml.

The layer minictx's LayerStack runs (model/layer_stack.hpp), in eager PyTorch with no
fusion and no torch.compile: RMSNorm, Q/K/V projections, RoPE (the rotate-half form of
minictx's rope), causal scaled_dot_product_attention, the output projection and residual,
RMSNorm, the SwiGLU MLP and residual; bf16 parameters, activations and gradients; forward
and backward of the scalar loss (1/(B·S)) Σ c ∘ y, the input's gradient included, as
minictx's step computes it. Shapes are the llama-7b preset's (config/presets.cpp) and the
deck's batch (1); --lengths defaults to its sequence lengths.

Each step is timed with CUDA events after --warmup untimed steps; the median of --iters
steps is reported. FLOPs are minictx's MPT convention (model/flops.cpp, docs/user-guide.md, "Metrics"),
the attention term not halved for the causal mask. Memory is
torch.cuda.max_memory_allocated over the timed steps (parameters and gradients included,
as minictx's tracking allocator counts them), in GiB (2^30 bytes, as minictx's MB are
2^20). Prints CSV: seq_len,ms,tflops_mpt,mfu_mpt,peak_mem_gb.

    python3 tools/bench-torch-layer-gpu.py [--lengths 16384,32768] [--iters 10]
    python3 tools/bench-torch-layer-gpu.py --print-flops   # no PyTorch or GPU needed
"""
import argparse
import statistics

# The llama-7b preset (config/presets.cpp) with the deck's one layer; rms_eps and
# rope_theta are ModelShape's defaults (config/run_config.hpp).
LAYERS, D_MODEL, HEADS, KV_HEADS, HEAD_DIM, FFN_HIDDEN = 1, 4096, 32, 32, 128, 11008
RMS_EPS, ROPE_THETA = 1e-5, 10000.0
BATCH = 1  # inputs/gpu-layer.yaml


def n_params():
    """ModelShape::n_params (config/run_config.cpp): two RMSNorm gains, wq, wk, wv, wo, w1, w3, w2."""
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return LAYERS * (2 * D_MODEL + D_MODEL * q + 2 * D_MODEL * kv + q * D_MODEL + 3 * D_MODEL * FFN_HIDDEN)


def mpt_flops(s, batch=BATCH):
    """StepFlops::model of model/flops.cpp for a training step without fwd_only:
    3 · (2·n_params·S·B + layers·2·2·d_model·S²·B)."""
    dense = 2.0 * n_params() * s * batch
    attn = LAYERS * 2 * 2 * D_MODEL * float(s) * s * batch
    return 3 * (dense + attn)


def make_layer(torch, s, device, dtype):
    """Parameters, input, loss coefficient and RoPE tables of one layer at length s."""
    gen = torch.Generator(device=device).manual_seed(0)
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM

    def weight(rows, cols):
        w = torch.randn(rows, cols, device=device, generator=gen) / rows**0.5
        return w.to(dtype).requires_grad_()

    p = {"g_attn": torch.ones(D_MODEL, device=device, dtype=dtype, requires_grad=True),
         "wq": weight(D_MODEL, q), "wk": weight(D_MODEL, kv), "wv": weight(D_MODEL, kv), "wo": weight(q, D_MODEL),
         "g_mlp": torch.ones(D_MODEL, device=device, dtype=dtype, requires_grad=True),
         "w1": weight(D_MODEL, FFN_HIDDEN), "w3": weight(D_MODEL, FFN_HIDDEN), "w2": weight(FFN_HIDDEN, D_MODEL)}
    x = torch.randn(BATCH, s, D_MODEL, device=device, generator=gen).to(dtype).requires_grad_()
    coef = (torch.rand(BATCH, s, D_MODEL, device=device, generator=gen) * 2 - 1).to(dtype)
    # Frequencies theta^(-2i/D) for the first half of each head, applied to both halves.
    inv_freq = ROPE_THETA ** (-torch.arange(0, HEAD_DIM, 2, device=device, dtype=torch.float32) / HEAD_DIM)
    angle = torch.outer(torch.arange(s, device=device, dtype=torch.float32), inv_freq).repeat(1, 2)
    rope = (angle.cos().to(dtype), angle.sin().to(dtype))
    return p, x, coef, rope


def rmsnorm(torch, x, g):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_EPS)).to(x.dtype) * g


def apply_rope(torch, t, rope):
    """t: [B, heads, S, D]; rotates (t_i, t_{i+D/2}) by position · theta^(-2i/D)."""
    cos, sin = rope
    a, b = t[..., : HEAD_DIM // 2], t[..., HEAD_DIM // 2:]
    return t * cos + torch.cat((-b, a), dim=-1) * sin


def layer_loss(torch, p, x, coef, rope):
    F = torch.nn.functional
    b, s, _ = x.shape

    def heads(t, n):
        return t.view(b, s, n, HEAD_DIM).transpose(1, 2)

    h1 = rmsnorm(torch, x, p["g_attn"])
    q = apply_rope(torch, heads(h1 @ p["wq"], HEADS), rope)
    k = apply_rope(torch, heads(h1 @ p["wk"], KV_HEADS), rope)
    v = heads(h1 @ p["wv"], KV_HEADS)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x2 = x + o.transpose(1, 2).reshape(b, s, HEADS * HEAD_DIM) @ p["wo"]
    h2 = rmsnorm(torch, x2, p["g_mlp"])
    y = x2 + (F.silu(h2 @ p["w1"]) * (h2 @ p["w3"])) @ p["w2"]
    return (y * coef).sum() / (b * s)


def step(torch, p, x, coef, rope):
    for t in [*p.values(), x]:
        t.grad = None
    layer_loss(torch, p, x, coef, rope).backward()


def bench(torch, s, warmup, iters):
    """(median step ms, peak bytes) of the layer at length s."""
    p, x, coef, rope = make_layer(torch, s, "cuda", torch.bfloat16)
    for _ in range(warmup):
        step(torch, p, x, coef, rope)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for start, end in events:
        start.record()
        step(torch, p, x, coef, rope)
        end.record()
    torch.cuda.synchronize()
    ms = statistics.median(start.elapsed_time(end) for start, end in events)
    peak = torch.cuda.max_memory_allocated()
    del p, x, coef, rope
    torch.cuda.empty_cache()
    return ms, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="16384,32768", help="sequence lengths (inputs/gpu-layer.yaml's)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10, help="timed steps; the median is reported")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="MFU denominator (H100 SXM dense bf16)")
    ap.add_argument("--print-flops", action="store_true",
                    help="print seq_len,flops_mpt and exit (the FLOP check against minictx, no GPU)")
    a = ap.parse_args()
    lengths = [int(x) for x in a.lengths.split(",")]
    if a.print_flops:
        print("seq_len,flops_mpt")
        for s in lengths:
            print(f"{s},{mpt_flops(s):.0f}")
        return
    # Imported here so that --print-flops runs where PyTorch is not installed.
    import torch

    print("seq_len,ms,tflops_mpt,mfu_mpt,peak_mem_gb")
    for s in lengths:
        ms, peak = bench(torch, s, a.warmup, a.iters)
        tflops = mpt_flops(s) / (ms * 1e-3) / 1e12
        print(f"{s},{ms:.2f},{tflops:.1f},{tflops / a.peak_tflops:.4f},{peak / 2**30:.2f}", flush=True)


if __name__ == "__main__":
    main()
