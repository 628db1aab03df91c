// The cuda device's kernels (label gpu: needs a GPU, run by ci/gpu-check.sh): attention
// forward/backward against the fp64 reference in fp32, bf16 and fp16 operand precision
// (tolerances as TransformerEngine's attention tests and `minictx verify`), and every
// other operation against the host (Kokkos) device on the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/half_float.hpp"
#include "core/synthetic_data.hpp"
#include "device/cuda/cuda_device.hpp"
#include "device/cuda/cuda_footprint.hpp"
#include "device/kokkos_device.hpp"
#include "reference/reference.hpp"
#include "tests/cuda/tma_probe.hpp"
#include "tests/cuda/wgmma_probe.hpp"
#include "tests/unit/device_test_support.hpp"

using namespace minictx;
using namespace minictx::test;

namespace {

CudaDevice& gpu() {
  static CudaDevice dev{Topology{}};  // first use, not static initialisation: test listing needs no GPU
  return dev;
}
// TransformerEngine's attention tolerances (atol = rtol): bf16 2.5e-2, fp16 5e-3.
double tolerance(DType t) { return t == DType::bf16 ? 2.5e-2 : t == DType::f16 ? 5e-3 : 1e-5; }

struct AttnCase {
  int batch, heads, kv_heads, head_dim;
  int64_t len;
  bool causal;
  int64_t stride;  // positions 3 + i·stride
  DType dtype;
};

class CudaAttention : public ::testing::TestWithParam<AttnCase> {};

// Whether the wgmma forward (Hopper, a build for sm_90a) can run on this GPU.
bool wgmma_here() {
  cudaDeviceProp prop{};
  return cudaGetDeviceProperties(&prop, gpu().gpu()) == cudaSuccess &&
         cuda::flash_sm90_available(prop.major, prop.minor);
}

// Why a test of the sm90 kernel family cannot run here (nullptr: it can): it needs a GPU
// of compute capability 9.0, a build for sm_90a and a shape the flash kernels serve.
const char* no_hopper_flash(DType dtype, int head_dim) {
  if (!wgmma_here()) return "needs a GPU of compute capability 9.0 and a build for sm_90a";
  if (dtype == DType::f32 || !cuda::flash_head_dim(head_dim)) return "not a flash shape";
  return nullptr;
}

// Runs `check` on this kernel family, then goes back to the sm80 family, which the tests
// without a family in their name use on every GPU.
template <class Check>
void with_family(AttentionKernels family, Check&& check) {
  gpu().configure({gpu().precision(), family});
  check();
  gpu().configure({gpu().precision(), AttentionKernels::sm80});
}

// The GPU configured to compute in `dtype` with `partials`, its kernel family kept (with_family
// chooses that).
void gpu_computes_in(DType dtype, AttentionPartials partials = AttentionPartials::fp32) {
  gpu().configure({dtype, gpu().settings().kernels, partials});
}

void check_against_reference(const AttnCase& c) {
  gpu_computes_in(c.dtype);
  const AttentionProblem a =
      attention_problem(c.batch, c.heads, c.kv_heads, c.head_dim, c.len, c.causal, c.stride);
  const auto &q = a.q, &k = a.k, &v = a.v, &dout = a.dout;
  const auto& pos = a.positions;
  const auto& ref = a.ref;

  AttnShape s{c.batch, c.heads, c.kv_heads, c.head_dim, c.causal, 1 << 30, 64, 256, {}};
  const int64_t rows = c.batch * c.len;
  Tensor tq = upload(gpu(), q, {rows, c.heads * c.head_dim}),
         tk = upload(gpu(), k, {rows, c.kv_heads * c.head_dim});
  Tensor tv = upload(gpu(), v, {rows, c.kv_heads * c.head_dim});
  Tensor tdo = upload(gpu(), dout, {rows, c.heads * c.head_dim});
  Tensor o = gpu().alloc({rows, c.heads * c.head_dim}), lse = gpu().alloc_lse(c.batch, c.heads, c.len);
  gpu().attn_init(o, lse);
  // Queries and keys in two blocks each, the later key block first: exercises blocks at
  // offsets (fully visible, fully masked, diagonal) and the kernel's LSE merge.
  const int64_t cut = c.len / 3, q_cut = c.len / 2;
  auto block = [&](const Tensor& t, int64_t b, int64_t n) { return SeqBlock{&t, b, n, pos.data() + b}; };
  const std::pair<int64_t, int64_t> q_blocks[] = {{0, q_cut}, {q_cut, c.len - q_cut}},
                                    k_blocks[] = {{cut, c.len - cut}, {0, cut}};
  for (const auto& [qb, qn] : q_blocks)
    for (const auto& [kb, kn] : k_blocks)
      gpu().attn_fwd(s, {block(tq, qb, qn), block(tk, kb, kn), block(tv, kb, kn), &o, &lse});
  const double tol = tolerance(c.dtype);
  // Each result against its reference, and where it is wrong when it is.
  auto expect_close = [&](const char* name, const Tensor& t, const std::vector<double>& want, int64_t cols,
                          int64_t col_period) {
    const std::vector<double> got = download(gpu(), t);
    EXPECT_LT(rel_err(got, want), tol) << name << ": " << where_wrong(got, want, cols, col_period, tol);
  };
  const int64_t q_cols = c.heads * c.head_dim, kv_cols = c.kv_heads * c.head_dim;
  expect_close("o", o, ref.o, q_cols, c.head_dim);
  expect_close("lse", lse, ref.lse, c.len, 64);

  Tensor delta = gpu().alloc_rows_of_lse(lse);
  gpu().attn_bwd_delta(s, o, tdo, delta);
  Tensor dq = gpu().zeros(tq.shape()), dk = gpu().zeros(tk.shape()), dv = gpu().zeros(tv.shape());
  for (const auto& [qb, qn] : q_blocks)
    for (const auto& [kb, kn] : k_blocks)
      gpu().attn_bwd(
          s, {block(tq, qb, qn), block(tk, kb, kn), block(tv, kb, kn), &tdo, &lse, &delta, &dq, &dk, &dv});
  expect_close("dq", dq, ref.dq, q_cols, c.head_dim);
  expect_close("dk", dk, ref.dk, kv_cols, c.head_dim);
  expect_close("dv", dv, ref.dv, kv_cols, c.head_dim);
  gpu_computes_in(DType::f32);
}

TEST_P(CudaAttention, MatchesFp64Reference) {
  with_family(AttentionKernels::sm80, [&] { check_against_reference(GetParam()); });
}

// The same on the sm90 family (the TMA-fed forward, the wgmma backward), where the flash
// kernels serve.
TEST_P(CudaAttention, Sm90MatchesFp64Reference) {
  const AttnCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90, [&] { check_against_reference(c); });
}

// The same on the sm90-onepass family (the sm90 forward, the one-kernel backward whose dQ
// is added to dq by bulk reduce-adds): every flash shape, two query and two key blocks,
// so dq accumulates over the key blocks' calls.
TEST_P(CudaAttention, Sm90OnepassMatchesFp64Reference) {
  const AttnCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90_onepass, [&] { check_against_reference(c); });
}

