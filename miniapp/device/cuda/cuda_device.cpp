#include "device/cuda/cuda_device.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "device/cuda/attention_simt.hpp"
#include "device/cuda/cuda_step_clock.hpp"
#include "device/cuda/elementwise_kernels.hpp"
#include "device/cuda/flash_attention.hpp"
#include "device/cuda/tile_sizes.hpp"
#include "device/cuda/tuned_layer_kernels.hpp"
#include "device/document_blocks.hpp"
#include "device/gpu_binding.hpp"

namespace minictx {
namespace {

void require_same_size(const Tensor& a, const Tensor& b, const char* op) {
  require(a.numel() == b.numel(), std::string(op) + ": tensor sizes differ");
}

cuda::Precision precision_of(DType t) {
  return t == DType::bf16  ? cuda::Precision::bf16
         : t == DType::f16 ? cuda::Precision::f16
                           : cuda::Precision::f32;
}

// A tensor as the kernels that take any dtype get it.
// A tensor's elements from the column `first` of its first row on.
cuda::In in(const Tensor& t, int64_t first = 0) {
  return {static_cast<const char*>(t.raw()) + first * element_bytes(t.dtype()), precision_of(t.dtype())};
}
cuda::Out out(Tensor& t, int64_t first = 0) {
  return {static_cast<char*>(t.raw()) + first * element_bytes(t.dtype()), precision_of(t.dtype())};
}

// Launch errors (bad configuration, missing kernel image) surface here, naming the op.
void check_launch(const char* op) { cuda::check(cudaGetLastError(), op); }

// Rows per batch of a [B, rows, heads, D] tensor.
int64_t rows_per_batch(const Tensor& t, const AttnShape& s, int heads) {
  return t.numel() / (int64_t(s.batch) * heads * s.head_dim);
}

cuda::AttnArgs attn_args(const AttnShape& s, const SeqBlock& q, const SeqBlock& k) {
  if (s.head_dim > cuda::kMaxHeadDim)
    fail(cuda::rank_label() + ": cuda attention supports head_dim up to " +
         std::to_string(cuda::kMaxHeadDim) + ", got " + std::to_string(s.head_dim));
  cuda::AttnArgs a{};
  a.batch = s.batch;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.head_dim = s.head_dim;
  a.causal = s.causal;
  a.real_len = s.real_len;
  a.scale = 1.0f / std::sqrt(float(s.head_dim));
  a.q_rows = rows_per_batch(*q.tensor, s, s.heads);
  a.k_rows = rows_per_batch(*k.tensor, s, s.kv_heads);
  a.q_begin = q.begin;
  a.q_len = q.len;
  a.k_begin = k.begin;
  a.k_len = k.len;
  return a;
}

}  // namespace

CudaDevice::CudaDevice(const Topology& topology)
    : blocks_([](void* p) { cudaFree(p); }, BlockCache::Memory::device) {
  const cudaError_t found = cudaGetDeviceCount(&gpu_count_);
  if (found != cudaSuccess || gpu_count_ == 0)
    fail(cuda::rank_label() + ": device cuda: no usable GPU (cudaGetDeviceCount: " +
         (found != cudaSuccess ? std::string(cudaGetErrorString(found)) : std::string("0 devices")) + ")");
  gpu_ = visible_gpu_for(gpu_count_, topology.rank_here);
  CUDA_CHECK(cudaSetDevice(gpu_));
  char bus_id[64] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, gpu_));
  bus_id_ = bus_id;
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_major_, cudaDevAttrComputeCapabilityMajor, gpu_));
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_minor_, cudaDevAttrComputeCapabilityMinor, gpu_));
  CUDA_CHECK(cudaDeviceGetAttribute(&shared_optin_, cudaDevAttrMaxSharedMemoryPerBlockOptin, gpu_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(&dot_result_, sizeof(double)));
  gemm_ = std::make_unique<cuda::LtGemm>(stream_, memory());
  position_cache_ = std::make_unique<cuda::PositionCache>(
      stream_, [this](int64_t bytes) { return acquire_counted(bytes); },
      [this](void* p, int64_t bytes) { release_counted(p, bytes); });
  CudaDevice::configure(DeviceSettings{});  // fp32 and the automatic family until a point says
}

CudaDevice::~CudaDevice() {
  // Destructors do not throw: errors here are past the results.
  cudaStreamSynchronize(stream_);
  gemm_.reset();
  position_cache_.reset();
  blocks_.release_all();
  for (int64_t* p : positions_) cudaFree(p);
  cudaFree(dot_result_);
  cudaStreamDestroy(stream_);
}

