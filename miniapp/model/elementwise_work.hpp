#pragma once
// The element-wise kernels of one layer as LayerStack calls them, by kernel and tensor
// shape: what `minictx project` counts (bytes at the kernel's rate) and what `minictx
// bench` times, so that a calibrated rate meets the same byte count it was measured with.
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace minictx {

enum class Elementwise { rmsnorm_fwd, rmsnorm_bwd, rope, swiglu_fwd, swiglu_bwd, copy, add, fill };

const std::vector<Elementwise>& elementwise_kernels();
const char* to_string(Elementwise);

// Tensors of the call's rows × cols the kernel reads or writes (its fp32 bytes are this
// × rows × cols × 4): rmsnorm_fwd x → y: 2; rmsnorm_bwd x, dy, dx (accumulated): 4;
// rope in place: 2; swiglu_fwd a, u → m: 3; swiglu_bwd a, u, dm → da, du: 5; copy 2;
// add 3; fill 1. Per-row and per-column vectors (rstd, gains) are left out.
double tensors_moved(Elementwise);

struct ElementwiseCall {
  Elementwise kernel;
  double rows = 0, cols = 0;
  double bytes() const { return tensors_moved(kernel) * rows * cols * 4; }
};

// One layer's element-wise calls on `rows` rows (LayerStack::forward_layer or
// backward_layer): forward two RMSNorms, RoPE on q and k, the two residual copies and
// SwiGLU; backward the residual copy, SwiGLU's and the RMSNorms' backward and the inverse
// RoPE on dq and dk.
std::vector<ElementwiseCall> layer_elementwise(const ModelShape& m, double rows, bool backward);

}  // namespace minictx
