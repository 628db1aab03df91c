// The host device's kernels against the independent fp64 reference: tiled attention
// forward/backward (causal and not, GQA, odd lengths, tiles that do not divide the
// length, arbitrary position sets, blocks merged by LSE), and the element-wise ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "core/half_float.hpp"
#include "core/synthetic_data.hpp"
#include "device/block_cache.hpp"
#include "device/kokkos_device.hpp"
#include "reference/reference.hpp"
#include "tests/unit/device_test_support.hpp"

using namespace minictx;
using namespace minictx::test;

namespace {

struct AttnCase {
  int batch, heads, kv_heads, head_dim;
  int64_t len;
  bool causal;
  int block_q, block_k;
  int64_t stride;  // positions are offset + i·stride (1 = contiguous)
};

class Attention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(Attention, MatchesFp64Reference) {
  const AttnCase c = GetParam();
  const AttentionProblem a =
      attention_problem(c.batch, c.heads, c.kv_heads, c.head_dim, c.len, c.causal, c.stride);
  const auto &q = a.q, &k = a.k, &v = a.v, &dout = a.dout;
  const auto& pos = a.positions;
  const auto& ref = a.ref;

  AttnShape s{c.batch, c.heads, c.kv_heads, c.head_dim, c.causal, 1 << 30, c.block_q, c.block_k, {}};
  const int64_t rows = c.batch * c.len;
  Tensor tq = upload(host_device(), q, {rows, c.heads * c.head_dim}),
         tk = upload(host_device(), k, {rows, c.kv_heads * c.head_dim});
  Tensor tv = upload(host_device(), v, {rows, c.kv_heads * c.head_dim}),
         tdo = upload(host_device(), dout, {rows, c.heads * c.head_dim});
  Tensor o = host_device().alloc({rows, c.heads * c.head_dim}),
         lse = host_device().alloc_lse(c.batch, c.heads, c.len);
  host_device().attn_init(o, lse);
  const SeqBlock qb{&tq, 0, c.len, pos.data()}, kb{&tk, 0, c.len, pos.data()}, vb{&tv, 0, c.len, pos.data()};
  host_device().attn_fwd(s, {qb, kb, vb, &o, &lse});
  EXPECT_LT(rel_err(download(host_device(), o), ref.o), 1e-5);
  EXPECT_LT(rel_err(lse_of(host_device(), lse), ref.lse), 1e-5);

