#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "core/host_step_clock.hpp"
#include "core/tensor.hpp"
#include "core/topology.hpp"
#include "device/device_footprint.hpp"
#include "device/document_bounds.hpp"

// The CUDA runtime's stream type, by name only (cudaStream_t is a CUstream_st*), so that
// host code needs no CUDA header.
struct CUstream_st;

namespace minictx {

// What Device::configure sets: the run's dtype, the attention kernel family, how the
// attention's partial sums are rounded and the layer kernel set (of: a point's deck).
struct DeviceSettings {
  DType precision = DType::f32;
  AttentionKernels kernels = AttentionKernels::automatic;
  AttentionPartials partials = AttentionPartials::fp32;
  LayerKernels layer_kernels = LayerKernels::standard;
  static DeviceSettings of(const RunConfig& c) {
    return {c.run.dtype, c.attention.kernels, c.attention.partials, c.run.layer_kernels};
  }
};

// Shape facts every attention block call shares. Tensors q/dq are [B, L, H, D], k/dk
// [B, L, Hkv, D], v/dv [B, L, Hkv, Dv] and o/dout [B, L, H, Dv] (row-major; rows are
// tokens of one rank's shard), D = head_dim and Dv = value_dim(); lse is [planes·B, H, L]
// (alloc_lse) and delta [B, H, L].
struct AttnShape {
  int batch = 1;
  int heads = 1;
  int kv_heads = 1;
  int head_dim = 1;
  bool causal = true;
  int64_t real_len = 0;  // keys at global positions >= real_len are padding: always masked
  int block_q = 256;     // tile sizes of the block kernel
  int block_k = 512;
  // The packed documents (sequence.documents) by global position; null: each sequence is
  // one document, and the kernels mask by causality and padding only.
  std::shared_ptr<const DocumentBounds> documents;
  // The sliding window (config/attention_window.hpp): a query at p sees keys in
  // (p − window, p], and below p + window without the causal mask; 0: no window.
  int64_t window = 0;
  int head_dim_v = 0;  // of values and outputs; 0: head_dim (MLA heads differ)

  int value_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
};

// Rows [begin, begin + len) of a [B, L, heads, D] tensor, and their global positions.
// Positions increase with the row, which lets kernels skip fully masked tiles.
struct SeqBlock {
  const Tensor* tensor = nullptr;
  int64_t begin = 0;
  int64_t len = 0;
  const int64_t* positions = nullptr;  // host array of `len` positions
};

// One block of attention: merge softmax(q kᵀ) v of these rows into the running
// (o, lse) of the same query rows (docs/algorithms.md, "Block attention and the LSE merge").
struct AttnFwdBlock {
  SeqBlock q, k, v;
  Tensor* o = nullptr;    // [B, Lq, H, D] accumulator, rows as q.tensor
  Tensor* lse = nullptr;  // [B, H, Lq] accumulator
};

// Gradients of one block given the *final* o/lse: accumulates into dq (rows as q) and
// dk, dv (rows as k).
struct AttnBwdBlock {
  SeqBlock q, k, v;
  const Tensor* dout = nullptr;   // rows as q
  const Tensor* lse = nullptr;    // [B, H, Lq]
  const Tensor* delta = nullptr;  // [B, H, Lq], rowsum(dO ∘ O)
  Tensor* dq = nullptr;
  Tensor* dk = nullptr;
  Tensor* dv = nullptr;
};

// The compute operations the model and the backends need, on this device's memory.
// 2-D operands are [rows, cols] row-major; higher-rank tensors are viewed that way by
// flattening all leading dimensions.
class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  std::string name() const { return to_string(kind()); }
  virtual std::string description() const = 0;  // library versions and configuration
  // The hardware facts a submission's system description needs, as provenance keys
  // (the cuda device: gpu_name, gpu_count, gpu_memory_mib, gpu_driver, cuda_runtime);
  // none on the host, whose CPU the provenance names itself.
  virtual std::map<std::string, std::string> system_facts() const { return {}; }

