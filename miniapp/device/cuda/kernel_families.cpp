#include "device/cuda/kernel_families.hpp"

#include "core/error.hpp"
#include "device/cuda/cuda_footprint.hpp"
#include "device/cuda/tile_sizes.hpp"

namespace minictx::cuda {
namespace {

std::string tile(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

}  // namespace

const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = {
      {AttentionKernels::sm80, "flash-mma", "flash-mma", flash_fwd_sm80, flash_bwd_sm80, sm80_tiles, false,
       false, false},
      {AttentionKernels::sm90, "flash-wgmma-tma", "flash-wgmma", flash_fwd_sm90, flash_bwd_sm90, sm90_tiles,
       true, false, false},
      // The same kernels with the document mask in them (their *_documents launchers).
      {AttentionKernels::sm80_documents, "flash-mma-documents", "flash-mma-documents",
       flash_fwd_sm80_documents, flash_bwd_sm80_documents, sm80_tiles, false, true, true},
      {AttentionKernels::sm90_documents, "flash-wgmma-tma-documents", "flash-wgmma-documents",
       flash_fwd_sm90_documents, flash_bwd_sm90_documents, sm90_tiles, true, true, true},
      // The sm90 forward with the one-pass backward; documents split by the device.
      {AttentionKernels::sm90_onepass, "flash-wgmma-tma", "flash-wgmma-onepass", flash_fwd_sm90,
       flash_bwd_sm90_onepass, sm90_onepass_tiles, true, false, true},
  };
  return families;
}

const KernelFamily& kernel_family(AttentionKernels kernels, int sm_major, int sm_minor) {
  const bool hopper = flash_sm90_available(sm_major, sm_minor);
  const AttentionKernels id = kernels != AttentionKernels::automatic ? kernels
                              : hopper                               ? AttentionKernels::sm90
                                                                     : AttentionKernels::sm80;
  for (const KernelFamily& f : kernel_families()) {
    if (f.id != id) continue;
    if (f.needs_sm90a && !hopper)
      input_error(
          std::string("attention.kernels ") + to_string(id) +
          " needs a GPU of compute capability 9.0 and a build for CUDA architecture 90a; this is sm_" +
          std::to_string(sm_major) + std::to_string(sm_minor));
    return f;
  }
  fail(std::string("attention.kernels ") + to_string(id) + " has no kernel family");
}

std::string attention_kernel_name(int head_dim, Precision p, int sm_major, int shared_bytes_optin,
                                  const KernelFamily& family) {
  if (!flash_serves(head_dim, p, sm_major, shared_bytes_optin)) return "simt";
  const FlashTiles t = family.tiles(head_dim);
  return std::string("fwd ") + family.forward_name + " " + tile(t.fwd_q, t.fwd_k) + ", bwd " +
         family.backward_name + " dk/dv " + tile(t.bwd_q, t.bwd_k) + " dq " + tile(t.dq_q, t.dq_k);
}

std::string attention_kernels_summary(int sm_major, int shared_bytes_optin, const KernelFamily& family) {
  std::string s = std::string("family ") + to_string(family.id) + ", bf16/fp16 ";
  for (int d : kFlashHeadDims)
    s += "head_dim " + std::to_string(d) + " " +
         attention_kernel_name(d, Precision::bf16, sm_major, shared_bytes_optin, family) + "; ";
  return s + "other head dims simt; fp32 simt";
}

std::string kernel_families_summary() {
  std::string s;
  for (const KernelFamily& f : kernel_families())
    s += std::string(s.empty() ? "" : "; ") + to_string(f.id) + ": fwd " + f.forward_name + ", bwd " +
         f.backward_name + (f.needs_sm90a ? " (compute capability 9.0, build for 90a" : " (sm_80 and later") +
         (f.opt_in ? "; opt-in, not yet run on a GPU)" : ")");
  return s;
}

}  // namespace minictx::cuda
