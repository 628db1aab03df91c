#include "device/kokkos_device.hpp"

#include <cblas.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/half_float.hpp"
#include "device/blas_kernels.hpp"
#include "device/host_attention.hpp"

namespace minictx {
namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;

// Kokkos is initialised once per process, on first use, and finalised at exit (after
// every tensor is gone: they are owned by objects that die before main returns).
void ensure_kokkos() {
  if (Kokkos::is_initialized()) return;
    // One MPI rank per core. InitArguments gave way to InitializationSettings in 3.7 and
    // is gone from Kokkos 4.
#if KOKKOS_VERSION >= 30700
  Kokkos::initialize(Kokkos::InitializationSettings().set_num_threads(1));
#else
  Kokkos::InitArguments args;
  args.num_threads = 1;
  Kokkos::initialize(args);
#endif
  std::atexit([] {
    if (Kokkos::is_initialized()) Kokkos::finalize();
  });
}

template <class F>
void for_each(const char* label, int64_t n, F&& f) {
  Kokkos::parallel_for(label, Kokkos::RangePolicy<HostExec, Kokkos::IndexType<int64_t>>(0, n), f);
}

void require_same_size(const Tensor& a, const Tensor& b, const char* op) {
  require(a.numel() == b.numel(), std::string(op) + ": tensor sizes differ");
}

// A tensor's elements, of any dtype, read and written as fp32.
struct Elements {
  explicit Elements(const Tensor& t) : p(t.raw()), type(t.dtype()) {}
  float get(int64_t i) const {
    return type == DType::f32 ? static_cast<const float*>(p)[i]
                              : half_float::widen(static_cast<const uint16_t*>(p)[i], type);
  }
  void set(int64_t i, float v) const {
    if (type == DType::f32)
      static_cast<float*>(p)[i] = v;
    else
      static_cast<uint16_t*>(p)[i] = half_float::narrow(v, type);
  }
  void* p;
  DType type;
};

}  // namespace

KokkosDevice::KokkosDevice()
    : blocks_([](void* p) { Kokkos::kokkos_free<Kokkos::HostSpace>(p); }, BlockCache::Memory::host) {
  ensure_kokkos();
  openblas_set_num_threads(1);
}

std::string KokkosDevice::description() const {
  std::ostringstream s;
  s << "Kokkos " << KOKKOS_VERSION / 10000 << "." << (KOKKOS_VERSION / 100) % 100 << "."
    << KOKKOS_VERSION % 100 << " (" << HostExec::name() << "), BLAS: " << blas_description();
  return s.str();
}

Tensor KokkosDevice::allocate(std::vector<int64_t> shape, DType dtype) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const int64_t bytes = std::max<int64_t>(n, 1) * element_bytes(dtype);
  void* p = blocks_.take(bytes);
  if (!p) p = Kokkos::kokkos_malloc<Kokkos::HostSpace>("minictx", size_t(bytes));
  if (!p) fail("out of host memory allocating " + std::to_string(bytes) + " bytes");
  memory_.add(bytes);
  std::shared_ptr<void> storage(p, [this, bytes](void* q) {
    blocks_.keep(q, bytes, memory_.peak());
    memory_.remove(bytes);
  });
  return Tensor(std::move(storage), std::move(shape), dtype);
}

int64_t KokkosDevice::capacity_bytes() const {
  return int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGE_SIZE));
}

void KokkosDevice::upload_f32(Tensor& dst, const float* host) {
  std::memcpy(dst.data(), host, size_t(dst.bytes()));
}
void KokkosDevice::download_f32(const Tensor& src, float* host) {
  std::memcpy(host, src.data(), size_t(src.bytes()));
}

void KokkosDevice::copy(Tensor& dst, const Tensor& src) {
  require_same_size(dst, src, "copy");
  copy_rows(dst, 0, 0, src, 0, 0, 1, src.numel());
}

void KokkosDevice::copy_rows(Tensor& dst, int64_t dst_off, int64_t dst_ld, const Tensor& src, int64_t src_off,
                             int64_t src_ld, int64_t rows, int64_t cols) {
  if (dst.dtype() == src.dtype()) {
    const int64_t e = element_bytes(src.dtype());
    auto* d = static_cast<char*>(dst.raw()) + dst_off * e;
    const auto* s = static_cast<const char*>(src.raw()) + src_off * e;
    for_each("minictx::copy_rows", rows,
             [=](int64_t r) { std::memcpy(d + r * dst_ld * e, s + r * src_ld * e, size_t(cols * e)); });
    return;
  }
  const Elements d(dst), s(src);
  for_each("minictx::convert_rows", rows, [=](int64_t r) {
    for (int64_t c = 0; c < cols; ++c) d.set(dst_off + r * dst_ld + c, s.get(src_off + r * src_ld + c));
  });
}