  // Uninitialised, fp32 unless a 16-bit dtype is asked for.
  Tensor alloc(std::vector<int64_t> shape, DType dtype = DType::f32) {
    return allocate(std::move(shape), dtype);
  }
  Tensor zeros(std::vector<int64_t> shape, DType dtype = DType::f32);
  MemoryTracker& memory() { return memory_; }
  // A freed tensor's memory is kept for the next tensor of its size (BlockCache); this
  // frees what is kept, so that a new point starts from its own allocations.
  virtual void release_cached_memory() = 0;
  virtual int64_t capacity_bytes() const = 0;  // memory this device may use, for the estimate
  // Whether every rank on a node shares capacity_bytes() (host memory), rather than each
  // rank having that much of its own (a GPU per rank).
  virtual bool capacity_shared_by_node() const { return true; }
  // Whether its tensors live in GPU memory, which the world comm must move (comm_factory).
  virtual bool gpu_memory() const { return false; }
  // The CUDA stream (cudaStream_t) its work is queued on, on which a GPU comm queues its
  // transfers; null where the tensors live in host memory.
  virtual CUstream_st* gpu_stream() const { return nullptr; }
  // What a point asks of the device, set in one call before it runs (every command does
  // it the same way). precision: the run's dtype; tensors that travel between ranks (ring
  // blocks, all-to-all and all-gather buffers) and the layer stack's weights, gradients
  // and activations are stored in it, and a device that computes in bf16/fp16 rounds its
  // operands to it (the host device computes in fp32 whatever the dtype). kernels: the
  // deck's attention.kernels; a device with kernel families (cuda) takes the one it names
  // and throws InputError where it cannot run it; the host device has one attention
  // kernel, and the deck check keeps others away. partials: the deck's
  // attention.partials; storage rounds each attention block's output (and, in the
  // backward, its dQ, dK and dV contributions) to precision before they join the running
  // sums, accumulator rounds the sums too, after every block; both are fp32 in an fp32 run.
  // layer_kernels: the deck's run.layer_kernels; the host device has one set, and the deck
  // check keeps tuned away from it.
  virtual void configure(const DeviceSettings& settings) { settings_ = settings; }
  const DeviceSettings& settings() const { return settings_; }
  DType precision() const { return settings_.precision; }
  // Whether the model's kernels below (the *_kernel members) read and write 16-bit
  // tensors themselves; the host's take fp32 only.
  virtual bool reads_16bit() const { return false; }
  // Whether its attention kernels mask packed documents (AttnShape::documents) themselves;
  // where not, attn_fwd and attn_bwd run a block as its per-document sub-blocks, on which
  // the kernels mask by position only (document_blocks.hpp).
  virtual bool kernels_mask_documents() const { return false; }
  // The dtype to store a kernel's operands in so that it reads them as they are.
  DType operand_dtype() const { return reads_16bit() ? precision() : DType::f32; }
  // Returns when every operation issued so far has finished (asynchronous devices).
  virtual void synchronize() {}
  // A clock for timestamps inside a step (the ring timeline): the host's steady clock,
  // right where a kernel has finished when its call returns; an asynchronous device
  // times its queue instead.
  virtual std::unique_ptr<StepClock> step_clock() { return std::make_unique<HostStepClock>(); }

  // Host fp32 values into and out of a tensor of any dtype (rounded into a 16-bit one).
  void upload(Tensor& dst, const float* host);
  void download(const Tensor& src, float* host);
  // copy, copy_rows, fill and add take tensors of any dtype and convert between them,
  // rounding to nearest even into a 16-bit destination.
  virtual void copy(Tensor& dst, const Tensor& src) = 0;
  // Copy `rows` rows of `cols` elements from src (row stride src_ld, starting at src_off)
  // to dst (row stride dst_ld, starting at dst_off), all in elements of the tensor they
  // index: the gather/scatter of sub-blocks.
  virtual void copy_rows(Tensor& dst, int64_t dst_off, int64_t dst_ld, const Tensor& src, int64_t src_off,
                         int64_t src_ld, int64_t rows, int64_t cols) = 0;
  virtual void fill(Tensor& t, float value) = 0;
  virtual void add(Tensor& y, const Tensor& x) = 0;  // y += x, summed in fp32