  Tensor delta = host_device().alloc({c.batch, c.heads, c.len});
  host_device().attn_bwd_delta(s, o, tdo, delta);
  Tensor dq = host_device().zeros(tq.shape()), dk = host_device().zeros(tk.shape()),
         dv = host_device().zeros(tv.shape());
  host_device().attn_bwd(s, {qb, kb, vb, &tdo, &lse, &delta, &dq, &dk, &dv});
  EXPECT_LT(rel_err(download(host_device(), dq), ref.dq), 1e-5);
  EXPECT_LT(rel_err(download(host_device(), dk), ref.dk), 1e-5);
  EXPECT_LT(rel_err(download(host_device(), dv), ref.dv), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Attention,
    ::testing::Values(AttnCase{1, 4, 4, 16, 64, true, 16, 16, 1},    // MHA, tiles divide
                      AttnCase{2, 8, 2, 32, 97, true, 16, 24, 1},    // GQA 4:1, odd length, ragged tiles
                      AttnCase{1, 4, 1, 8, 130, false, 32, 64, 1},   // MQA, not causal
                      AttnCase{2, 6, 3, 64, 50, true, 64, 256, 1},   // one tile
                      AttnCase{1, 2, 2, 128, 33, true, 8, 8, 1},     // head dim 128
                      AttnCase{1, 4, 2, 16, 40, true, 16, 16, 3}));  // strided positions (stripe-like)

// Attention over two key blocks merged by LSE equals attention over all keys at once: the
// property every ring backend relies on.
TEST(AttentionMerge, TwoKeyBlocksEqualOne) {
  const int b = 1, h = 4, kvh = 2, d = 16;
  const int64_t len = 48;
  AttnShape s{b, h, kvh, d, true, 1 << 30, 16, 16, {}};
  const auto q = generated(size_t(len * h * d), 1), k = generated(size_t(len * kvh * d), 2);
  const auto v = generated(size_t(len * kvh * d), 3);
  std::vector<int64_t> pos(static_cast<size_t>(len));
  std::iota(pos.begin(), pos.end(), 0);
  Tensor tq = upload(host_device(), q, {len, h * d}), tk = upload(host_device(), k, {len, kvh * d}),
         tv = upload(host_device(), v, {len, kvh * d});
  Tensor whole = host_device().alloc({len, h * d}), whole_lse = host_device().alloc_lse(b, h, len);
  host_device().attn_init(whole, whole_lse);
  host_device().attn_fwd(
      s,
      {{&tq, 0, len, pos.data()}, {&tk, 0, len, pos.data()}, {&tv, 0, len, pos.data()}, &whole, &whole_lse});
  // Second block first: the merge must not depend on order.
  Tensor parts = host_device().alloc({len, h * d}), parts_lse = host_device().alloc_lse(b, h, len);
  host_device().attn_init(parts, parts_lse);
  const int64_t cut = 20;
  host_device().attn_fwd(s, {{&tq, 0, len, pos.data()},
                             {&tk, cut, len - cut, pos.data() + cut},
                             {&tv, cut, len - cut, pos.data() + cut},
                             &parts,
                             &parts_lse});
  host_device().attn_fwd(
      s,
      {{&tq, 0, len, pos.data()}, {&tk, 0, cut, pos.data()}, {&tv, 0, cut, pos.data()}, &parts, &parts_lse});
  EXPECT_LT(rel_err(download(host_device(), parts), download(host_device(), whole)), 1e-6);
  EXPECT_LT(rel_err(lse_of(host_device(), parts_lse), lse_of(host_device(), whole_lse)), 1e-6);
}

// The merge stays finite where the naive log(1 + exp(·)) form overflows.
TEST(AttentionMerge, LseMergeIsOverflowFree) {
  AttnShape s{1, 1, 1, 2, false, 1 << 30, 16, 16, {}};
  // LSE tensors of two planes (Device::lse_planes): the value and the part fp32 rounds off.
  Tensor o = upload(host_device(), {1.0, 2.0}, {1, 2}), lse = upload(host_device(), {200.0, 0.0}, {2, 1, 1});
  Tensor ob = upload(host_device(), {3.0, 4.0}, {1, 2}),
         lseb = upload(host_device(), {-200.0, 0.0}, {2, 1, 1});
  host_device().lse_merge(s, o, lse, ob, lseb);
  EXPECT_NEAR(download(host_device(), lse)[0], 200.0, 1e-4);
  EXPECT_NEAR(download(host_device(), o)[0], 1.0, 1e-6);
  Tensor o2 = upload(host_device(), {1.0, 2.0}, {1, 2}), l2 = upload(host_device(), {0.0, 0.0}, {2, 1, 1});
  Tensor o2b = upload(host_device(), {3.0, 4.0}, {1, 2}), l2b = upload(host_device(), {0.0, 0.0}, {2, 1, 1});
  host_device().lse_merge(s, o2, l2, o2b, l2b);  // equal weights: the mean, log 2
  EXPECT_NEAR(download(host_device(), o2)[0], 2.0, 1e-6);
  EXPECT_NEAR(download(host_device(), l2)[0], std::log(2.0), 1e-6);
}

// attention.partials storage, block by block: the running sums take each block's result
// rounded to the run's dtype (here two blocks of keys, so the forward merges two rounded
// outputs and the backward adds two rounded contributions), and nothing else changes.
TEST(AttentionPartials, StorageRoundsEachBlocksResultBeforeTheSums) {
  const int b = 1, h = 2, d = 16;
  const int64_t len = 48, cut = 20;
  const AttentionProblem a = attention_problem(b, h, h, d, len, true, 1);
  const AttnShape s{b, h, h, d, true, 1 << 30, 16, 16, {}};
  struct Result {
    std::vector<double> o, lse, dq, dk, dv;
  };
  // The two blocks' forward merged, then their backward, on a device of `dtype` and `partials`.
  auto two_blocks = [&](DType dtype, AttentionPartials partials) {
    KokkosDevice dev;
    dev.configure({dtype, AttentionKernels::automatic, partials});
    const int64_t w = h * d;
    Tensor q = upload(dev, a.q, {len, w}), k = upload(dev, a.k, {len, w}), v = upload(dev, a.v, {len, w}),
           dout = upload(dev, a.dout, {len, w});
    const int64_t* pos = a.positions.data();
    Tensor o = dev.alloc({len, w}), lse = dev.alloc_lse(b, h, len);
    dev.attn_init(o, lse);
    const SeqBlock qb{&q, 0, len, pos};
    const std::pair<int64_t, int64_t> blocks[] = {{cut, len - cut}, {0, cut}};  // key rows: begin, length
    for (const auto& [begin, n] : blocks)
      dev.attn_fwd(s, {qb, {&k, begin, n, pos + begin}, {&v, begin, n, pos + begin}, &o, &lse});
    Tensor delta = dev.alloc({b, h, len});
    dev.attn_bwd_delta(s, o, dout, delta);
    Tensor dq = dev.zeros({len, w}), dk = dev.zeros({len, w}), dv = dev.zeros({len, w});
    for (const auto& [begin, n] : blocks)
      dev.attn_bwd(
          s,
          {qb, {&k, begin, n, pos + begin}, {&v, begin, n, pos + begin}, &dout, &lse, &delta, &dq, &dk, &dv});
    return Result{download(dev, o), lse_of(dev, lse), download(dev, dq), download(dev, dk),
                  download(dev, dv)};
  };
  // fp32: the key changes nothing, bit for bit.
  const Result f32 = two_blocks(DType::f32, AttentionPartials::fp32);
  const Result f32_storage = two_blocks(DType::f32, AttentionPartials::storage);
  EXPECT_EQ(f32.o, f32_storage.o);
  EXPECT_EQ(f32.dq, f32_storage.dq);
  EXPECT_EQ(f32.dk, f32_storage.dk);

  // bf16: the host computes in fp32 whatever the dtype, so fp32 partials give fp32's result;
  // storage partials differ from it by about bf16's rounding (2^-9 relative), not more.
  const Result kept = two_blocks(DType::bf16, AttentionPartials::fp32);
  const Result rounded = two_blocks(DType::bf16, AttentionPartials::storage);
  EXPECT_EQ(kept.o, f32.o);
  EXPECT_EQ(rounded.lse, kept.lse);  // the LSE is fp32 in either mode
  for (const auto& [got, exact] : {std::pair{&rounded.o, &kept.o}, std::pair{&rounded.dq, &kept.dq},
                                   std::pair{&rounded.dk, &kept.dk}, std::pair{&rounded.dv, &kept.dv}}) {
    const double err = rel_err(*got, *exact);
    EXPECT_GT(err, 1e-5);
    EXPECT_LT(err, 2 * std::ldexp(1.0, -8));
  }
  // dK of keys [cut, len) is the first backward block's contribution alone (the second
  // block holds the other keys): rounded once, every element is a bf16 number; kept in
  // fp32, few are.
  auto in_bf16 = [](double x) { return float(x) == half_float::from_bf16(half_float::to_bf16(float(x))); };
  int64_t kept_in_bf16 = 0;
  for (int64_t i = cut * h * d; i < len * h * d; ++i) {
    EXPECT_TRUE(in_bf16(rounded.dk[size_t(i)])) << "dk element " << i;
    kept_in_bf16 += in_bf16(kept.dk[size_t(i)]);
  }
  EXPECT_LT(kept_in_bf16, (len - cut) * h * d / 10);
  // accumulator: the running sums are rounded after every block as well, so what the two
  // blocks leave in o, dQ, dK and dV is bf16 numbers, and o differs from storage's.
  const Result running = two_blocks(DType::bf16, AttentionPartials::accumulator);
  for (const auto* sum : {&running.o, &running.dq, &running.dk, &running.dv})
    EXPECT_TRUE(std::all_of(sum->begin(), sum->end(), in_bf16));
  EXPECT_NE(running.o, rounded.o);
}

// The message the CUDA kernel tests give a wrong result names the 8-row and 8-column bands
// that hold its wrong elements: here rows 8–15 of each 64 and columns 64–71 of each 128.
TEST(TestSupport, WhereWrongNamesTheBands) {
  const int64_t rows = 130, cols = 256;
  std::vector<double> want(size_t(rows * cols), 1.0), got = want;
  EXPECT_EQ(where_wrong(got, want, cols, 128, 1e-3), "no element beyond the tolerance");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (r % 64 / 8 == 1 && c % 128 / 8 == 8) got[size_t(r * cols + c)] = 1.5;
  got[5] = 1.0005;  // within the tolerance
  EXPECT_EQ(where_wrong(got, want, cols, 128, 1e-3),
            "256 of 33280 elements wrong; first at row 8, column 64: 1.5 for 1; rows mod 64 by 8s .#......, "
            "columns mod 128 by 8s ........#.......");
}

// Keys at positions >= real_len are padding: masked for every query, causal or not.
TEST(AttentionMask, PaddingKeysAreInvisible) {
  const int64_t len = 10, real = 7;
  AttnShape s{1, 1, 1, 4, false, real, 4, 4, {}};
  const auto q = generated(size_t(len * 4), 1), k = generated(size_t(len * 4), 2),
             v = generated(size_t(len * 4), 3);
  std::vector<int64_t> pos(static_cast<size_t>(len));
  std::iota(pos.begin(), pos.end(), 0);
  Tensor tq = upload(host_device(), q, {len, 4}), tk = upload(host_device(), k, {len, 4}),
         tv = upload(host_device(), v, {len, 4});
  Tensor o = host_device().alloc({len, 4}), lse = host_device().alloc_lse(1, 1, len);
  host_device().attn_init(o, lse);
  host_device().attn_fwd(
      s, {{&tq, 0, len, pos.data()}, {&tk, 0, len, pos.data()}, {&tv, 0, len, pos.data()}, &o, &lse});
  const reference::Problem p = reference_attention(1, 1, 1, 4, real, false);
  const std::vector<double> kr(k.begin(), k.begin() + real * 4), vr(v.begin(), v.begin() + real * 4);
  std::vector<int64_t> kpos(pos.begin(), pos.begin() + real);
  // Reference: the real queries against the real keys only.
  const std::vector<double> qr(q.begin(), q.begin() + real * 4);
  const auto ref = reference::attention_forward(p, qr, kr, vr, kpos);
  const auto got = download(host_device(), o);
  EXPECT_LT(rel_err(std::vector<double>(got.begin(), got.begin() + real * 4), ref.o), 1e-5);
}

TEST(ElementWise, RopeInverseUndoesRope) {
  const auto x = generated(6 * 32, 1);
  Tensor t = upload(host_device(), x, {6, 32});
  const std::vector<int64_t> pos = {0, 5, 17, 1000, 3, 9};
  host_device().rope(t, 2, pos, 10000.0, false);
  EXPECT_GT(rel_err(download(host_device(), t), x), 1e-3);  // it did rotate
  host_device().rope(t, 2, pos, 10000.0, true);
  EXPECT_LT(rel_err(download(host_device(), t), x), 1e-5);
}

TEST(ElementWise, RmsNormAndSwiGluValues) {
  Tensor x = upload(host_device(), {3.0, 4.0}, {1, 2}), g = upload(host_device(), {1.0, 2.0}, {2});
  Tensor y = host_device().alloc({1, 2}), rstd = host_device().alloc({1});
  host_device().rmsnorm_fwd(x, g, 0.0, y, rstd);
  const double r = 1.0 / std::sqrt(12.5);
  EXPECT_NEAR(download(host_device(), y)[0], 3 * r, 1e-6);
  EXPECT_NEAR(download(host_device(), y)[1], 8 * r, 1e-6);
  Tensor a = upload(host_device(), {0.0, 2.0}, {1, 2}), u = upload(host_device(), {5.0, 3.0}, {1, 2}),
         m = host_device().alloc({1, 2});
  host_device().swiglu_fwd(a, u, m);
  EXPECT_NEAR(download(host_device(), m)[0], 0.0, 1e-7);
  EXPECT_NEAR(download(host_device(), m)[1], 2.0 / (1.0 + std::exp(-2.0)) * 3.0, 1e-5);
}

// A sequence cut into uneven chunks whose positions are out of order between chunks (as
// in a zigzag ring): every (query chunk, key chunk) pair is one kernel call, so tiles are
// fully visible, diagonal, fully masked, and rows see no key at all in some calls. Tile
// sizes divide neither the chunks nor each other; the head dim is not a multiple of 8.
TEST(AttentionBlocks, ShiftedChunksMatchFp64) {
  const int b = 2, h = 4, kvh = 2, d = 20;
  const std::vector<int64_t> cut = {0, 29, 69, 100};  // chunk c is rows [cut[c], cut[c+1])
  const std::vector<int64_t> first = {60, 0, 35};     // position of each chunk's first row
  const int64_t len = cut.back();
  std::vector<int64_t> pos(static_cast<size_t>(len));
  for (size_t c = 0; c + 1 < cut.size(); ++c)
    for (int64_t i = cut[c]; i < cut[c + 1]; ++i) pos[size_t(i)] = first[c] + (i - cut[c]) * (c == 2 ? 2 : 1);
  const AttentionProblem a = attention_problem_at(b, h, kvh, d, pos, true);
  const auto &q = a.q, &k = a.k, &v = a.v, &dout = a.dout;
  const reference::AttentionResult& ref = a.ref;

  AttnShape s{b, h, kvh, d, true, 1 << 30, 16, 24, {}};
  const int64_t rows = b * len;
  Tensor tq = upload(host_device(), q, {rows, h * d}), tk = upload(host_device(), k, {rows, kvh * d}),
         tv = upload(host_device(), v, {rows, kvh * d});
  Tensor tdo = upload(host_device(), dout, {rows, h * d});
  Tensor o = host_device().alloc({rows, h * d}), lse = host_device().alloc_lse(b, h, len);
  host_device().attn_init(o, lse);
  auto chunk = [&](const Tensor& t, size_t c) {
    return SeqBlock{&t, cut[c], cut[c + 1] - cut[c], pos.data() + cut[c]};
  };
  for (size_t qc = 0; qc < 3; ++qc)
    for (size_t kc = 0; kc < 3; ++kc)
      host_device().attn_fwd(s, {chunk(tq, qc), chunk(tk, kc), chunk(tv, kc), &o, &lse});
  EXPECT_LT(rel_err(download(host_device(), o), ref.o), 1e-5);
  EXPECT_LT(rel_err(lse_of(host_device(), lse), ref.lse), 1e-5);

  Tensor delta = host_device().alloc({b, h, len});
  host_device().attn_bwd_delta(s, o, tdo, delta);
  Tensor dq = host_device().zeros(tq.shape()), dk = host_device().zeros(tk.shape()),
         dv = host_device().zeros(tv.shape());
  for (size_t qc = 0; qc < 3; ++qc)
    for (size_t kc = 0; kc < 3; ++kc)
      host_device().attn_bwd(
          s, {chunk(tq, qc), chunk(tk, kc), chunk(tv, kc), &tdo, &lse, &delta, &dq, &dk, &dv});
  EXPECT_LT(rel_err(download(host_device(), dq), ref.dq), 1e-5);
  EXPECT_LT(rel_err(download(host_device(), dk), ref.dk), 1e-5);
  EXPECT_LT(rel_err(download(host_device(), dv), ref.dv), 1e-5);
}

// Padding keys under a causal mask, forward and backward: padded keys get no gradient and
// the real rows match attention over the real tokens alone.
TEST(AttentionMask, CausalPaddingForwardAndBackward) {
  const int d = 12;
  const int64_t len = 45, real = 38;
  AttnShape s{1, 2, 1, d, true, real, 16, 16, {}};
  const auto q = generated(size_t(len * 2 * d), 1), k = generated(size_t(len * d), 2);
  const auto v = generated(size_t(len * d), 3);
  auto dout = generated(size_t(len * 2 * d), 4);
  std::fill(dout.begin() + real * 2 * d, dout.end(), 0.0);  // padded queries carry no loss
  std::vector<int64_t> pos(static_cast<size_t>(len));
  std::iota(pos.begin(), pos.end(), 0);
  Tensor tq = upload(host_device(), q, {len, 2 * d}), tk = upload(host_device(), k, {len, d}),
         tv = upload(host_device(), v, {len, d});
  Tensor tdo = upload(host_device(), dout, {len, 2 * d});
  Tensor o = host_device().alloc({len, 2 * d}), lse = host_device().alloc_lse(1, 2, len);
  host_device().attn_init(o, lse);
  const SeqBlock qb{&tq, 0, len, pos.data()}, kb{&tk, 0, len, pos.data()}, vb{&tv, 0, len, pos.data()};
  host_device().attn_fwd(s, {qb, kb, vb, &o, &lse});
  Tensor delta = host_device().alloc({1, 2, len});
  host_device().attn_bwd_delta(s, o, tdo, delta);
  Tensor dq = host_device().zeros(tq.shape()), dk = host_device().zeros(tk.shape()),
         dv = host_device().zeros(tv.shape());
  host_device().attn_bwd(s, {qb, kb, vb, &tdo, &lse, &delta, &dq, &dk, &dv});

  const reference::Problem p = reference_attention(1, 2, 1, d, real, true);
  auto head = [](const std::vector<double>& x, int64_t n, int width) {
    return std::vector<double>(x.begin(), x.begin() + n * width);
  };
  const std::vector<int64_t> real_pos(pos.begin(), pos.begin() + real);
  const auto ref = reference::attention_on(p, head(q, real, 2 * d), head(k, real, d), head(v, real, d),
                                           head(dout, real, 2 * d), real_pos);
  EXPECT_LT(rel_err(head(download(host_device(), o), real, 2 * d), ref.o), 1e-5);
  EXPECT_LT(rel_err(head(download(host_device(), dq), real, 2 * d), ref.dq), 1e-5);
  EXPECT_LT(rel_err(head(download(host_device(), dk), real, d), ref.dk), 1e-5);
  EXPECT_LT(rel_err(head(download(host_device(), dv), real, d), ref.dv), 1e-5);
  const auto dk_all = download(host_device(), dk), dv_all = download(host_device(), dv);
  for (int64_t i = real * d; i < len * d; ++i) {
    EXPECT_EQ(dk_all[size_t(i)], 0.0);
    EXPECT_EQ(dv_all[size_t(i)], 0.0);
  }
}

TEST(Memory, TrackerCountsPeakAndRelease) {
  KokkosDevice dev;
  const int64_t before = dev.memory().current();
  {
    Tensor a = dev.alloc({1000});
    Tensor b = dev.alloc({500});
    EXPECT_EQ(dev.memory().current() - before, 6000);
  }
  EXPECT_EQ(dev.memory().current(), before);
  EXPECT_GE(dev.memory().peak() - before, 6000);
}

TEST(Memory, BlockCacheKeepsBlocksBySizeUpToItsLimit) {
  std::vector<void*> freed;
  BlockCache cache([&](void* p) { freed.push_back(p); }, BlockCache::Memory::device);
  int a = 0, b = 0, c = 0;
  cache.keep(&a, 100, 1000);
  cache.keep(&b, 100, 1000);
  EXPECT_EQ(cache.bytes(), 200);
  EXPECT_EQ(cache.take(50), nullptr);  // only the very size
  void* first = cache.take(100);
  void* second = cache.take(100);
  EXPECT_TRUE((first == &a && second == &b) || (first == &b && second == &a));
  EXPECT_EQ(cache.take(100), nullptr);
  EXPECT_EQ(cache.bytes(), 0);
  cache.keep(&a, 600, 1000);
  cache.keep(&b, 600, 1000);  // 1200 kept would pass the limit: freed at once
  EXPECT_EQ(freed, std::vector<void*>{&b});
  EXPECT_EQ(cache.bytes(), 600);
  cache.keep(&c, 8, 1000);
  cache.release_all();
  EXPECT_EQ(freed.size(), 3u);
  EXPECT_EQ(cache.bytes(), 0);
  EXPECT_EQ(cache.take(600), nullptr);
}

TEST(Memory, FreedTensorMemoryIsReusedBySize) {
  KokkosDevice dev;
  const int64_t before = dev.memory().current();
  void* first = nullptr;
  {
    Tensor t = dev.alloc({1000});
    first = t.raw();
  }
  EXPECT_EQ(dev.memory().current(), before);  // kept memory is not counted as in use
  EXPECT_EQ(dev.kept_bytes(), 4000);
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_TRUE(__asan_address_is_poisoned(first));  // a use after free is still caught
#endif
  {
    Tensor other = dev.alloc({999});  // another size gets memory of its own
    EXPECT_NE(other.raw(), first);
    Tensor same = dev.alloc({10, 100});
    EXPECT_EQ(same.raw(), first);
    EXPECT_EQ(dev.kept_bytes(), 0);
    EXPECT_EQ(dev.memory().current() - before, 4000 + 3996);
  }
  EXPECT_EQ(dev.kept_bytes(), 4000 + 3996);
  dev.release_cached_memory();
  EXPECT_EQ(dev.kept_bytes(), 0);
  Tensor again = dev.alloc({1000});
  EXPECT_EQ(dev.memory().current() - before, 4000);
}

}  // namespace