std::vector<AttnCase> attention_cases() {
  std::vector<AttnCase> cases;
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    cases.push_back({1, 4, 4, 16, 64, true, 1, t});    // MHA
    cases.push_back({2, 8, 2, 32, 97, true, 1, t});    // GQA 4:1, odd length, ragged tiles
    cases.push_back({1, 4, 1, 40, 130, false, 1, t});  // MQA, not causal, head dim not a multiple of 32
    cases.push_back({1, 2, 2, 128, 300, true, 1, t});  // head dim 128, several key tiles
    cases.push_back({1, 4, 2, 64, 70, true, 3, t});    // strided positions (stripe-like)
    // Head dims of the flash kernels at lengths that are not multiples of their tiles.
    cases.push_back({1, 4, 2, 64, 1000, true, 1, t});   // GQA 2:1, many key and query tiles
    cases.push_back({2, 4, 4, 128, 777, false, 1, t});  // batch 2, full mask
    cases.push_back({1, 8, 1, 128, 515, true, 2, t});   // MQA, strided positions
    cases.push_back({1, 2, 2, 96, 200, true, 1, t});    // a head dim the SIMT kernel serves
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention, ::testing::ValuesIn(attention_cases()),
                         [](const ::testing::TestParamInfo<AttnCase>& i) {
                           const AttnCase& c = i.param;
                           return std::string(to_string(c.dtype)) + "_h" + std::to_string(c.heads) + "kv" +
                                  std::to_string(c.kv_heads) + "_d" + std::to_string(c.head_dim) + "_len" +
                                  std::to_string(c.len) + (c.causal ? "_causal" : "_full") + "_" +
                                  std::to_string(i.index);
                         });

// Keys at positions >= real_len are padding, and a zigzag shard's positions jump: the GPU
// (SIMT kernel in fp32, flash kernels in bf16/fp16) matches the host device's fp32 forward
// and backward.
struct MaskCase {
  int head_dim;
  DType dtype;
};
class CudaAttentionMask : public ::testing::TestWithParam<MaskCase> {};

// A zigzag shard's two chunks (positions 0..89 and 300..389) with the sequence's real
// length inside the second: its last 49 keys are padding.
constexpr int64_t kShardRealLen = 341;
std::vector<int64_t> zigzag_shard() {
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < 90; ++i) pos.push_back(i);
  for (int64_t i = 300; i < 390; ++i) pos.push_back(i);
  return pos;
}

// One forward and backward over whole tensors of `pos`'s rows per batch row, on the GPU
// at operand precision `dtype` and on the host in fp32: o, dq, dk and dv agree within the
// dtype's tolerance (not lse: a padded query's is −∞ on both, which a relative error
// cannot weigh).
void expect_gpu_matches_host(const AttnShape& s, const std::vector<int64_t>& pos, DType dtype) {
  const int d = s.head_dim;
  const int64_t len = int64_t(pos.size()), rows = s.batch * len, qw = s.heads * d, kw = s.kv_heads * d;
  const auto q = generated(size_t(rows * qw), 1), k = generated(size_t(rows * kw), 2),
             v = generated(size_t(rows * kw), 3), dout = generated(size_t(rows * qw), 4);
  std::vector<std::vector<double>> out[2];
  Device* devs[2] = {&gpu(), &host_device()};
  gpu_computes_in(dtype);
  for (int i = 0; i < 2; ++i) {
    Device& dev = *devs[i];
    Tensor tq = upload(dev, q, {rows, qw}), tk = upload(dev, k, {rows, kw}), tv = upload(dev, v, {rows, kw}),
           tdo = upload(dev, dout, {rows, qw});
    Tensor o = dev.alloc({rows, qw}), lse = dev.alloc_lse(s.batch, s.heads, len),
           delta = dev.alloc_rows_of_lse(lse);
    dev.attn_init(o, lse);
    const SeqBlock qb{&tq, 0, len, pos.data()}, kb{&tk, 0, len, pos.data()}, vb{&tv, 0, len, pos.data()};
    dev.attn_fwd(s, {qb, kb, vb, &o, &lse});
    dev.attn_bwd_delta(s, o, tdo, delta);
    Tensor dq = dev.zeros(tq.shape()), dk = dev.zeros(tk.shape()), dv = dev.zeros(tv.shape());
    dev.attn_bwd(s, {qb, kb, vb, &tdo, &lse, &delta, &dq, &dk, &dv});
    for (const Tensor* t : {&o, &dq, &dk, &dv}) out[i].push_back(download(dev, *t));
  }
  gpu_computes_in(DType::f32);
  const char* names[] = {"o", "dq", "dk", "dv"};
  const int64_t cols[] = {qw, qw, kw, kw};
  const double tol = tolerance(dtype);
  for (size_t j = 0; j < 4; ++j)
    EXPECT_LT(rel_err(out[0][j], out[1][j]), tol)
        << names[j] << ": " << where_wrong(out[0][j], out[1][j], cols[j], d, tol);
}

void check_masks_against_host(const MaskCase& c) {
  expect_gpu_matches_host({1, 2, 1, c.head_dim, true, kShardRealLen, 64, 256, {}}, zigzag_shard(), c.dtype);
}

TEST_P(CudaAttentionMask, PaddingAndZigzagMatchHost) {
  with_family(AttentionKernels::sm80, [&] { check_masks_against_host(GetParam()); });
}

TEST_P(CudaAttentionMask, Sm90PaddingAndZigzagMatchHost) {
  const MaskCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90, [&] { check_masks_against_host(c); });
}

TEST_P(CudaAttentionMask, Sm90OnepassPaddingAndZigzagMatchHost) {
  const MaskCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90_onepass, [&] { check_masks_against_host(c); });
}

INSTANTIATE_TEST_SUITE_P(Kernels, CudaAttentionMask,
                         ::testing::Values(MaskCase{32, DType::f32}, MaskCase{64, DType::bf16},
                                           MaskCase{128, DType::f16}),
                         [](const ::testing::TestParamInfo<MaskCase>& i) {
                           return std::string(to_string(i.param.dtype)) + "_d" +
                                  std::to_string(i.param.head_dim);
                         });

// Packed documents, which the GPU runs as per-document sub-blocks on its unchanged kernels
// (device/document_blocks.hpp) and the host kernel masks itself: the zigzag shard above,
// documents the chunks cut, one-token documents (one-row blocks for the flash kernels),
// batch 2 with one packing for both rows and with a packing per row (run row by row on
// copies).
void check_documents_against_host(const MaskCase& c, bool rows_differ) {
  std::vector<std::vector<int64_t>> packing{{40, 1, 1, 200, 1, 98}, {1, 88, 1, 250, 1}};
  if (!rows_differ) packing[1] = packing[0];
  expect_gpu_matches_host({2, 2, 1, c.head_dim, true, kShardRealLen, 64, 256,
                           std::make_shared<const DocumentBounds>(packing, kShardRealLen)},
                          zigzag_shard(), c.dtype);
}

TEST_P(CudaAttentionMask, DocumentsMatchHost) {
  with_family(AttentionKernels::sm80, [&] {
    check_documents_against_host(GetParam(), false);
    check_documents_against_host(GetParam(), true);
  });
}

TEST_P(CudaAttentionMask, Sm90DocumentsMatchHost) {
  const MaskCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90, [&] {
    check_documents_against_host(c, false);
    check_documents_against_host(c, true);
  });
}

