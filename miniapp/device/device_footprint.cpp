#include "device/device_footprint.hpp"

#include <algorithm>

#include "config/documents.hpp"
#include "device/cuda/cuda_footprint.hpp"

namespace minictx {

namespace {

// Packed documents whose batch rows differ, on kernels that mask by position only: a
// block runs one batch row at a time on copies of that row (document_blocks.hpp), the
// backward's the most: q, k, v and dO in the run's dtype; dq, dk, dv, lse and delta fp32.
long double document_row_copies(const RunConfig& cfg, long double rows, long double qd, long double kvd,
                                long double e) {
  const auto lengths = document_lengths(cfg.sequence.documents, cfg.sequence.length, cfg.sequence.batch);
  if (lengths.size() < 2 || std::equal(lengths.begin() + 1, lengths.end(), lengths.begin())) return 0;
  return rows / cfg.sequence.batch * ((2 * qd + 2 * kvd) * e + (qd + 2 * kvd + 2.0L * cfg.model.heads) * 4);
}

}  // namespace

int lse_planes(DeviceKind kind) {
  return kind == DeviceKind::kokkos ? 2 : 1;  // the host kernels hold it in two parts (host_attention.cpp)
}

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
      // The tuned layer kernels' gain-gradient partials, cached position arrays (8 bytes
      // a position, none longer than this rank's rows) and RoPE's table of the layer's
      // positions (8 bytes a rotation pair).
      const real tuned = cfg.run.layer_kernels == LayerKernels::tuned
                             ? real(cuda::kDgammaMaxChunks) * m.d_model * 4 +
                                   real(cuda::kPositionCacheEntries) * rows * 8 + rows * 4.0L * m.head_dim
                             : 0;
      return copies + tuned + document_row_copies(cfg, rows, qd, kvd, e) + real(cuda::kGemmWorkspaceBytes);
    }
  }
  return 0;
}

}  // namespace minictx
