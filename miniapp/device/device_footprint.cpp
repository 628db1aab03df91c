#include "device/device_footprint.hpp"

#include "device/cuda/cuda_footprint.hpp"

namespace minictx {

long double device_footprint_bytes(DeviceKind kind, const RunConfig& cfg, long double rows) {
  using real = long double;
  const ModelShape& m = cfg.model;
  const real qd = real(m.heads) * m.head_dim, kvd = real(m.kv_heads) * m.head_dim;
  const real e = real(element_bytes(cfg.run.dtype));
  // A layer stored in 16 bits: the host device widens the operands of each call into fp32
  // copies, SwiGLU's backward the largest (five of them). The CUDA device reads 16-bit
  // tensors in place, but keeps 16-bit copies of the fp32 GEMM operands (dq and dk/dv in
  // the backward; two buffers) and copies the attention's q, k, v and dO for a call:
  // widened to fp32 for the SIMT kernels, row blocks in 16 bits for the flash kernels.
  const bool sixteen_bit_layers = cfg.run.mode == Mode::model && e < 4;
  switch (kind) {
    case DeviceKind::kokkos:
      return sixteen_bit_layers ? 5.0L * rows * m.ffn_hidden * 4 : 0;
    case DeviceKind::cuda: {
      const real copies =
          sixteen_bit_layers
              ? 2 * rows * qd * e + rows * (2 * qd + 2 * kvd) * (cuda::flash_head_dim(m.head_dim) ? e : 4)
              : 0;
      return copies + real(cuda::kGemmWorkspaceBytes);
    }
  }
  return 0;
}

}  // namespace minictx
