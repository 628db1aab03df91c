#pragma once
#include "device/device.hpp"

// The tiled (flash-style) attention block kernels of the host device: never an S×S
// matrix, only block_q × block_k tiles, with GEMMs through CBLAS. Used by the Kokkos
// device; separate so the CPU kernel can be read and benchmarked on its own.
namespace minictx::host {

void attn_fwd(const AttnShape&, const AttnFwdBlock&);
void attn_bwd(const AttnShape&, const AttnBwdBlock&);
void attn_bwd_delta(const AttnShape&, const Tensor& o, const Tensor& dout, Tensor& delta);

// One row of the overflow-free LSE merge: o ← o − σ(lse_b − lse)(o − o_b), lse ← log(e^lse + e^lse_b),
// with lse held in two parts (lse_hi + lse_lo, Device::lse_planes) and formed in double.
void lse_merge_row(float* o, float& lse_hi, float& lse_lo, const float* o_b, double lse_b, int n);

}  // namespace minictx::host
