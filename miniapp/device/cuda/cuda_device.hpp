#pragma once
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/block_cache.hpp"
#include "device/cuda/attention_args.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/kernel_families.hpp"
#include "device/cuda/lt_gemm.hpp"
#include "device/cuda/position_cache.hpp"
#include "device/cuda/precision.hpp"
#include "device/device.hpp"

namespace minictx {

// The NVIDIA device: tensors are fp32 arrays in GPU memory, save the 16-bit ones that
// travel between ranks, and the run dtype is the precision of the operands: GEMM inputs are converted to
// bf16/fp16 for cuBLASLt and attention rounds q, k, v, dO and P to it on load, accumulating in fp32
// (docs/nvidia.md, "Storage dtype"). Work is queued on one compute stream. A rank takes the one GPU it
// sees, or among several its node-local rank's, modulo their number (device/gpu_binding.hpp), so several
// ranks may share one GPU; the NCCL comm refuses that by the GPUs' bus ids.
class CudaDevice final : public Device {
 public:
  // Takes the GPU visible_gpu_for(GPUs this rank sees, topology.rank_here) and makes it
  // current: the one NCCL then uses.
  explicit CudaDevice(const Topology& topology);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DeviceKind kind() const override { return DeviceKind::cuda; }
  std::string description() const override;
  std::map<std::string, std::string> system_facts() const override;

  int64_t capacity_bytes() const override;
  void release_cached_memory() override;
  bool capacity_shared_by_node() const override { return false; }  // one GPU per rank
  bool gpu_memory() const override { return true; }
  // Takes the kernel family settings.kernels names (kernel_families.hpp; InputError where
  // this GPU or build cannot run it) and computes in settings.precision.
  void configure(const DeviceSettings& settings) override;
  bool reads_16bit() const override { return true; }
  void synchronize() override;
  // CUDA events on the compute stream (device/cuda/cuda_step_clock.hpp).
  std::unique_ptr<StepClock> step_clock() override;

  void copy(Tensor& dst, const Tensor& src) override;
  void copy_rows(Tensor& dst, int64_t dst_off, int64_t dst_ld, const Tensor& src, int64_t src_off,
                 int64_t src_ld, int64_t rows, int64_t cols) override;
  void fill(Tensor& t, float value) override;
  void add(Tensor& y, const Tensor& x) override;
  // The tuned layer kernels rotate by a cached table (fp32 arithmetic) and write dst's
  // dtype in the same pass; the standard ones as the base class.
  void rope_into(Tensor& dst, int64_t dst_col, const Tensor& x, int64_t x_col, int64_t width, int heads,
                 const std::vector<int64_t>& positions, double theta, bool inverse) override;
  // The tuned layer kernels read and write gate_up's halves in place; the standard ones
  // as the base class (through [rows, f] copies).
  void swiglu_fwd_packed(const Tensor& gate_up, Tensor& m) override;
  void swiglu_bwd_packed(const Tensor& gate_up, const Tensor& dm, Tensor& d_gate_up) override;
  // The tuned layer kernels read C in cuBLASLt's epilogue (C and D of one dtype); the
  // standard ones copy it first, as the base class.
  void gemm_add(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, const Tensor& c,
                Tensor& d) override;
  void attn_init(Tensor& o, Tensor& lse) override;
  void lse_merge(const AttnShape&, Tensor& o, Tensor& lse, const Tensor& o_b, const Tensor& lse_b) override;

  // Which attention kernel serves this head dim at the current precision (provenance).
  std::string attention_kernel(int head_dim) const;
  // The -documents families mask packed documents in the flash kernels (the shapes those
  // serve; others are split by document as before).
  bool kernels_mask_documents() const override { return family_->masks_documents; }
  const cuda::KernelFamily& kernel_family() const { return *family_; }
  int gpu() const { return gpu_; }
  cudaStream_t gpu_stream() const override { return stream_; }