// sm90-onepass leaves documents to the device's split: its kernel on per-document blocks,
// one-row blocks included.
TEST_P(CudaAttentionMask, Sm90OnepassDocumentsMatchHost) {
  const MaskCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90_onepass, [&] {
    check_documents_against_host(c, false);
    check_documents_against_host(c, true);
  });
}

// The same with the document mask inside the flash kernels (the -documents families), and
// a 1,000-token sequence whose documents (300, 1, 250, 439 tokens, padding after 990) leave
// most key tiles of a query tile outside its documents, skipped whole: each pass walks
// only its tiles' documents. Where the flash kernels do not serve (fp32 here), the block
// is split by document as before.
void check_documents_in_kernels(const MaskCase& c) {
  check_documents_against_host(c, false);
  check_documents_against_host(c, true);
  std::vector<int64_t> pos(1000);
  for (int64_t i = 0; i < 1000; ++i) pos[size_t(i)] = i;
  const std::vector<std::vector<int64_t>> packing{{300, 1, 250, 439}, {1, 988, 1}};
  for (bool causal : {true, false})
    expect_gpu_matches_host(
        {2, 4, 2, c.head_dim, causal, 990, 64, 256, std::make_shared<const DocumentBounds>(packing, 990)},
        pos, c.dtype);
}

TEST_P(CudaAttentionMask, DocumentsInTheKernelsMatchHost) {
  with_family(AttentionKernels::sm80_documents, [&] { check_documents_in_kernels(GetParam()); });
}

TEST_P(CudaAttentionMask, Sm90DocumentsInTheKernelsMatchHost) {
  const MaskCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90_documents, [&] { check_documents_in_kernels(c); });
}

// attention.partials storage on the flash kernels: the cuda device rounds each block's
// output, and each block's dQ, dK and dV contributions, to the run's dtype before they
// join the running sums. Two key blocks (the later first): the result stays within the
// dtype's tolerance of fp64, differs from fp32 partials by about one rounding of the
// dtype, not more, and dK of the keys one block holds alone is a 16-bit number element by
// element (one rounded contribution added to zeros), which fp32 partials seldom give.
struct PartialsCase {
  int head_dim;
  DType dtype;
};
class CudaAttentionPartials : public ::testing::TestWithParam<PartialsCase> {};

void check_storage_partials(const PartialsCase& c) {
  const int b = 1, h = 4, kv = 2, d = c.head_dim;
  const int64_t len = 300, cut = 120;
  const AttentionProblem a = attention_problem(b, h, kv, d, len, true, 1);
  const AttnShape s{b, h, kv, d, true, 1 << 30, 64, 256, {}};
  const int64_t qw = h * d, kw = kv * d;
  auto two_key_blocks = [&](AttentionPartials partials) {
    gpu_computes_in(c.dtype, partials);
    Tensor q = upload(gpu(), a.q, {len, qw}), k = upload(gpu(), a.k, {len, kw}),
           v = upload(gpu(), a.v, {len, kw}), dout = upload(gpu(), a.dout, {len, qw});
    const int64_t* pos = a.positions.data();
    Tensor o = gpu().alloc({len, qw}), lse = gpu().alloc_lse(b, h, len), delta = gpu().alloc_rows_of_lse(lse);
    gpu().attn_init(o, lse);
    const SeqBlock qb{&q, 0, len, pos};
    const std::pair<int64_t, int64_t> blocks[] = {{cut, len - cut}, {0, cut}};  // key rows: begin, length
    for (const auto& [begin, n] : blocks)
      gpu().attn_fwd(s, {qb, {&k, begin, n, pos + begin}, {&v, begin, n, pos + begin}, &o, &lse});
    gpu().attn_bwd_delta(s, o, dout, delta);
    Tensor dq = gpu().zeros(q.shape()), dk = gpu().zeros(k.shape()), dv = gpu().zeros(v.shape());
    for (const auto& [begin, n] : blocks)
      gpu().attn_bwd(
          s,
          {qb, {&k, begin, n, pos + begin}, {&v, begin, n, pos + begin}, &dout, &lse, &delta, &dq, &dk, &dv});
    std::vector<std::vector<double>> got;
    for (const Tensor* t : {&o, &dq, &dk, &dv}) got.push_back(download(gpu(), *t));
    gpu_computes_in(DType::f32);
    return got;
  };
  const auto kept = two_key_blocks(AttentionPartials::fp32),
             rounded = two_key_blocks(AttentionPartials::storage);
  const std::vector<double>* refs[] = {&a.ref.o, &a.ref.dq, &a.ref.dk, &a.ref.dv};
  const char* names[] = {"o", "dq", "dk", "dv"};
  const int64_t cols[] = {qw, qw, kw, kw};
  const double tol = tolerance(c.dtype), unit = std::ldexp(1.0, c.dtype == DType::bf16 ? -8 : -11);
  for (size_t j = 0; j < 4; ++j) {
    EXPECT_LT(rel_err(rounded[j], *refs[j]), tol)
        << names[j] << ": " << where_wrong(rounded[j], *refs[j], cols[j], d, tol);
    const double step = rel_err(rounded[j], kept[j]);
    EXPECT_GT(step, unit / 64) << names[j] << ": storage partials changed nothing";
    EXPECT_LT(step, 2 * unit) << names[j] << ": storage partials moved it by more than a rounding";
  }
  auto in_dtype = [&](double x) {
    return float(x) == half_float::widen(half_float::narrow(float(x), c.dtype), c.dtype);
  };
  int64_t kept_in_dtype = 0;
  for (int64_t i = cut * kw; i < len * kw; ++i) {
    ASSERT_TRUE(in_dtype(rounded[2][size_t(i)])) << "dk element " << i << " = " << rounded[2][size_t(i)];
    kept_in_dtype += in_dtype(kept[2][size_t(i)]);
  }
  EXPECT_LT(kept_in_dtype, (len - cut) * kw / 10);
}

TEST_P(CudaAttentionPartials, StorageRoundsEachBlockBeforeTheSums) {
  with_family(AttentionKernels::sm80, [&] { check_storage_partials(GetParam()); });
}

TEST_P(CudaAttentionPartials, Sm90StorageRoundsEachBlockBeforeTheSums) {
  const PartialsCase c = GetParam();
  if (const char* why = no_hopper_flash(c.dtype, c.head_dim)) GTEST_SKIP() << why;
  with_family(AttentionKernels::sm90, [&] { check_storage_partials(c); });
}

INSTANTIATE_TEST_SUITE_P(Kernels, CudaAttentionPartials,
                         ::testing::Values(PartialsCase{64, DType::bf16}, PartialsCase{128, DType::f16}),
                         [](const ::testing::TestParamInfo<PartialsCase>& i) {
                           return std::string(to_string(i.param.dtype)) + "_d" +
                                  std::to_string(i.param.head_dim);
                         });