std::string CudaDevice::description() const {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, gpu_);
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::ostringstream s;
  s << "CUDA GPU " << gpu_ << " of " << gpu_count_ << " at PCI " << bus_id_ << ": " << prop.name << " (sm_"
    << prop.major << prop.minor << ", " << prop.multiProcessorCount << " SMs), memory " << (free_bytes >> 20)
    << " MiB free of " << (total_bytes >> 20) << " MiB (cudaMemGetInfo), CUDA runtime " << runtime / 1000
    << "." << (runtime % 1000) / 10 << ", driver " << driver / 1000 << "." << (driver % 1000) / 10
    << ", cuBLASLt " << gemm_->version()
    << "; attention kernels: " << cuda::attention_kernels_summary(sm_major_, shared_optin_, *family_)
    << "; layer kernels: " << to_string(settings().layer_kernels);
  return s.str();
}

std::map<std::string, std::string> CudaDevice::system_facts() const {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, gpu_);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  const auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  return {{"gpu_name", prop.name},
          {"gpu_count", std::to_string(gpu_count_)},
          {"gpu_memory_mib", std::to_string(prop.totalGlobalMem >> 20)},
          {"gpu_compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
          {"gpu_driver", version(driver)},
          {"cuda_runtime", version(runtime)}};
}

void* CudaDevice::acquire(int64_t bytes) {
  if (void* kept = blocks_.take(bytes)) return kept;
  void* p = nullptr;
  cudaError_t code = cudaMalloc(&p, size_t(bytes));
  if (code == cudaErrorMemoryAllocation) {
    // Kept blocks of other sizes may be what is missing: give them back and retry. The
    // position cache keeps its entries: one may be in the middle of its update.
    cudaGetLastError();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    blocks_.release_all();
    code = cudaMalloc(&p, size_t(bytes));
  }
  if (code == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    fail(cuda::rank_label() + ": out of GPU memory allocating " + std::to_string(bytes) + " bytes (" +
         std::to_string(memory_.current()) + " bytes in use)");
  }
  cuda::check(code, "cudaMalloc");
  return p;
}

void* CudaDevice::acquire_counted(int64_t bytes) {
  const int64_t rounded = (bytes + 255) / 256 * 256;  // as allocate() rounds, to share kept blocks
  void* p = acquire(rounded);
  memory_.add(rounded);
  return p;
}

void CudaDevice::release_counted(void* p, int64_t bytes) {
  const int64_t rounded = (bytes + 255) / 256 * 256;
  blocks_.keep(p, rounded, std::numeric_limits<int64_t>::max());
  memory_.remove(rounded);
}

void CudaDevice::release_cached_memory() {
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  position_cache_->clear();
  blocks_.release_all();
}

Tensor CudaDevice::allocate(std::vector<int64_t> shape, DType dtype) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  // Rounded to 256 bytes so that similar sizes share kept blocks.
  const int64_t bytes = (std::max<int64_t>(n, 1) * element_bytes(dtype) + 255) / 256 * 256;
  void* p = acquire(bytes);
  memory_.add(bytes);
  // Every freed block is kept, as before the host shared the cache: freeing one during a
  // step would be a cudaFree, which waits for the whole device. acquire() gives the kept
  // blocks back when the GPU is full. A kept block goes to the next allocation of its
  // size at once, with no event: safe because every kernel and copy on device tensors is
  // queued on the one compute stream, in order, and the other streams (NCCL's comm
  // stream, the staged comm's copy stream) use a tensor only between a comm's start and
  // its wait, which joins them to the compute stream before the tensor can be released
  // (Comm::shift_start's rule, which debug builds check on the host comm).
  std::shared_ptr<void> storage(p, [this, bytes](void* q) {
    blocks_.keep(q, bytes, std::numeric_limits<int64_t>::max());
    memory_.remove(bytes);
  });
  return Tensor(std::move(storage), std::move(shape), dtype);
}

int64_t CudaDevice::capacity_bytes() const {
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return int64_t(total_bytes);
}

void CudaDevice::configure(const DeviceSettings& settings) {
  family_ = &cuda::kernel_family(settings.kernels, sm_major_, sm_minor_);  // throws before anything changes
  precision_ = precision_of(settings.precision);
  Device::configure(settings);
}

void CudaDevice::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

std::unique_ptr<StepClock> CudaDevice::step_clock() { return std::make_unique<CudaStepClock>(stream_); }