void KokkosDevice::fill(Tensor& t, float value) {
  const Elements e(t);
  for_each("minictx::fill", t.numel(), [=](int64_t i) { e.set(i, value); });
}

void KokkosDevice::add(Tensor& y, const Tensor& x) {
  require_same_size(y, x, "add");
  if (y.dtype() == DType::f32 && x.dtype() == DType::f32) {
    float* py = y.data();
    const float* px = x.data();
    for_each("minictx::add", y.numel(), [=](int64_t i) { py[i] += px[i]; });
    return;
  }
  const Elements ey(y), ex(x);
  for_each("minictx::add_converted", y.numel(), [=](int64_t i) { ey.set(i, ey.get(i) + ex.get(i)); });
}

double KokkosDevice::dot_kernel(const Tensor& a, const Tensor& b) {
  require_same_size(a, b, "dot");
  const float* pa = a.data();
  const float* pb = b.data();
  double sum = 0.0;
  Kokkos::parallel_reduce(
      "minictx::dot", Kokkos::RangePolicy<HostExec, Kokkos::IndexType<int64_t>>(0, a.numel()),
      [=](int64_t i, double& acc) { acc += double(pa[i]) * double(pb[i]); }, sum);
  return sum;
}

void KokkosDevice::gemm_kernel(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                               float beta, Tensor& c) {
  const auto [m, n, k] = gemm_dims(trans_a, trans_b, a, b, c);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(m),
              int(n), int(k), alpha, a.data(), int(matrix_cols(a)), b.data(), int(matrix_cols(b)), beta,
              c.data(), int(matrix_cols(c)));
}

void KokkosDevice::rmsnorm_fwd_kernel(const Tensor& x, const Tensor& g, double eps, Tensor& y, Tensor& rstd) {
  const int64_t n = matrix_cols(x);
  const float *px = x.data(), *pg = g.data();
  float *py = y.data(), *pr = rstd.data();
  for_each("minictx::rmsnorm_fwd", matrix_rows(x), [=](int64_t r) {
    const float* xr = px + r * n;
    double ss = 0.0;
    for (int64_t j = 0; j < n; ++j) ss += double(xr[j]) * xr[j];
    const float inv = float(1.0 / std::sqrt(ss / double(n) + eps));
    pr[r] = inv;
    for (int64_t j = 0; j < n; ++j) py[r * n + j] = xr[j] * inv * pg[j];
  });
}

void KokkosDevice::rmsnorm_bwd_kernel(const Tensor& x, const Tensor& g, const Tensor& rstd, const Tensor& dy,
                                      Tensor& dx, Tensor& dg) {
  const int64_t n = matrix_cols(x);
  const int64_t rows = matrix_rows(x);
  const float *px = x.data(), *pg = g.data(), *pr = rstd.data(), *pdy = dy.data();
  float *pdx = dx.data(), *pdg = dg.data();
  // y_j = x_j r g_j with r = (mean x² + eps)^-1/2:
  // dx_j = r (g_j dy_j − x_j r² · mean_k(x_k g_k dy_k)).
  for_each("minictx::rmsnorm_bwd", rows, [=](int64_t row) {
    const float* xr = px + row * n;
    const float* dyr = pdy + row * n;
    const float r = pr[row];
    double dot = 0.0;
    for (int64_t j = 0; j < n; ++j) dot += double(xr[j]) * pg[j] * dyr[j];
    const float c = float(dot / double(n)) * r * r;
    for (int64_t j = 0; j < n; ++j) pdx[row * n + j] += r * (pg[j] * dyr[j] - xr[j] * c);
  });
  // The gain gradient sums over rows: one column per iteration keeps writes disjoint.
  for_each("minictx::rmsnorm_bwd_gain", n, [=](int64_t j) {
    double acc = 0.0;
    for (int64_t row = 0; row < rows; ++row) acc += double(pdy[row * n + j]) * px[row * n + j] * pr[row];
    pdg[j] += float(acc);
  });
}

void KokkosDevice::rope_kernel(Tensor& x, int heads, const std::vector<int64_t>& positions, double theta,
                               bool inverse) {
  const int64_t width = matrix_cols(x);
  const int d = int(width / heads);
  const int half = d / 2;
  const int64_t seq = int64_t(positions.size());
  float* px = x.data();
  const int64_t* pos = positions.data();
  const double sign = inverse ? -1.0 : 1.0;
  for_each("minictx::rope", matrix_rows(x), [=](int64_t row) {
    const double p = double(pos[row % seq]);
    for (int i = 0; i < half; ++i) {
      const double angle = sign * p * std::pow(theta, -2.0 * i / d);
      const float c = float(std::cos(angle)), s = float(std::sin(angle));
      for (int h = 0; h < heads; ++h) {
        float* v = px + row * width + int64_t(h) * d;
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
      }
    }
  });
}