// Hopper's warpgroup MMA in each operand form of the Hopper kernels, through their
// descriptor helpers, at each shape they use, in bf16 and fp16, on integers that 16 bits
// and fp32 hold exactly: a wrong descriptor or swizzle convention fails here, by name,
// before the attention kernels built on them.
constexpr int kProbeM = 64;
struct ProbeShape {
  WgmmaForm form;
  int n, k;  // d [64, n], reduced over k
};
// S = QKᵀ, Sᵀ = K Qᵀ and dP: k is the head dim, n the key or query tile; O += PV, dQ += dS K
// and dK/dV += dSᵀ Q / Pᵀ dO: n is the head dim, k the key or query tile; the one-pass
// backward's dQ = dS K in halves: n the head dim, k its block's 128 keys.
const ProbeShape kProbeShapes[] = {
    {WgmmaForm::shared_k_major, 32, 128},         {WgmmaForm::shared_k_major, 64, 64},
    {WgmmaForm::shared_k_major, 64, 128},         {WgmmaForm::shared_k_major, 128, 64},
    {WgmmaForm::shared_k_major, 128, 128},        {WgmmaForm::registers_mn_major, 64, 64},
    {WgmmaForm::registers_mn_major, 64, 128},     {WgmmaForm::registers_mn_major, 128, 32},
    {WgmmaForm::registers_mn_major, 128, 64},     {WgmmaForm::registers_mn_major, 128, 128},
    {WgmmaForm::shared_mn_major_halves, 64, 128}, {WgmmaForm::shared_mn_major_halves, 128, 128},
};

// One probe product on the GPU: x [64, k] and y ([n, k] K-major, else [k, n]) in, d [64, n]
// out.
std::vector<double> probe_product(const ProbeShape& p, DType dtype, const std::vector<double>& x,
                                  const std::vector<double>& y) {
  const bool k_major = p.form == WgmmaForm::shared_k_major;
  Tensor tx = upload(gpu(), x, {kProbeM, p.k}, dtype),
         ty = upload(gpu(), y, k_major ? std::vector<int64_t>{p.n, p.k} : std::vector<int64_t>{p.k, p.n},
                     dtype);
  Tensor d = gpu().alloc({kProbeM, p.n});
  gpu().synchronize();
  EXPECT_EQ(wgmma_probe(p.form, dtype == DType::bf16, p.n, p.k, tx.raw(), ty.raw(), d.data()), cudaSuccess);
  return download(gpu(), d);
}

// Where a wrong probe read its operands: one operand a selector (a single 1 per row of
// d's reduction) and the other labelled with its row or column index, so that each output
// is the index of the element the hardware read. Lists the first outputs that read the
// wrong element of y, then of x: what to compare with the descriptor's layout.
std::string probe_read_map(const ProbeShape& p, DType dtype) {
  const bool k_major = p.form == WgmmaForm::shared_k_major;
  const int n = p.n, k_size = p.k;
  auto y_at = [&](int c, int k) {
    return k_major ? size_t(c) * size_t(k_size) + size_t(k) : size_t(k) * size_t(n) + size_t(c);
  };
  std::ostringstream out;
  int listed = 0;
  // y read map: x selects k = r + offset for output row r; y holds c, then k.
  for (int offset = 0; offset < k_size && listed < 8; offset += kProbeM) {
    std::vector<double> x(size_t(kProbeM) * k_size, 0.0), y_c(size_t(n) * k_size), y_k(y_c.size());
    for (int r = 0; r < kProbeM && r + offset < k_size; ++r) x[size_t(r) * k_size + size_t(r + offset)] = 1;
    for (int c = 0; c < n; ++c)
      for (int k = 0; k < k_size; ++k) {
        y_c[y_at(c, k)] = c;
        y_k[y_at(c, k)] = k;
      }
    const auto got_c = probe_product(p, dtype, x, y_c), got_k = probe_product(p, dtype, x, y_k);
    for (int r = 0; r < kProbeM && r + offset < k_size && listed < 8; ++r)
      for (int c = 0; c < n && listed < 8; ++c) {
        const size_t i = size_t(r) * n + size_t(c);
        if (got_c[i] != c || got_k[i] != r + offset) {
          out << " y(" << c << "," << r + offset << ") read as y(" << got_c[i] << "," << got_k[i] << ");";
          ++listed;
        }
      }
  }
  // x read map: y selects k = c + offset for output column c; x holds r, then k.
  for (int offset = 0; offset < k_size && listed < 16; offset += n) {
    std::vector<double> y(size_t(n) * k_size, 0.0), x_r(size_t(kProbeM) * k_size), x_k(x_r.size());
    for (int c = 0; c < n && c + offset < k_size; ++c) y[y_at(c, c + offset)] = 1;
    for (int r = 0; r < kProbeM; ++r)
      for (int k = 0; k < k_size; ++k) {
        x_r[size_t(r) * k_size + size_t(k)] = r;
        x_k[size_t(r) * k_size + size_t(k)] = k;
      }
    const auto got_r = probe_product(p, dtype, x_r, y), got_k = probe_product(p, dtype, x_k, y);
    for (int r = 0; r < kProbeM && listed < 16; ++r)
      for (int c = 0; c < n && c + offset < k_size && listed < 16; ++c) {
        const size_t i = size_t(r) * n + size_t(c);
        if (got_r[i] != r || got_k[i] != c + offset) {
          out << " x(" << r << "," << c + offset << ") read as x(" << got_r[i] << "," << got_k[i] << ");";
          ++listed;
        }
      }
  }
  return listed == 0 ? std::string(" every element read where expected") : out.str();
}

TEST(CudaWgmma, ProbeProductsAreExact) {
  if (!wgmma_here()) GTEST_SKIP() << "needs a GPU of compute capability 9.0 and a build for sm_90a";
  for (DType dtype : {DType::bf16, DType::f16})
    for (const ProbeShape& p : kProbeShapes) {
      const bool k_major = p.form == WgmmaForm::shared_k_major;
      const size_t n = size_t(p.n), k_size = size_t(p.k);
      std::vector<double> x(kProbeM * k_size), y(n * k_size);
      for (size_t i = 0; i < x.size(); ++i) x[i] = double(int(i * 7 % 9) - 4);
      for (size_t i = 0; i < y.size(); ++i) y[i] = double(int(i * 5 % 7) - 3);
      // y is [n, k] (K-major) or [k, n] (MN-major); d = x · yᵀ or x · y.
      std::vector<double> want(kProbeM * n, 0.0);
      for (size_t r = 0; r < kProbeM; ++r)
        for (size_t c = 0; c < n; ++c)
          for (size_t k = 0; k < k_size; ++k)
            want[r * n + c] += x[r * k_size + k] * y[k_major ? c * k_size + k : k * n + c];
      const std::vector<double> got = probe_product(p, dtype, x, y);
      if (got == want) continue;
      const char* form = k_major ? "shared K-major operands"
                         : p.form == WgmmaForm::registers_mn_major
                             ? "registers · MN-major B"
                             : "shared K-major A · MN-major B in halves";
      ADD_FAILURE() << form << ", " << to_string(dtype) << ", n = " << p.n << ", k = " << p.k
                    << ": wrong product; operand reads:" << probe_read_map(p, dtype);
    }
}