  // The model's operations below take tensors of any dtype, except the per-row statistics
  // (rstd, and the attention's lse and delta), which are fp32. A device whose kernels (the
  // *_kernel members) take fp32 only gets a 16-bit operand as a widened fp32 copy and
  // writes a 16-bit result through an fp32 copy rounded back afterwards: O(size) beside
  // the kernel. On a device whose kernels read 16 bits, a product's 16-bit operands and
  // result are of the run's dtype.
  double dot(const Tensor& a, const Tensor& b);

  // C = alpha · op(A) · op(B) + beta · C, op = transpose when the flag is set.
  void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c);
  // D = alpha · op(A) · op(B) + C, C left as it is (a residual connection): here D = C,
  // then the product added into it; a device may read C in the product's epilogue instead.
  virtual void gemm_add(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                        const Tensor& c, Tensor& d);

  // y = x / rms(x) · g per row; rstd [rows] keeps 1/rms for the backward.
  void rmsnorm_fwd(const Tensor& x, const Tensor& g, double eps, Tensor& y, Tensor& rstd);
  // dx += dL/dx; dg += dL/dg.
  void rmsnorm_bwd(const Tensor& x, const Tensor& g, const Tensor& rstd, const Tensor& dy, Tensor& dx,
                   Tensor& dg);
  // Rotary embedding in place on [B·L, heads·D] rows at the given positions: one per row
  // of a sequence, repeated over the batch, or one per row of all B·L (packed documents,
  // whose positions restart in each document); inverse = rotate back (the backward).
  void rope(Tensor& x, int heads, const std::vector<int64_t>& positions, double theta, bool inverse);
  // Columns [dst_col, dst_col + width) of dst = columns [x_col, x_col + width) of x
  // rotated as rope rotates them (heads · head_dim = width), rounded once into dst's dtype.
  // x and dst: [rows, ·] views of any dtypes with the same rows. A device may rotate and
  // convert in one pass, and so split a packed q|k|v projection or join its gradient.
  virtual void rope_into(Tensor& dst, int64_t dst_col, const Tensor& x, int64_t x_col, int64_t width,
                         int heads, const std::vector<int64_t>& positions, double theta, bool inverse);
  // m = silu(a) ∘ u, and its backward.
  void swiglu_fwd(const Tensor& a, const Tensor& u, Tensor& m);
  void swiglu_bwd(const Tensor& a, const Tensor& u, const Tensor& dm, Tensor& da, Tensor& du);
  // The same on the gate and up projections side by side, gate_up = [a | u] ([rows, 2f],
  // one GEMM's output), the backward's gradient written the same way, d_gate_up = [da | du].
  virtual void swiglu_fwd_packed(const Tensor& gate_up, Tensor& m);
  virtual void swiglu_bwd_packed(const Tensor& gate_up, const Tensor& dm, Tensor& d_gate_up);

  // The attention's LSE tensors are [planes·B, H, L], fp32 (alloc_lse): plane 0, the first
  // B·H·L values, holds each row's natural-log LSE. A device whose kernels rebuild P from
  // more than fp32 holds a second plane, the part of each LSE that its fp32 value rounds
  // off, so that an LSE of 10⁴ still rebuilds P to fp32's precision (docs/algorithms.md,
  // "The LSE in two parts"). Every per-row operation on an LSE tensor takes it as planes·B
  // batch rows.
  int lse_planes() const { return minictx::lse_planes(kind()); }
  Tensor alloc_lse(int64_t batch, int64_t heads, int64_t len) {
    return alloc({lse_planes() * batch, heads, len});
  }
  // A per-row vector [B, H, L] (the backward's delta) for the rows of an LSE tensor.
  Tensor alloc_rows_of_lse(const Tensor& lse) {
    return alloc({lse.dim(0) / lse_planes(), lse.dim(1), lse.dim(2)});
  }

  // The LM head's loss on logits [rows, vocab] (fp32): returns the sum over the rows with a
  // label of log Σ_v exp(z_v) − z_label, and overwrites the logits with grad_scale times
  // the gradient of that sum, grad_scale · (softmax(z) − onehot(label)). A row labelled −1
  // (padding) adds nothing and gets a zero gradient.
  double cross_entropy(Tensor& logits, const std::vector<int64_t>& labels, float grad_scale);

  // t's values rounded to precision() in place, t keeping its dtype: an fp32 tensor then
  // holds what a 16-bit one would (a block's result under attention.partials storage;
  // attention mode's inputs and outputs). Nothing to do in an fp32 run, or on values
  // already rounded.
  void round_to_precision(Tensor& t);

  // o = 0, lse = -inf: the identity of the LSE merge.
  virtual void attn_init(Tensor& o, Tensor& lse) = 0;
  // The blocks' q, k, v (and dout) may be 16-bit tensors, as activations are in a 16-bit
  // run and as blocks arrive from another rank. Outputs, lse and delta are fp32.
  void attn_fwd(const AttnShape&, const AttnFwdBlock&);
  // delta = rowsum(dout ∘ o) per (b, h, row); o and dout of any dtype.
  void attn_bwd_delta(const AttnShape&, const Tensor& o, const Tensor& dout, Tensor& delta);
  void attn_bwd(const AttnShape&, const AttnBwdBlock&);
  // Merge a separately computed block result (o_b, lse_b) into (o, lse).
  virtual void lse_merge(const AttnShape&, Tensor& o, Tensor& lse, const Tensor& o_b,
                         const Tensor& lse_b) = 0;
  // Attention sinks: sink logit s_h (sinks [H]) joins the denominator of head h's softmax
  // in the final (o, lse), as a block with no value would: lse ← log(e^lse + e^s_h),
  // o ← o·e^(lse_old − lse), in every plane of the LSE. Once, after every block is merged.
  // o and lse are fp32.
  // O(B·L·H·Dv) beside attention's O(L²): done through host copies on every device.
  void attn_sink_merge(const AttnShape&, const Tensor& sinks, Tensor& o, Tensor& lse);
  // dsinks[h] += −Σ over batch and rows of e^(s_h − lse)·rowsum(dout ∘ o): the sinks'
  // gradient given the final o and lse (those of attn_sink_merge).
  void attn_sink_grad(const AttnShape&, const Tensor& sinks, const Tensor& o, const Tensor& lse,
                      const Tensor& dout, Tensor& dsinks);

 protected:
  MemoryTracker memory_;
  // attn_fwd and attn_bwd with fp32 partials. Here: the fp32 kernels on fp32 copies of
  // the whole 16-bit tensors, O(L·D) against their O(L²·D).
  virtual void attn_fwd_block(const AttnShape&, const AttnFwdBlock&);
  virtual void attn_bwd_block(const AttnShape&, const AttnBwdBlock&);

 private:
  virtual Tensor allocate(std::vector<int64_t> shape, DType dtype) = 0;
  // upload and download on fp32 tensors.
  virtual void upload_f32(Tensor& dst, const float* host) = 0;
  virtual void download_f32(const Tensor& src, float* host) = 0;
  // The model's kernels: fp32 operands, and 16-bit ones where reads_16bit().
  virtual double dot_kernel(const Tensor& a, const Tensor& b) = 0;
  virtual void gemm_kernel(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                           float beta, Tensor& c) = 0;
  virtual void rmsnorm_fwd_kernel(const Tensor& x, const Tensor& g, double eps, Tensor& y, Tensor& rstd) = 0;
  virtual void rmsnorm_bwd_kernel(const Tensor& x, const Tensor& g, const Tensor& rstd, const Tensor& dy,
                                  Tensor& dx, Tensor& dg) = 0;
  virtual void rope_kernel(Tensor& x, int heads, const std::vector<int64_t>& positions, double theta,
                           bool inverse) = 0;
  virtual void swiglu_fwd_kernel(const Tensor& a, const Tensor& u, Tensor& m) = 0;
  virtual void swiglu_bwd_kernel(const Tensor& a, const Tensor& u, const Tensor& dm, Tensor& da,
                                 Tensor& du) = 0;
  virtual void attn_bwd_delta_kernel(const AttnShape&, const Tensor& o, const Tensor& dout,
                                     Tensor& delta) = 0;
  // cross_entropy on fp32 logits. A device without the kernel refuses; the deck keeps
  // model.vocab away from it (DeviceDeckFacts::lm_head).
  virtual double cross_entropy_kernel(Tensor& logits, const std::vector<int64_t>& labels, float grad_scale);
  // attn_fwd and attn_bwd on fp32 operands.
  virtual void attn_fwd_f32(const AttnShape&, const AttnFwdBlock&) = 0;
  virtual void attn_bwd_f32(const AttnShape&, const AttnBwdBlock&) = 0;

  // Whether attention blocks round their results before the sums: storage or accumulator
  // partials in a 16-bit run.
  bool rounds_partials() const {
    return settings_.partials != AttentionPartials::fp32 && precision() != DType::f32;
  }
  // Whether the running sums are rounded to precision() after every block as well
  // (attention.partials accumulator in a 16-bit run).
  bool rounds_sums() const {
    return settings_.partials == AttentionPartials::accumulator && precision() != DType::f32;
  }
  // attn_fwd_block and attn_bwd_block, split by documents where the kernels do not mask them.
  void attn_fwd_masked(const AttnShape&, const AttnFwdBlock&);
  void attn_bwd_masked(const AttnShape&, const AttnBwdBlock&);

  DeviceSettings settings_;
};