const int64_t* CudaDevice::positions(int slot, const int64_t* host, int64_t n) {
  if (tuned()) return position_cache_->positions(host, n);
  if (n > position_capacity_[slot]) {
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // kernels may still read the old array
    CUDA_CHECK(cudaFree(positions_[slot]));
    positions_[slot] = nullptr;
    memory().remove(position_capacity_[slot] * int64_t(sizeof(int64_t)));
    position_capacity_[slot] = 0;
    CUDA_CHECK(cudaMalloc(&positions_[slot], size_t(n) * sizeof(int64_t)));
    position_capacity_[slot] = n;
    memory().add(n * int64_t(sizeof(int64_t)));
  }
  // Stream-ordered: the previous kernel has read the array before it is overwritten.
  CUDA_CHECK(
      cudaMemcpyAsync(positions_[slot], host, size_t(n) * sizeof(int64_t), cudaMemcpyHostToDevice, stream_));
  return positions_[slot];
}

const int64_t* CudaDevice::block_positions(int slot, const AttnShape& s, const SeqBlock& blk) {
  if (!documents_in_kernels(s)) return positions(slot, blk.positions, blk.len);
  const DocumentBounds& docs = *s.documents;
  const int64_t real_len = docs.real_len();
  positions_host_.assign(blk.positions, blk.positions + blk.len);
  for (int b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < blk.len; ++i) {
      const int64_t pos = blk.positions[i];
      const bool real = pos < real_len;
      positions_host_.push_back(real ? docs.document_start(b, pos) : real_len);  // cuda::DocSpan{start, end}
      positions_host_.push_back(real ? docs.keys(b, pos, false).second : real_len);
    }
  static_assert(sizeof(cuda::DocSpan) == 2 * sizeof(int64_t), "a span is two int64");
  return positions(slot, positions_host_.data(), int64_t(positions_host_.size()));
}