// A size the probe has no kernel for is refused, not run at another size.
TEST(CudaWgmma, ProbeRefusesOtherSizes) {
  if (!wgmma_here()) GTEST_SKIP() << "needs a GPU of compute capability 9.0 and a build for sm_90a";
  EXPECT_EQ(wgmma_probe(WgmmaForm::registers_mn_major, true, 32, 128, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(wgmma_probe(WgmmaForm::shared_k_major, false, 64, 32, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(wgmma_probe(WgmmaForm::shared_mn_major_halves, true, 128, 64, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
}

// Hopper's TMA copying one tile as the sm90 family's TMA-fed forward does, on integers that bf16
// holds exactly: every element must land where the swizzled layout puts it, rows past the
// tensor's end as zeros. A wrong tensor map or box placement fails here, by name, before
// the kernel built on it.
TEST(CudaTma, ProbeTileHoldsTheTensorsRows) {
  if (!wgmma_here()) GTEST_SKIP() << "needs a GPU of compute capability 9.0 and a build for sm_90a";
  constexpr int64_t kBatch = 2, kRows = 200, kHeads = 3, kTileRows = 128;
  for (int d : {64, 128}) {
    auto value = [&](int64_t b, int64_t r, int64_t h, int64_t c) {
      return double((b * 7 + r * 3 + h * 5 + c) % 201 - 100);
    };
    std::vector<double> src(size_t(kBatch * kRows * kHeads * d));
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t h = 0; h < kHeads; ++h)
          for (int64_t c = 0; c < d; ++c)
            src[size_t(((b * kRows + r) * kHeads + h) * d + c)] = value(b, r, h, c);
    Tensor t = upload(gpu(), src, {kBatch * kRows, kHeads * d}, DType::bf16);
    Tensor tile = gpu().alloc({kTileRows, d});
    gpu().synchronize();
    // A tile inside the tensor, and two that run past a batch's rows: zeros there, not the
    // next batch's rows.
    const struct {
      int head;
      int64_t row;
      int batch;
    } boxes[] = {{2, 0, 0}, {0, 100, 0}, {1, 100, 1}};
    for (const auto& box : boxes) {
      ASSERT_EQ(tma_probe(t.raw(), kBatch, kRows, kHeads, d, box.head, box.row, box.batch, tile.data()),
                cudaSuccess);
      const std::vector<double> got = download(gpu(), tile);
      int wrong = 0;
      std::ostringstream first;
      for (int64_t r = 0; r < kTileRows; ++r)
        for (int64_t c = 0; c < d; ++c) {
          const int64_t row = box.row + r;
          const double want = row < kRows ? value(box.batch, row, box.head, c) : 0.0;
          if (got[size_t(r * d + c)] != want && wrong++ < 4)
            first << " (" << r << "," << c << "): " << got[size_t(r * d + c)] << " not " << want << ";";
        }
      EXPECT_EQ(wrong, 0) << "d = " << d << ", head " << box.head << ", row " << box.row << ", batch "
                          << box.batch << ":" << first.str();
    }
  }
}

// Which kernel serves which head dim: the flash kernels for 64 and 128 in bf16/fp16 on
// sm_80 and later, the SIMT kernel otherwise; auto is the sm90 family where it can run.
TEST(CudaAttentionKernel, FlashServesItsHeadDims) {
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, gpu().gpu()), cudaSuccess);
  gpu_computes_in(DType::bf16);
  const bool tensor_cores = prop.major >= 8;
  with_family(AttentionKernels::sm80, [&] {
    EXPECT_EQ(gpu().attention_kernel(128),
              tensor_cores ? "fwd flash-mma 128x32, bwd flash-mma dk/dv 32x128 dq 64x32" : "simt");
    EXPECT_EQ(gpu().attention_kernel(64).rfind("fwd flash-mma 128x64, bwd flash-mma", 0) == 0, tensor_cores);
    EXPECT_EQ(gpu().attention_kernel(96), "simt");
  });
  if (wgmma_here()) {
    with_family(AttentionKernels::automatic, [&] {
      EXPECT_EQ(gpu().attention_kernel(128),
                "fwd flash-wgmma-tma 128x128, bwd flash-wgmma dk/dv 32x64 dq 64x64");
      EXPECT_EQ(gpu().attention_kernel(64).rfind("fwd flash-wgmma-tma 128x128, bwd flash-wgmma", 0), 0u);
    });
    with_family(AttentionKernels::sm90_onepass, [&] {
      EXPECT_EQ(gpu().attention_kernel(128),
                "fwd flash-wgmma-tma 128x128, bwd flash-wgmma-onepass dk/dv 64x128 dq 64x128");
    });
  } else {
    with_family(AttentionKernels::automatic,
                [&] { EXPECT_EQ(gpu().kernel_family().id, AttentionKernels::sm80); });
    EXPECT_THROW(gpu().configure({gpu().precision(), AttentionKernels::sm90}), InputError);
    EXPECT_THROW(gpu().configure({gpu().precision(), AttentionKernels::sm90_onepass}), InputError);
  }
  gpu_computes_in(DType::f32);
  EXPECT_EQ(gpu().attention_kernel(128), "simt");
}

// Runs `op` on both devices with the same inputs and returns the max relative difference
// of the tensors it names as outputs.
double gpu_vs_host(const std::vector<std::pair<std::vector<double>, std::vector<int64_t>>>& inputs,
                   const std::function<std::vector<Tensor*>(Device&, std::vector<Tensor>&)>& op,
                   DType dtype = DType::f32) {
  std::vector<std::vector<double>> results[2];
  Device* devs[2] = {&gpu(), &host_device()};
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> t;
    t.reserve(inputs.size());
    for (const auto& in : inputs) t.push_back(upload(*devs[i], in.first, in.second, dtype));
    for (Tensor* out : op(*devs[i], t)) results[i].push_back(download(*devs[i], *out));
  }
  double worst = 0;
  for (size_t j = 0; j < results[0].size(); ++j)
    worst = std::max(worst, rel_err(results[0][j], results[1][j]));
  return worst;
}

TEST(CudaGemm, AllTransposesMatchHost) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        gpu_computes_in(t);
        const int64_t m = 37, n = 53, k = 70;
        std::vector<int64_t> sa = ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
        std::vector<int64_t> sb = tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
        const double err = gpu_vs_host({{generated(size_t(m * k), 1), sa},
                                        {generated(size_t(k * n), 2), sb},
                                        {generated(size_t(m * n), 3), {m, n}}},
                                       [&](Device& d, std::vector<Tensor>& x) {
                                         d.gemm(ta, tb, 0.5f, x[0], x[1], 2.0f, x[2]);
                                         return std::vector<Tensor*>{&x[2]};
                                       });
        EXPECT_LT(err, tolerance(t)) << "trans_a " << ta << " trans_b " << tb << " dtype " << to_string(t);
      }
  gpu_computes_in(DType::f32);
}

