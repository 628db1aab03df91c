// Packed documents on a device whose kernels mask by position only: a block run as its
// per-document sub-blocks (device/document_blocks.hpp, the cuda device's path) against the
// host kernel masking the documents itself (the path verified against fp64 on every
// backend), forward and backward, on the blocks the layouts make: whole shards, zigzag's
// two chunks, stripe's strided rows, blocks at an offset in their tensor, padding,
// documents cut by the blocks, one-token documents, batch rows with different packings
// (run row by row), GQA and MHA, causal and not, 16-bit operands.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>

#include "device/document_blocks.hpp"
#include "device/kokkos_device.hpp"
#include "tests/unit/device_test_support.hpp"

using namespace minictx;
using namespace minictx::test;

namespace {

std::vector<int64_t> run(int64_t first, int64_t n, int64_t stride = 1) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = first + i * stride;
  return p;
}

std::vector<int64_t> join(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct DocCase {
  const char* name;
  int batch, heads, kv_heads;
  bool causal;
  std::vector<std::vector<int64_t>> documents;  // one list: every row's packing
  std::vector<int64_t> qpos, kpos;              // ascending; >= 301 is padding
  int64_t q_begin, k_begin;                     // the block's first row in its tensor
  DType dtype;
};

void PrintTo(const DocCase& c, std::ostream* os) { *os << c.name; }

constexpr int64_t kReal = 301;
constexpr int kHeadDim = 8;

const std::vector<int64_t> kCut{37, 1, 100, 63, 1, 99};
const std::vector<int64_t> kOnes{1, 1, 150, 1, 148};

std::vector<DocCase> cases() {
  return {
      {"whole_shard_padded", 2, 4, 2, true, {kCut}, run(0, 304), run(0, 304), 0, 0, DType::f32},
      {"zigzag_chunks",
       2,
       4,
       2,
       true,
       {{30, 20, 200, 51}},
       join(run(38, 38), run(226, 38)),
       join(run(0, 38), run(264, 40)),
       76,
       0,
       DType::f32},
      {"zigzag_diagonal_full",
       1,
       4,
       4,
       false,
       {kOnes},
       join(run(38, 38), run(226, 38)),
       join(run(38, 38), run(226, 38)),
       0,
       76,
       DType::f32},
      {"stripe_rows", 2, 4, 2, true, {kOnes}, run(1, 76, 4), run(2, 76, 4), 0, 0, DType::f32},
      {"stripe_rows_bf16", 2, 4, 1, true, {kCut}, run(3, 76, 4), run(0, 76, 4), 0, 0, DType::bf16},
      {"rows_differ",
       2,
       4,
       4,
       false,
       {{120, 181}, {1, 299, 1}},
       run(150, 154),
       run(0, 150),
       5,
       3,
       DType::f32},
      {"rows_differ_zigzag_fp16",
       3,
       4,
       2,
       true,
       {{120, 181}, {1, 299, 1}, {301}},
       join(run(38, 38), run(226, 38)),
       join(run(0, 38), run(264, 40)),
       2,
       0,
       DType::f16},
      {"one_document", 1, 2, 1, true, {{301}}, run(100, 100), run(0, 150), 0, 0, DType::f32},
  };
}

class DocumentBlocks : public ::testing::TestWithParam<DocCase> {
 protected:
  void SetUp() override {
    const DocCase& c = GetParam();
    std::vector<std::vector<int64_t>> rows = c.documents;
    rows.resize(size_t(c.batch), c.documents.front());
    shape_ = {c.batch,  c.heads,  c.kv_heads,
              kHeadDim, c.causal, kReal,
              8,        16,       std::make_shared<const DocumentBounds>(rows, kReal)};
    q_rows_ = c.q_begin + int64_t(c.qpos.size()) + 3;
    k_rows_ = c.k_begin + int64_t(c.kpos.size()) + 2;
    q_ = make(q_rows_, c.heads, c.dtype, 1);
    k_ = make(k_rows_, c.kv_heads, c.dtype, 2);
    v_ = make(k_rows_, c.kv_heads, c.dtype, 3);
  }

  Tensor make(int64_t rows, int heads, DType dtype, uint64_t id) const {
    const int batch = GetParam().batch;
    return upload(host_device(), generated(size_t(batch * rows * heads * kHeadDim), id),
                  {batch, rows, int64_t(heads) * kHeadDim}, dtype);
  }
  SeqBlock q() const {
    return {&q_, GetParam().q_begin, int64_t(GetParam().qpos.size()), GetParam().qpos.data()};
  }
  SeqBlock k(const Tensor& t) const {
    return {&t, GetParam().k_begin, int64_t(GetParam().kpos.size()), GetParam().kpos.data()};
  }
  // Two copies of a tensor: for the host kernel's mask and for the split.
  std::pair<Tensor, Tensor> twice(const Tensor& t) const {
    Tensor a = host_device().alloc(t.shape()), b = host_device().alloc(t.shape());
    host_device().copy(a, t);
    host_device().copy(b, t);
    return {a, b};
  }
  static void expect_close(const Tensor& split, const Tensor& masked, const char* what) {
    EXPECT_LT(rel_err(download(host_device(), split), download(host_device(), masked)), 2e-6) << what;
  }

  AttnShape shape_;
  int64_t q_rows_ = 0, k_rows_ = 0;
  Tensor q_, k_, v_;
};

TEST_P(DocumentBlocks, SplitMatchesTheKernelsOwnMask) {
  const DocCase& c = GetParam();
  Device& dev = host_device();
  // Running sums as an earlier block leaves them, so that the merge is tested too.
  const Tensor o0 = upload(dev, generated(size_t(c.batch * q_rows_ * c.heads * kHeadDim), 4),
                           {c.batch, q_rows_, int64_t(c.heads) * kHeadDim});
  const int64_t planes = dev.lse_planes();
  const Tensor lse0 = upload(dev, generated(size_t(planes * c.batch * c.heads * q_rows_), 5),
                             {planes * c.batch, c.heads, q_rows_});
  auto [o_mask, o_split] = twice(o0);
  auto [lse_mask, lse_split] = twice(lse0);
  const auto plain_fwd = [&](const AttnShape& s, const AttnFwdBlock& b) {
    ASSERT_EQ(s.documents, nullptr);
    dev.attn_fwd(s, b);
  };
  dev.attn_fwd(shape_, {q(), k(k_), k(v_), &o_mask, &lse_mask});
  attn_fwd_by_documents(dev, shape_, {q(), k(k_), k(v_), &o_split, &lse_split}, plain_fwd);
  expect_close(o_split, o_mask, "o");
  expect_close(lse_split, lse_mask, "lse");
  // The block did change the sums (the comparison is not of two untouched copies).
  EXPECT_GT(rel_err(download(dev, o_mask), download(dev, o0)), 1e-3);

  const Tensor dout = make(q_rows_, c.heads, c.dtype, 6);
  const Tensor delta =
      upload(dev, generated(size_t(c.batch * c.heads * q_rows_), 7), {c.batch, c.heads, q_rows_});
  const Tensor dq0 = make(q_rows_, c.heads, DType::f32, 8), dk0 = make(k_rows_, c.kv_heads, DType::f32, 9);
  auto [dq_mask, dq_split] = twice(dq0);
  auto [dk_mask, dk_split] = twice(dk0);
  auto [dv_mask, dv_split] = twice(dk0);
  const auto plain_bwd = [&](const AttnShape& s, const AttnBwdBlock& b) {
    ASSERT_EQ(s.documents, nullptr);
    dev.attn_bwd(s, b);
  };
  dev.attn_bwd(shape_, {q(), k(k_), k(v_), &dout, &lse_mask, &delta, &dq_mask, &dk_mask, &dv_mask});
  attn_bwd_by_documents(
      dev, shape_, {q(), k(k_), k(v_), &dout, &lse_mask, &delta, &dq_split, &dk_split, &dv_split}, plain_bwd);
  expect_close(dq_split, dq_mask, "dq");
  expect_close(dk_split, dk_mask, "dk");
  expect_close(dv_split, dv_mask, "dv");
  EXPECT_GT(rel_err(download(dev, dk_mask), download(dev, dk0)), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Layouts, DocumentBlocks, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Documents that never meet in a block call the kernel for nothing.
TEST(DocumentBlocksCalls, OnlyDocumentsBothBlocksHoldAndCausalityLets) {
  Device& dev = host_device();
  const std::vector<int64_t> qpos = run(100, 60), kpos = run(0, 150);
  const AttnShape s{
      1,
      1,
      1,
      kHeadDim,
      true,
      kReal,
      8,
      16,
      std::make_shared<const DocumentBounds>(std::vector<std::vector<int64_t>>{{90, 20, 30, 161}}, kReal)};
  Tensor q = dev.zeros({1, 60, kHeadDim}), k = dev.zeros({1, 150, kHeadDim}),
         o = dev.zeros({1, 60, kHeadDim}), lse = dev.zeros({dev.lse_planes(), 1, 60});
  std::vector<std::pair<int64_t, int64_t>> calls;  // (first query, first key) positions
  attn_fwd_by_documents(
      dev, s, {{&q, 0, 60, qpos.data()}, {&k, 0, 150, kpos.data()}, {&k, 0, 150, kpos.data()}, &o, &lse},
      [&](const AttnShape&, const AttnFwdBlock& b) {
        calls.emplace_back(b.q.positions[0], b.k.positions[0]);
        EXPECT_EQ(b.q.begin, b.q.positions[0] - 100);
        EXPECT_EQ(b.k.len, b.v.len);
      });
  // Queries 100..159 lie in documents [90, 110), [110, 140), [140, 301); the keys reach 149.
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{100, 90}, {110, 110}, {140, 140}}));
}

}  // namespace