// m, n, k of C = op(A)·op(B) on the [rows, cols] views; fails unless the shapes conform.
struct GemmDims {
  int64_t m, n, k;
};
GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c);
// Fails unless dst and x have the same rows and hold `width` columns from dst_col and x_col
// (Device::rope_into's blocks).
void require_column_blocks(const Tensor& dst, int64_t dst_col, const Tensor& x, int64_t x_col, int64_t width);
// The [rows, cols] view of a tensor: all leading dimensions flattened into rows.
inline int64_t matrix_cols(const Tensor& t) { return t.shape().empty() ? 1 : t.shape().back(); }
inline int64_t matrix_rows(const Tensor& t) { return matrix_cols(t) ? t.numel() / matrix_cols(t) : 0; }

// The devices compiled into this build, one entry each (device/device_registry.cpp);
// `minictx list` and make_device read it.
struct DeviceInfo {
  DeviceKind kind;
  std::unique_ptr<Device> (*create)(const Topology& topology);
  std::string attention;  // which attention kernels serve which shapes (minictx list)
};
const std::vector<DeviceInfo>& device_registry();
// The device of `kind` for this rank, which `topology` places on its node (a device with
// several GPUs per node takes the one of topology.rank_here). InputError if not compiled in.
std::unique_ptr<Device> make_device(DeviceKind kind, const Topology& topology);
// The host device, which every build has: the comm benchmark and the GEMM calibration run on it.
std::unique_ptr<Device> make_host_device(const Topology& topology);
// Gives the deck (config/device_catalog.hpp) what each device kind can do, built into this
// binary or not (device/deck_devices.cpp); called once at start-up, before any deck is read.
void install_deck_devices();

}  // namespace minictx