TEST(CudaElementWise, RowOpsMatchHost) {
  const int64_t rows = 33, cols = 96;
  const auto x = generated(size_t(rows * cols), 1), g = generated(size_t(cols), 2),
             dy = generated(size_t(rows * cols), 3);
  EXPECT_LT(gpu_vs_host({{x, {rows, cols}},
                         {g, {cols}},
                         {dy, {rows, cols}},
                         {x, {rows, cols}},
                         {g, {cols}},
                         {x, {rows, cols}},
                         {g, {rows}}},
                        [](Device& d, std::vector<Tensor>& t) {
                          d.rmsnorm_fwd(t[0], t[1], 1e-5, t[5], t[6]);
                          d.rmsnorm_bwd(t[0], t[1], t[6], t[2], t[3],
                                        t[4]);  // accumulates into x- and g-valued tensors
                          return std::vector<Tensor*>{&t[5], &t[6], &t[3], &t[4]};
                        }),
            1e-5);
  const std::vector<int64_t> pos = {0, 5, 17, 1000, 3, 9, 2, 4, 8, 11, 12};  // 11 positions, 3 sequences
  EXPECT_LT(gpu_vs_host({{x, {rows, cols}}},
                        [&](Device& d, std::vector<Tensor>& t) {
                          d.rope(t[0], 3, pos, 10000.0, false);
                          return std::vector<Tensor*>{&t[0]};
                        }),
            1e-5);
  EXPECT_LT(
      gpu_vs_host(
          {{x, {rows, cols}}, {dy, {rows, cols}}, {x, {rows, cols}}, {x, {rows, cols}}, {x, {rows, cols}}},
          [](Device& d, std::vector<Tensor>& t) {
            d.swiglu_fwd(t[0], t[1], t[2]);
            d.swiglu_bwd(t[0], t[1], t[2], t[3], t[4]);
            return std::vector<Tensor*>{&t[2], &t[3], &t[4]};
          }),
      1e-5);
}

TEST(CudaElementWise, CopiesFillAddDotMatchHost) {
  const auto a = generated(200, 1), b = generated(200, 2);
  EXPECT_LT(gpu_vs_host({{a, {20, 10}}, {b, {20, 10}}, {b, {10, 20}}},
                        [](Device& d, std::vector<Tensor>& t) {
                          d.add(t[0], t[1]);
                          d.copy_rows(t[2], 3, 20, t[0], 1, 10, 7, 5);
                          return std::vector<Tensor*>{&t[0], &t[2]};
                        }),
            1e-6);
  Tensor ga = upload(gpu(), a, {200}), gb = upload(gpu(), b, {200});
  Tensor ha = upload(host_device(), a, {200}), hb = upload(host_device(), b, {200});
  EXPECT_NEAR(gpu().dot(ga, gb), host_device().dot(ha, hb), 1e-9);
  gpu().fill(ga, 2.5f);
  EXPECT_EQ(download(gpu(), ga)[199], 2.5);
}

// The 16-bit conversions of copy, copy_rows, fill and add: the GPU's rounding against the
// host's (core/half_float.hpp, itself tested against independent roundings), bit for bit.
TEST(CudaElementWise, SixteenBitConversionsMatchHost) {
  const auto a = generated(200, 1), b = generated(200, 2);
  for (DType t : {DType::bf16, DType::f16}) {
    auto run = [&](Device& d) {
      Tensor x = upload(d, a, {20, 10}), y = upload(d, b, {20, 10});
      Tensor h = d.alloc({20, 10}, t), part = d.alloc({7, 5}, t);
      d.copy(h, x);                              // fp32 → 16-bit
      d.add(h, y);                               // 16-bit += fp32
      d.copy_rows(part, 0, 5, h, 11, 10, 7, 5);  // 16-bit → 16-bit, strided
      d.fill(x, 0.0f);
      d.copy_rows(x, 3, 10, part, 0, 5, 7, 5);  // 16-bit → fp32
      d.add(y, h);                              // fp32 += 16-bit
      return std::pair{download(d, x), download(d, y)};
    };
    EXPECT_EQ(run(gpu()), run(host_device())) << to_string(t);
  }
}

// The model's operations on 16-bit tensors, as a bf16/fp16 layer stores them: the GPU's
// kernels read and write them directly, the host widens and rounds back; both compute
// in fp32, so they agree to the dtype's rounding.
TEST(CudaElementWise, ModelOperationsOn16BitTensorsMatchHost) {
  const int64_t rows = 33, cols = 96, inner = 40;
  const auto x = generated(size_t(rows * cols), 1), g = generated(size_t(cols), 2),
             dy = generated(size_t(rows * cols), 3), w = generated(size_t(cols * inner), 4);
  const std::vector<int64_t> pos = {0, 5, 17, 1000, 3, 9, 2, 4, 8, 11, 12};
  for (DType t : {DType::bf16, DType::f16}) {
    gpu_computes_in(t);
    const double err = gpu_vs_host(
        {{x, {rows, cols}},
         {g, {cols}},
         {dy, {rows, cols}},
         {x, {rows, cols}},
         {w, {cols, inner}},
         {x, {rows, inner}},
         {x, {rows, cols}},
         {x, {rows, cols}},
         {dy, {rows, cols}},
         {x, {rows, cols}},
         {g, {cols}}},
        [&](Device& d, std::vector<Tensor>& v) {
          // Every result has a tensor of its own, so each is compared, not overwritten;
          // 1/rms is fp32 on every device.
          v.push_back(d.alloc({rows}));
          Tensor& rstd = v.back();
          d.rmsnorm_fwd(v[0], v[1], 1e-5, v[3], rstd);
          d.rmsnorm_bwd(v[0], v[1], rstd, v[2], v[6], v[10]);  // accumulates dx and dg in 16 bits
          d.rope(v[3], 3, pos, 10000.0, false);
          d.gemm(false, false, 0.5f, v[3], v[4], 1.0f, v[5]);  // 16-bit result, accumulated
          d.swiglu_fwd(v[0], v[2], v[7]);
          d.swiglu_bwd(v[0], v[2], v[7], v[8], v[9]);
          return std::vector<Tensor*>{&rstd, &v[3], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]};
        },
        t);
    EXPECT_LT(err, tolerance(t)) << to_string(t);
  }
  gpu_computes_in(DType::f32);
}

// The GPU computing in `dtype` with the tuned layer kernels (run.layer_kernels tuned), its
// kernel family kept; back to the standard set at the end of the scope.
class TunedLayerKernels {
 public:
  explicit TunedLayerKernels(DType dtype) {
    gpu().configure({dtype, gpu().settings().kernels, AttentionPartials::fp32, LayerKernels::tuned});
  }
  ~TunedLayerKernels() { gpu().configure({DType::f32, gpu().settings().kernels}); }
  TunedLayerKernels(const TunedLayerKernels&) = delete;
  TunedLayerKernels& operator=(const TunedLayerKernels&) = delete;
};

