#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/tile_sizes.hpp"

// The flash attention kernel families, one per GPU architecture, as FlashAttention-3 pairs
// an sm80 and an sm90 mainloop: what each pass runs, its tiles, and what it needs. The
// device dispatches through this table, the provenance names its entries, and `minictx
// list` prints them; the deck's attention.kernels picks one.
namespace minictx::cuda {

using FlashForward = void (*)(const AttnArgs&, const void* q, const void* k, const void* v, float* o,
                              float* lse, cudaStream_t);
using FlashBackward = void (*)(const AttnArgs&, const void* q, const void* k, const void* v, const void* dout,
                               const float* lse, const float* delta, float* dq, float* dk, float* dv,
                               cudaStream_t);

struct KernelFamily {
  AttentionKernels id;        // the deck's attention.kernels value
  const char* forward_name;   // the forward's kernels, as the provenance names them
  const char* backward_name;  // the backward's
  FlashForward forward;
  FlashBackward backward;
  FlashTiles (*tiles)(int head_dim);  // every pass's tiles at a served head dim (tile_sizes.hpp)
  bool needs_sm90a;                   // Hopper-only instructions (wgmma, setmaxnreg)
  // Whether it masks packed documents in the kernels (the spans after AttnArgs's position arrays), walking
  // only the tiles of each tile's documents; otherwise the device splits each block by
  // document (device/document_blocks.hpp).
  bool masks_documents;
  bool opt_in;  // opt-in, not yet run on a GPU: auto never picks it
};

const std::vector<KernelFamily>& kernel_families();

// The family that serves `kernels` on a GPU of compute capability sm_major.sm_minor: auto
// is sm90 where it can run (measured fastest there, both passes) and sm80 elsewhere. A
// family this GPU or build cannot run is an InputError of one line.
const KernelFamily& kernel_family(AttentionKernels kernels, int sm_major, int sm_minor);

// The kernels that serve (head_dim, precision): "simt", or the family's kernels of each
// pass with their tiles.
std::string attention_kernel_name(int head_dim, Precision, int sm_major, int shared_bytes_optin,
                                  const KernelFamily&);
// Which kernels this GPU uses for each head dim in bf16/fp16, for the provenance
// (device_config); fp32 always takes the SIMT kernel.
std::string attention_kernels_summary(int sm_major, int shared_bytes_optin, const KernelFamily&);
// One line per family for `minictx list`.
std::string kernel_families_summary();

}  // namespace minictx::cuda