// Each row's log-sum-exp in fp64 (a vocabulary of 10^5 terms would lose digits summed in
// fp32), from its maximum so that no exponential overflows.
double KokkosDevice::cross_entropy_kernel(Tensor& logits, const std::vector<int64_t>& labels,
                                          float grad_scale) {
  const int64_t vocab = matrix_cols(logits);
  float* z = logits.data();
  const int64_t* label = labels.data();
  double loss = 0.0;
  Kokkos::parallel_reduce(
      "minictx::cross_entropy",
      Kokkos::RangePolicy<HostExec, Kokkos::IndexType<int64_t>>(0, matrix_rows(logits)),
      [=](int64_t r, double& acc) {
        float* row = z + r * vocab;
        if (label[r] < 0) {
          std::fill(row, row + vocab, 0.0f);
          return;
        }
        const double top = *std::max_element(row, row + vocab), picked = row[label[r]];
        double sum = 0.0;
        for (int64_t v = 0; v < vocab; ++v) {
          const double e = std::exp(double(row[v]) - top);
          row[v] = float(e);
          sum += e;
        }
        acc += top + std::log(sum) - picked;
        const float scale = float(grad_scale / sum);
        for (int64_t v = 0; v < vocab; ++v) row[v] *= scale;
        row[label[r]] -= grad_scale;
      },
      loss);
  return loss;
}

void KokkosDevice::swiglu_fwd_kernel(const Tensor& a, const Tensor& u, Tensor& m) {
  const float *pa = a.data(), *pu = u.data();
  float* pm = m.data();
  for_each("minictx::swiglu_fwd", a.numel(), [=](int64_t i) {
    const float sig = 1.0f / (1.0f + std::exp(-pa[i]));
    pm[i] = pa[i] * sig * pu[i];
  });
}

void KokkosDevice::swiglu_bwd_kernel(const Tensor& a, const Tensor& u, const Tensor& dm, Tensor& da,
                                     Tensor& du) {
  const float *pa = a.data(), *pu = u.data(), *pdm = dm.data();
  float *pda = da.data(), *pdu = du.data();
  for_each("minictx::swiglu_bwd", a.numel(), [=](int64_t i) {
    const float sig = 1.0f / (1.0f + std::exp(-pa[i]));
    const float silu = pa[i] * sig;
    pdu[i] = pdm[i] * silu;
    pda[i] = pdm[i] * pu[i] * sig * (1.0f + pa[i] * (1.0f - sig));
  });
}

void KokkosDevice::attn_init(Tensor& o, Tensor& lse) {
  fill(o, 0.0f);
  const int64_t plane = lse.numel() / 2;
  std::fill(lse.data(), lse.data() + plane, -std::numeric_limits<float>::infinity());
  std::fill(lse.data() + plane, lse.data() + lse.numel(), 0.0f);
}

void KokkosDevice::attn_fwd_f32(const AttnShape& s, const AttnFwdBlock& a) { host::attn_fwd(s, a); }
void KokkosDevice::attn_bwd_delta_kernel(const AttnShape& s, const Tensor& o, const Tensor& dout,
                                         Tensor& delta) {
  host::attn_bwd_delta(s, o, dout, delta);
}
void KokkosDevice::attn_bwd_f32(const AttnShape& s, const AttnBwdBlock& a) { host::attn_bwd(s, a); }

void KokkosDevice::lse_merge(const AttnShape& s, Tensor& o, Tensor& lse, const Tensor& o_b,
                             const Tensor& lse_b) {
  require_same_size(o, o_b, "lse_merge");
  const int d = s.value_dim();
  const int64_t plane = lse.numel() / 2, len = plane / (int64_t(s.batch) * s.heads);
  float *po = o.data(), *pl = lse.data();
  const float *pob = o_b.data(), *plb = lse_b.data();
  const int heads = s.heads;
  for_each("minictx::lse_merge", plane, [=](int64_t idx) {
    const int64_t b = idx / (heads * len), h = (idx / len) % heads, i = idx % len;
    const int64_t off = ((b * len + i) * heads + h) * d;
    host::lse_merge_row(po + off, pl[idx], pl[plane + idx], pob + off, double(plb[idx]) + plb[plane + idx],
                        d);
  });
}

}  // namespace minictx