// RMSNorm's backward on the tuned set, whose gain gradient is reduced by row chunks in
// parallel: llama-7b's width, rows that fill several chunks and end inside one, widths
// that are not a multiple of the 16-byte vector (4 fp32, 8 bf16/fp16 values) nor of the
// 256-column tile, and more rows than 256 chunks of the smallest size hold; bf16, fp16
// and fp32 against the host, x and dy of different dtypes too. The same call twice gives
// the same bits (no float atomics).
TEST(CudaElementWise, TunedRmsnormGainGradientMatchesHost) {
  struct Shape {
    int64_t rows, cols;
  };
  for (const Shape& sh :
       {Shape{1024, 4096}, Shape{1000, 4100}, Shape{777, 97}, Shape{70001, 12}, Shape{3, 2}})
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      TunedLayerKernels tuned(t);
      const int64_t rows = sh.rows, cols = sh.cols;
      const auto x = generated(size_t(rows * cols), 1), g = generated(size_t(cols), 2),
                 dy = generated(size_t(rows * cols), 3), r = generated(size_t(rows), 4);
      const auto backward = [&](Device& d, std::vector<Tensor>& v) {
        d.rmsnorm_bwd(v[0], v[1], v[2], v[3], v[4], v[5]);  // dx into an x-valued tensor, dg into g's
        return std::vector<Tensor*>{&v[4], &v[5]};
      };
      const std::vector<std::pair<std::vector<double>, std::vector<int64_t>>> inputs = {
          {x, {rows, cols}}, {g, {cols}}, {r, {rows}}, {dy, {rows, cols}}, {x, {rows, cols}}, {g, {cols}}};
      // rstd is fp32 on every device: gpu_vs_host uploads every input in `t`, so it goes
      // as an fp32 tensor holding t's values.
      const double err = gpu_vs_host(
          inputs,
          [&](Device& d, std::vector<Tensor>& v) {
            Tensor rstd = d.alloc({rows});
            d.copy(rstd, v[2]);
            v[2] = rstd;
            return backward(d, v);
          },
          t);
      EXPECT_LT(err, t == DType::f32 ? 1e-5 : tolerance(t))
          << to_string(t) << " rows " << rows << " cols " << cols;
      auto gain_gradient = [&] {
        Tensor tx = upload(gpu(), x, {rows, cols}, t), tg = upload(gpu(), g, {cols}, t),
               tdy = upload(gpu(), dy, {rows, cols}, t), tr = upload(gpu(), r, {rows}),
               tdx = gpu().zeros({rows, cols}, t), tdg = gpu().zeros({cols});
        gpu().rmsnorm_bwd(tx, tg, tr, tdy, tdx, tdg);
        return download(gpu(), tdg);
      };
      EXPECT_EQ(gain_gradient(), gain_gradient()) << to_string(t) << " rows " << rows << " cols " << cols;
    }
  // x in bf16, dy in fp32: the kernel reads each type element by element.
  TunedLayerKernels tuned(DType::bf16);
  const int64_t rows = 600, cols = 72;
  const auto x = generated(size_t(rows * cols), 1), g = generated(size_t(cols), 2),
             dy = generated(size_t(rows * cols), 3), r = generated(size_t(rows), 4);
  std::vector<double> dg[2];
  Device* devs[2] = {&gpu(), &host_device()};
  for (int i = 0; i < 2; ++i) {
    Tensor tx = upload(*devs[i], x, {rows, cols}, DType::bf16), tg = upload(*devs[i], g, {cols}),
           tdy = upload(*devs[i], dy, {rows, cols}), tr = upload(*devs[i], r, {rows}),
           tdx = devs[i]->zeros({rows, cols}), tdg = devs[i]->zeros({cols});
    devs[i]->rmsnorm_bwd(tx, tg, tr, tdy, tdx, tdg);
    dg[i] = download(*devs[i], tdg);
  }
  EXPECT_LT(rel_err(dg[0], dg[1]), 1e-5) << "x bf16, dy fp32";
}

// RoPE on the tuned set: the rotations come from a table computed once per position array
// in fp64 and applied in fp32, in place and fused into a conversion (fp32 in, 16 bits
// out, rounded once), forward and inverse, against the host's fp64 angles. Positions up
// to 131,071, where an fp32 angle would be wrong in the third digit; then an array of the
// same length and other values, and the first again: each call reads its own positions
// (the cache finds arrays by content).
TEST(CudaElementWise, TunedRopeMatchesHost) {
  const int64_t rows = 44, cols = 96;  // 4 sequences of 11 positions, 3 heads of 32
  const auto x = generated(size_t(rows * cols), 1);
  const std::vector<int64_t> far = {0, 5, 17, 1000, 3, 9, 2, 131071, 8, 100000, 12},
                             restart = {0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 4};
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    TunedLayerKernels tuned(t);
    for (const auto* pos : {&far, &restart, &far})
      for (bool inverse : {false, true}) {
        const double err = gpu_vs_host(
            {{x, {rows, cols}}},
            [&](Device& d, std::vector<Tensor>& v) {
              d.rope(v[0], 3, *pos, 10000.0, inverse);
              return std::vector<Tensor*>{&v[0]};
            },
            t);
        EXPECT_LT(err, t == DType::f32 ? 1e-6 : tolerance(t)) << to_string(t) << " in place";
        // Fused, as a packed projection is split and its gradient joined: the last `cols`
        // columns of a [rows, cols + 32] source into columns [32, 32 + cols) of a
        // [rows, cols + 64] destination whose other columns keep their 7.
        std::vector<double> fused[2];
        Device* devs[2] = {&gpu(), &host_device()};
        const auto packed = generated(size_t(rows * (cols + 32)), 2);
        for (int i = 0; i < 2; ++i) {
          Tensor src = upload(*devs[i], packed, {rows, cols + 32}),
                 dst = devs[i]->alloc({rows, cols + 64}, t);
          devs[i]->fill(dst, 7.0f);
          devs[i]->rope_into(dst, 32, src, 32, cols, 3, *pos, 10000.0, inverse);
          fused[i] = download(*devs[i], dst);
        }
        EXPECT_LT(rel_err(fused[0], fused[1]), t == DType::f32 ? 1e-6 : tolerance(t))
            << to_string(t) << " fused";
        EXPECT_EQ(fused[0][0], 7.0) << "a column before the block";
        EXPECT_EQ(fused[0][size_t(cols + 63)], 7.0) << "a column after the block";
      }
  }
}

// SwiGLU on the gate and up projections side by side (one GEMM's [rows, 2f] output) on
// the tuned set, read and written in place, forward and backward, against the host's
// (which splits the halves into copies). Rows past 65,535 take the grid's row loop.
TEST(CudaElementWise, TunedSwigluReadsThePackedHalvesInPlace) {
  for (const int64_t rows : {int64_t(37), int64_t(65537)}) {
    const int64_t f = rows > 1000 ? 3 : 300;
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      TunedLayerKernels tuned(t);
      const double err = gpu_vs_host(
          {{generated(size_t(rows * 2 * f), 1), {rows, 2 * f}},
           {generated(size_t(rows * f), 2), {rows, f}},
           {generated(size_t(rows * f), 3), {rows, f}},
           {generated(size_t(rows * 2 * f), 4), {rows, 2 * f}}},
          [&](Device& d, std::vector<Tensor>& x) {
            d.swiglu_fwd_packed(x[0], x[1]);
            d.swiglu_bwd_packed(x[0], x[2], x[3]);
            return std::vector<Tensor*>{&x[1], &x[3]};
          },
          t);
      EXPECT_LT(err, t == DType::f32 ? 1e-6 : tolerance(t)) << rows << " rows, " << to_string(t);
    }
  }
}

// The residual added in the GEMM's epilogue on the tuned set (cuBLASLt reads C, writes D):
// every transpose, each dtype, against the host's copy-then-accumulate; C is left as it was.
TEST(CudaElementWise, TunedGemmAddsTheResidualInTheEpilogue) {
  const int64_t m = 37, n = 53, k = 70;
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        TunedLayerKernels tuned(t);
        const std::vector<int64_t> sa = ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k},
                                   sb = tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
        const double err = gpu_vs_host(
            {{generated(size_t(m * k), 1), sa},
             {generated(size_t(k * n), 2), sb},
             {generated(size_t(m * n), 3), {m, n}},
             {generated(size_t(m * n), 4), {m, n}}},
            [&](Device& d, std::vector<Tensor>& x) {
              d.gemm_add(ta, tb, 0.5f, x[0], x[1], x[2], x[3]);
              return std::vector<Tensor*>{&x[2], &x[3]};
            },
            t);
        EXPECT_LT(err, tolerance(t)) << "trans_a " << ta << " trans_b " << tb << " dtype " << to_string(t);
      }
}