void CudaDevice::upload_f32(Tensor& dst, const float* host) {
  CUDA_CHECK(cudaMemcpyAsync(dst.data(), host, size_t(dst.bytes()), cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDevice::download_f32(const Tensor& src, float* host) {
  CUDA_CHECK(cudaMemcpyAsync(host, src.data(), size_t(src.bytes()), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDevice::copy(Tensor& dst, const Tensor& src) {
  require_same_size(dst, src, "copy");
  copy_rows(dst, 0, 0, src, 0, 0, 1, src.numel());
}

void CudaDevice::copy_rows(Tensor& dst, int64_t dst_off, int64_t dst_ld, const Tensor& src, int64_t src_off,
                           int64_t src_ld, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  const size_t e = size_t(element_bytes(src.dtype()));
  if (dst.dtype() == src.dtype()) {
    CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(dst.raw()) + size_t(dst_off) * e, size_t(dst_ld) * e,
                                 static_cast<const char*>(src.raw()) + size_t(src_off) * e,
                                 size_t(src_ld) * e, size_t(cols) * e, size_t(rows), cudaMemcpyDeviceToDevice,
                                 stream_));
    return;
  }
  const size_t de = size_t(element_bytes(dst.dtype()));
  cuda::convert_rows(static_cast<char*>(dst.raw()) + size_t(dst_off) * de, precision_of(dst.dtype()), dst_ld,
                     static_cast<const char*>(src.raw()) + size_t(src_off) * e, precision_of(src.dtype()),
                     src_ld, rows, cols, stream_);
  check_launch("convert_rows");
}

void CudaDevice::fill(Tensor& t, float value) {
  cuda::fill_typed(t.raw(), precision_of(t.dtype()), t.numel(), value, stream_);
  check_launch("fill");
}

void CudaDevice::add(Tensor& y, const Tensor& x) {
  require_same_size(y, x, "add");
  if (y.dtype() == DType::f32 && x.dtype() == DType::f32)
    cuda::add(y.data(), x.data(), y.numel(), stream_);
  else
    cuda::add_typed(y.raw(), precision_of(y.dtype()), x.raw(), precision_of(x.dtype()), y.numel(), stream_);
  check_launch("add");
}

// The model's kernels read and write tensors of any dtype themselves (reads_16bit()),
// with fp32 arithmetic: cuBLASLt takes 16-bit A, B and C, the element-wise and row
// kernels load and store either type.
double CudaDevice::dot_kernel(const Tensor& a, const Tensor& b) {
  require_same_size(a, b, "dot");
  CUDA_CHECK(cudaMemsetAsync(dot_result_, 0, sizeof(double), stream_));
  cuda::dot(in(a), in(b), a.numel(), dot_result_, stream_);
  check_launch("dot");
  double result = 0;
  CUDA_CHECK(cudaMemcpyAsync(&result, dot_result_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return result;
}

void CudaDevice::gemm_kernel(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                             float beta, Tensor& c) {
  const auto [m, n, k] = gemm_dims(trans_a, trans_b, a, b, c);
  gemm_->run(trans_a, trans_b, m, n, k, alpha, {a.raw(), a.dtype(), matrix_cols(a), a.numel()},
             {b.raw(), b.dtype(), matrix_cols(b), b.numel()}, beta, c.raw(), c.dtype(), matrix_cols(c),
             precision_);
}

void CudaDevice::gemm_add(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                          const Tensor& c, Tensor& d) {
  if (!tuned() || c.dtype() != d.dtype()) return Device::gemm_add(trans_a, trans_b, alpha, a, b, c, d);
  require_same_size(c, d, "gemm_add");
  const auto [m, n, k] = gemm_dims(trans_a, trans_b, a, b, d);
  gemm_->run(trans_a, trans_b, m, n, k, alpha, {a.raw(), a.dtype(), matrix_cols(a), a.numel()},
             {b.raw(), b.dtype(), matrix_cols(b), b.numel()}, 1.0f, d.raw(), d.dtype(), matrix_cols(d),
             precision_, c.raw());
}

void CudaDevice::rmsnorm_fwd_kernel(const Tensor& x, const Tensor& g, double eps, Tensor& y, Tensor& rstd) {
  cuda::rmsnorm_fwd(in(x), in(g), eps, matrix_rows(x), matrix_cols(x), out(y), rstd.data(), stream_);
  check_launch("rmsnorm_fwd");
}

void CudaDevice::rmsnorm_bwd_kernel(const Tensor& x, const Tensor& g, const Tensor& rstd, const Tensor& dy,
                                    Tensor& dx, Tensor& dg) {
  const int64_t rows = matrix_rows(x), cols = matrix_cols(x);
  if (!tuned()) {
    cuda::rmsnorm_bwd(in(x), in(g), rstd.data(), in(dy), rows, cols, out(dx), out(dg), stream_);
    return check_launch("rmsnorm_bwd");
  }
  cuda::rmsnorm_bwd_dx(in(x), in(g), rstd.data(), in(dy), rows, cols, out(dx), stream_);
  Tensor partials = alloc({cuda::rmsnorm_dgamma_chunks(rows), cols});  // freed in stream order
  cuda::rmsnorm_dgamma(in(x), rstd.data(), in(dy), rows, cols, partials.data(), out(dg), stream_);
  check_launch("rmsnorm_bwd");
}

void CudaDevice::rope_kernel(Tensor& x, int heads, const std::vector<int64_t>& pos, double theta,
                             bool inverse) {
  if (tuned()) return rope_into(x, 0, x, 0, matrix_cols(x), heads, pos, theta, inverse);
  const int64_t* dpos = positions(0, pos.data(), int64_t(pos.size()));
  cuda::rope(out(x), matrix_rows(x), matrix_cols(x), heads, dpos, int64_t(pos.size()), theta, inverse,
             stream_);
  check_launch("rope");
}

void CudaDevice::rope_into(Tensor& dst, int64_t dst_col, const Tensor& x, int64_t x_col, int64_t width,
                           int heads, const std::vector<int64_t>& pos, double theta, bool inverse) {
  if (!tuned()) return Device::rope_into(dst, dst_col, x, x_col, width, heads, pos, theta, inverse);
  require_column_blocks(dst, dst_col, x, x_col, width);
  const int64_t rows = matrix_rows(x), seq = int64_t(pos.size());
  const float2* table = position_cache_->rope_table(pos.data(), seq, int(width / heads), theta);
  cuda::rope_apply(out(dst, dst_col), matrix_cols(dst), in(x, x_col), matrix_cols(x), rows, width, heads,
                   table, seq, inverse, stream_);
  check_launch("rope");
}

void CudaDevice::swiglu_fwd_packed(const Tensor& gate_up, Tensor& m) {
  if (!tuned()) return Device::swiglu_fwd_packed(gate_up, m);
  const int64_t rows = matrix_rows(m), f = matrix_cols(m);
  require(matrix_rows(gate_up) == rows && matrix_cols(gate_up) == 2 * f, "swiglu: gate_up is not [rows, 2f]");
  cuda::swiglu_fwd_packed(in(gate_up), out(m), rows, f, stream_);
  check_launch("swiglu_fwd");
}

void CudaDevice::swiglu_bwd_packed(const Tensor& gate_up, const Tensor& dm, Tensor& d_gate_up) {
  if (!tuned()) return Device::swiglu_bwd_packed(gate_up, dm, d_gate_up);
  const int64_t rows = matrix_rows(dm), f = matrix_cols(dm);
  require(matrix_rows(gate_up) == rows && matrix_cols(gate_up) == 2 * f && matrix_rows(d_gate_up) == rows &&
              matrix_cols(d_gate_up) == 2 * f,
          "swiglu: gate_up and d_gate_up are not [rows, 2f]");
  cuda::swiglu_bwd_packed(in(gate_up), in(dm), out(d_gate_up), rows, f, stream_);
  check_launch("swiglu_bwd");
}

void CudaDevice::swiglu_fwd_kernel(const Tensor& a, const Tensor& u, Tensor& m) {
  cuda::swiglu_fwd(in(a), in(u), out(m), a.numel(), stream_);
  check_launch("swiglu_fwd");
}

void CudaDevice::swiglu_bwd_kernel(const Tensor& a, const Tensor& u, const Tensor& dm, Tensor& da,
                                   Tensor& du) {
  cuda::swiglu_bwd(in(a), in(u), in(dm), out(da), out(du), a.numel(), stream_);
  check_launch("swiglu_bwd");
}

void CudaDevice::attn_init(Tensor& o, Tensor& lse) {
  fill(o, 0.0f);
  fill(lse, -INFINITY);
}

bool CudaDevice::flash(const AttnShape& s) const {
  return cuda::flash_serves(s.head_dim, precision_, sm_major_, shared_optin_);
}

std::string CudaDevice::attention_kernel(int head_dim) const {
  return cuda::attention_kernel_name(head_dim, precision_, sm_major_, shared_optin_, *family_);
}

Tensor CudaDevice::flash_operand(const SeqBlock& blk, const AttnShape& s, int heads) {
  const Tensor& t = *blk.tensor;
  const int64_t width = int64_t(heads) * s.head_dim, rows = rows_per_batch(t, s, heads);
  if (t.dtype() == precision()) {
    if (blk.begin == 0 && blk.len == rows) {
      // Read in place: the kernels load 16 bytes at a time (cp.async, TMA), so the operand
      // must start on a 16-byte boundary. A tensor packed into a ring block sits at an
      // offset that the packing order keeps aligned; a packing that broke it would
      // otherwise be a misaligned-address fault in the kernel.
      if (reinterpret_cast<uintptr_t>(t.raw()) % 16 != 0)
        fail(cuda::rank_label() + ": a 16-bit attention operand read in place starts at " +
             std::to_string(reinterpret_cast<uintptr_t>(t.raw()) % 16) +
             " bytes past a 16-byte boundary (the flash kernels load 16 bytes at a time)");
      return t;
    }
    Tensor part = alloc({int64_t(s.batch) * blk.len * width}, t.dtype());
    for (int64_t b = 0; b < s.batch; ++b)
      copy_rows(part, b * blk.len * width, width, t, (b * rows + blk.begin) * width, width, blk.len, width);
    return part;
  }
  Tensor half = alloc({int64_t(s.batch) * blk.len * width}, precision());
  cuda::to_16bit(t.data(), s.batch, rows, blk.begin, blk.len, width, precision_, half.raw(), stream_);
  check_launch("to_16bit");
  return half;
}

cuda::AttnArgs CudaDevice::fwd_args(const AttnShape& s, const AttnFwdBlock& blk) {
  cuda::AttnArgs a = attn_args(s, blk.q, blk.k);
  a.precision = precision_;
  a.o_rows = rows_per_batch(*blk.o, s, s.heads);
  a.vec_len = blk.lse->numel() / (int64_t(s.batch) * s.heads);
  a.q_pos = block_positions(0, s, blk.q);
  a.k_pos = block_positions(1, s, blk.k);
  return a;
}

cuda::AttnArgs CudaDevice::bwd_args(const AttnShape& s, const AttnBwdBlock& blk) {
  cuda::AttnArgs a = attn_args(s, blk.q, blk.k);
  a.precision = precision_;
  a.o_rows = rows_per_batch(*blk.dq, s, s.heads);
  a.dk_rows = rows_per_batch(*blk.dk, s, s.kv_heads);
  a.vec_len = blk.lse->numel() / (int64_t(s.batch) * s.heads);
  a.q_pos = block_positions(0, s, blk.q);
  a.k_pos = block_positions(1, s, blk.k);
  return a;
}

void CudaDevice::attn_fwd_block(const AttnShape& s, const AttnFwdBlock& blk) {
  if (!flash(s)) {
    // A family that masks documents in its flash kernels splits by document where the
    // SIMT kernels serve, as the others do everywhere.
    if (s.documents && kernels_mask_documents())
      return attn_fwd_by_documents(*this, s, blk, [this](const AttnShape& part, const AttnFwdBlock& b) {
        Device::attn_fwd_block(part, b);
      });
    return Device::attn_fwd_block(s, blk);
  }
  if (blk.q.len == 0 || blk.k.len == 0) return;
  const cuda::AttnArgs a = fwd_args(s, blk);
  // A 16-bit copy costs O(S·D) against the kernel's O(S²·D); copies are freed (to the
  // cache) once queued, which the stream orders after the kernel.
  const Tensor q = flash_operand(blk.q, s, s.heads), k = flash_operand(blk.k, s, s.kv_heads),
               v = flash_operand(blk.v, s, s.kv_heads);
  family_->forward(a, q.raw(), k.raw(), v.raw(), blk.o->data(), blk.lse->data(), stream_);
  check_launch("attn_fwd");
}

void CudaDevice::attn_fwd_f32(const AttnShape& s, const AttnFwdBlock& blk) {
  if (blk.q.len == 0 || blk.k.len == 0) return;
  const cuda::AttnArgs a = fwd_args(s, blk);
  cuda::attn_fwd(a, blk.q.tensor->data(), blk.k.tensor->data(), blk.v.tensor->data(), blk.o->data(),
                 blk.lse->data(), stream_);
  check_launch("attn_fwd");
}

void CudaDevice::attn_bwd_delta_kernel(const AttnShape& s, const Tensor& o, const Tensor& dout,
                                       Tensor& delta) {
  const int64_t len = delta.numel() / (int64_t(s.batch) * s.heads);
  require(rows_per_batch(o, s, s.heads) == len, "attn_bwd_delta: o and delta lengths differ");
  cuda::attn_bwd_delta(s.batch, s.heads, s.head_dim, len, in(o), in(dout), delta.data(), stream_);
  check_launch("attn_bwd_delta");
}

void CudaDevice::attn_bwd_block(const AttnShape& s, const AttnBwdBlock& blk) {
  if (!flash(s)) {
    if (s.documents && kernels_mask_documents())
      return attn_bwd_by_documents(*this, s, blk, [this](const AttnShape& part, const AttnBwdBlock& b) {
        Device::attn_bwd_block(part, b);
      });
    return Device::attn_bwd_block(s, blk);
  }
  if (blk.q.len == 0 || blk.k.len == 0) return;
  const cuda::AttnArgs a = bwd_args(s, blk);
  const SeqBlock dout{blk.dout, blk.q.begin, blk.q.len, blk.q.positions};
  const Tensor q = flash_operand(blk.q, s, s.heads), k = flash_operand(blk.k, s, s.kv_heads),
               v = flash_operand(blk.v, s, s.kv_heads), d = flash_operand(dout, s, s.heads);
  family_->backward(a, q.raw(), k.raw(), v.raw(), d.raw(), blk.lse->data(), blk.delta->data(), blk.dq->data(),
                    blk.dk->data(), blk.dv->data(), stream_);
  check_launch("attn_bwd");
}

void CudaDevice::attn_bwd_f32(const AttnShape& s, const AttnBwdBlock& blk) {
  if (blk.q.len == 0 || blk.k.len == 0) return;
  const cuda::AttnArgs a = bwd_args(s, blk);
  cuda::attn_bwd(a, blk.q.tensor->data(), blk.k.tensor->data(), blk.v.tensor->data(), blk.dout->data(),
                 blk.lse->data(), blk.delta->data(), blk.dq->data(), blk.dk->data(), blk.dv->data(), stream_);
  check_launch("attn_bwd");
}

void CudaDevice::lse_merge(const AttnShape& s, Tensor& o, Tensor& lse, const Tensor& o_b,
                           const Tensor& lse_b) {
  require_same_size(o, o_b, "lse_merge");
  const int64_t len = lse.numel() / (int64_t(s.batch) * s.heads);
  cuda::lse_merge(s.batch, s.heads, s.head_dim, len, o.data(), lse.data(), o_b.data(), lse_b.data(), stream_);
  check_launch("lse_merge");
}

}  // namespace minictx
