#pragma once
#include "device/block_cache.hpp"
#include "device/device.hpp"

namespace minictx {

// The portable host device: memory from Kokkos' host space, element-wise kernels as
// Kokkos parallel loops, GEMMs through CBLAS, attention by the tiled host kernel.
class KokkosDevice final : public Device {
 public:
  KokkosDevice();
  DeviceKind kind() const override { return DeviceKind::kokkos; }
  std::string description() const override;
  bool kernels_mask_documents() const override { return true; }

  int64_t capacity_bytes() const override;
  void release_cached_memory() override { blocks_.release_all(); }
  int64_t kept_bytes() const { return blocks_.bytes(); }  // freed memory kept for reuse
  void copy(Tensor& dst, const Tensor& src) override;
  void copy_rows(Tensor& dst, int64_t dst_off, int64_t dst_ld, const Tensor& src, int64_t src_off,
                 int64_t src_ld, int64_t rows, int64_t cols) override;
  void fill(Tensor& t, float value) override;
  void add(Tensor& y, const Tensor& x) override;
  void attn_init(Tensor& o, Tensor& lse) override;
  void lse_merge(const AttnShape&, Tensor& o, Tensor& lse, const Tensor& o_b, const Tensor& lse_b) override;

 private:
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
  double cross_entropy_kernel(Tensor& logits, const std::vector<int64_t>& labels, float grad_scale) override;
  void attn_fwd_f32(const AttnShape&, const AttnFwdBlock&) override;
  void attn_bwd_f32(const AttnShape&, const AttnBwdBlock&) override;

  BlockCache blocks_;
};

}  // namespace minictx