// The attention kernels on the tuned set read their positions from the device cache: a
// zigzag shard with padding, then the same number of contiguous positions, then the shard
// again, each forward against the host's (a stale array would mask the wrong keys).
TEST(CudaElementWise, TunedPositionsServeTheAttention) {
  TunedLayerKernels tuned(DType::f32);
  const AttnShape s{1, 2, 1, 32, true, kShardRealLen, 64, 256, {}};
  std::vector<int64_t> contiguous(zigzag_shard().size());
  for (size_t i = 0; i < contiguous.size(); ++i) contiguous[i] = int64_t(i);
  for (const std::vector<int64_t>& pos : {zigzag_shard(), contiguous, zigzag_shard()}) {
    const int64_t len = int64_t(pos.size()), width = 2 * 32, kw = 32;
    const auto q = generated(size_t(len * width), 1), k = generated(size_t(len * kw), 2),
               v = generated(size_t(len * kw), 3);
    std::vector<double> o[2];
    Device* devs[2] = {&gpu(), &host_device()};
    for (int i = 0; i < 2; ++i) {
      Tensor tq = upload(*devs[i], q, {len, width}), tk = upload(*devs[i], k, {len, kw}),
             tv = upload(*devs[i], v, {len, kw});
      Tensor out = devs[i]->alloc({len, width}), lse = devs[i]->alloc_lse(1, 2, len);
      devs[i]->attn_init(out, lse);
      const SeqBlock qb{&tq, 0, len, pos.data()}, kb{&tk, 0, len, pos.data()}, vb{&tv, 0, len, pos.data()};
      devs[i]->attn_fwd(s, {qb, kb, vb, &out, &lse});
      o[i] = download(*devs[i], out);
    }
    EXPECT_LT(rel_err(o[0], o[1]), 1e-5) << "positions ending at " << pos.back();
  }
}

// The flash kernels given 16-bit q, k, v and dO (whole tensors, used as they are, and
// row blocks, copied) against the same calls on fp32 tensors holding those values (which
// the device rounds to 16 bits itself): bit for bit.
TEST(CudaFlashOperands, SixteenBitTensorsAreTheirValues) {
  const int B = 2, H = 4, Hkv = 2, D = 64;
  const int64_t L = 300;
  const AttentionProblem a = attention_problem(B, H, Hkv, D, L, true, 1);
  const AttnShape s{B, H, Hkv, D, true, 1 << 30, 16, 16, {}};
  for (DType t : {DType::bf16, DType::f16}) {
    gpu_computes_in(t);
    auto both = [&](const std::vector<double>& v, int64_t width) {
      Tensor h = upload(gpu(), v, {B * L, width}, t);
      Tensor f = gpu().alloc(h.shape());
      gpu().copy(f, h);
      return std::pair{f, h};
    };
    const auto q = both(a.q, H * D), k = both(a.k, Hkv * D), v = both(a.v, Hkv * D),
               dout = both(a.dout, H * D);
    const auto& pos = a.positions;
    auto run = [&](const Tensor& tq, const Tensor& tk, const Tensor& tv, const Tensor& tdo, int64_t q_begin) {
      const SeqBlock qb{&tq, q_begin, L - q_begin, pos.data() + q_begin}, kb{&tk, 0, L, pos.data()},
          vb{&tv, 0, L, pos.data()};
      Tensor o = gpu().alloc({B * L, H * D}), lse = gpu().alloc_lse(B, H, L);
      gpu().attn_init(o, lse);
      gpu().attn_fwd(s, {qb, kb, vb, &o, &lse});
      Tensor delta = gpu().alloc_rows_of_lse(lse);
      gpu().attn_bwd_delta(s, o, tdo, delta);
      Tensor dq = gpu().zeros({B * L, H * D}), dk = gpu().zeros({B * L, Hkv * D}),
             dv = gpu().zeros({B * L, Hkv * D});
      gpu().attn_bwd(s, {qb, kb, vb, &tdo, &lse, &delta, &dq, &dk, &dv});
      return std::vector{download(gpu(), o), download(gpu(), lse), download(gpu(), dq), download(gpu(), dk),
                         download(gpu(), dv)};
    };
    for (int64_t q_begin : {int64_t(0), int64_t(37)}) {
      const auto want = run(q.first, k.first, v.first, dout.first, q_begin);
      const auto got = run(q.second, k.second, v.second, dout.second, q_begin);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(got[i], want[i]) << to_string(t) << " q from row " << q_begin << ", output " << i;
    }
  }
  gpu_computes_in(DType::f32);
}

TEST(CudaElementWise, LseMergeMatchesHost) {
  const AttnShape s{2, 3, 3, 8, false, 1 << 30, 16, 16, {}};
  const int64_t len = 5, rows = 2 * len, width = 3 * 8;
  auto lse = generated(size_t(2 * 3 * len), 3);
  lse[0] = -INFINITY;  // an empty running row takes the block's values
  const auto o = generated(size_t(rows * width), 1), o_b = generated(size_t(rows * width), 2),
             lse_b = generated(size_t(2 * 3 * len), 4);
  // Each device's LSE tensors in its own planes (alloc_lse): the values in the first, the
  // host's second plane (the part fp32 rounds off) zero.
  auto upload_lse = [](Device& d, std::vector<double> values) {
    values.resize(values.size() * size_t(d.lse_planes()), 0.0);
    Tensor t = d.alloc_lse(2, 3, len);
    std::vector<float> f(values.begin(), values.end());
    d.upload(t, f.data());
    return t;
  };
  std::vector<std::vector<double>> merged[2];
  Device* devs[2] = {&gpu(), &host_device()};
  for (int i = 0; i < 2; ++i) {
    Device& d = *devs[i];
    Tensor to = upload(d, o, {rows, width}), tb = upload(d, o_b, {rows, width});
    Tensor tl = upload_lse(d, lse), tlb = upload_lse(d, lse_b);
    d.lse_merge(s, to, tl, tb, tlb);
    merged[i] = {download(d, to), lse_of(d, tl)};
  }
  EXPECT_LT(rel_err(merged[0][0], merged[1][0]), 1e-5) << "o";
  EXPECT_LT(rel_err(merged[0][1], merged[1][1]), 1e-5) << "lse";
}

TEST(CudaMemory, TrackerCountsPeakAndRelease) {
  const int64_t before = gpu().memory().current();
  gpu().memory().reset_peak();
  {
    Tensor a = gpu().alloc({1000});
    Tensor b = gpu().alloc({500});
    EXPECT_EQ(gpu().memory().current() - before, 4096 + 2048);  // rounded to 256 bytes
  }
  EXPECT_EQ(gpu().memory().current(), before);
  EXPECT_EQ(gpu().memory().peak() - before, 4096 + 2048);
  EXPECT_GT(gpu().capacity_bytes(), 0);
}

}  // namespace