 private:
  // The flash kernels read 16-bit operands of the run's type as they are; other shapes
  // go through the base class to the SIMT kernels.
  void attn_fwd_block(const AttnShape&, const AttnFwdBlock&) override;
  void attn_bwd_block(const AttnShape&, const AttnBwdBlock&) override;
  Tensor allocate(std::vector<int64_t> shape, DType dtype) override;
  void upload_f32(Tensor& dst, const float* host) override;
  void download_f32(const Tensor& src, float* host) override;
  double dot_kernel(const Tensor& a, const Tensor& b) override;
  void gemm_kernel(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta,
                   Tensor& c) override;
  void rmsnorm_fwd_kernel(const Tensor& x, const Tensor& g, double eps, Tensor& y, Tensor& rstd) override;
  void rmsnorm_bwd_kernel(const Tensor& x, const Tensor& g, const Tensor& rstd, const Tensor& dy, Tensor& dx,
                          Tensor& dg) override;
  void rope_kernel(Tensor& x, int heads, const std::vector<int64_t>& positions, double theta,
                   bool inverse) override;
  void swiglu_fwd_kernel(const Tensor& a, const Tensor& u, Tensor& m) override;
  void swiglu_bwd_kernel(const Tensor& a, const Tensor& u, const Tensor& dm, Tensor& da, Tensor& du) override;
  void attn_bwd_delta_kernel(const AttnShape&, const Tensor& o, const Tensor& dout, Tensor& delta) override;
  void attn_fwd_f32(const AttnShape&, const AttnFwdBlock&) override;
  void attn_bwd_f32(const AttnShape&, const AttnBwdBlock&) override;
  // Whether the tensor-core flash kernels serve this shape at the current precision.
  bool flash(const AttnShape&) const;
  // The block's rows as the flash kernels read them, a compact 16-bit [B, len, heads, D]
  // tensor of the run's type: a 16-bit tensor all of whose rows are the block as it is,
  // else a copy of the rows (rounded from fp32).
  Tensor flash_operand(const SeqBlock&, const AttnShape&, int heads);
  // The kernels' arguments for one block call.
  cuda::AttnArgs fwd_args(const AttnShape&, const AttnFwdBlock&);
  cuda::AttnArgs bwd_args(const AttnShape&, const AttnBwdBlock&);
  // Device copies of host position arrays: with the standard layer kernels copied into
  // slot 0 (queries) or 1 (keys) at each call, stream-ordered; with the tuned ones from the
  // position cache.
  const int64_t* positions(int slot, const int64_t* host, int64_t n);
  bool tuned() const { return settings().layer_kernels == LayerKernels::tuned; }
  // A block's positions for the kernels, followed by its rows' document spans where the
  // family masks documents in its kernels (AttnArgs, "q_pos").
  const int64_t* block_positions(int slot, const AttnShape&, const SeqBlock&);
  bool documents_in_kernels(const AttnShape& s) const { return s.documents && family_->masks_documents; }
  // A block of `bytes`: a kept one, else cudaMalloc (after freeing the kept ones when
  // the GPU is full).
  void* acquire(int64_t bytes);
  // acquire and keep with the memory tracker's count, for memory that is not a tensor's.
  void* acquire_counted(int64_t bytes);
  void release_counted(void* p, int64_t bytes);

  int gpu_ = 0;
  int gpu_count_ = 0;
  std::string bus_id_;  // cudaDeviceGetPCIBusId's, for the description
  int sm_major_ = 0, sm_minor_ = 0;
  const cuda::KernelFamily* family_ = nullptr;
  int shared_optin_ = 0;  // opt-in shared memory per block, bytes
  cudaStream_t stream_ = nullptr;
  cuda::Precision precision_ = cuda::Precision::f32;
  std::unique_ptr<cuda::LtGemm> gemm_;
  BlockCache blocks_;
  int64_t* positions_[2] = {nullptr, nullptr};
  int64_t position_capacity_[2] = {0, 0};
  std::vector<int64_t> positions_host_;                  // block_positions' host array
  std::unique_ptr<cuda::PositionCache> position_cache_;  // the tuned layer kernels'
  double* dot_result_ = nullptr;
};

}  // namespace minictx
