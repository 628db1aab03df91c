// Packed documents (sequence.documents) on one rank: the document bounds and the ring's
// skipping of blocks whose documents never meet, the host kernel and RoPE restarts against
// the fp64 reference, one document as long as the sequence giving bitwise the result of
// none, and the FLOP convention. Every backend and layout is checked under mpiexec
// (tests/mpi/documents.cmake).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/backend.hpp"
#include "backends/engine/ring_blocks.hpp"
#include "backends/registry.hpp"
#include "comm/mpi_comm.hpp"
#include "core/error.hpp"
#include "core/phase_timer.hpp"
#include "device/kokkos_device.hpp"
#include "driver/verification.hpp"
#include "model/attention_step.hpp"
#include "model/flops.hpp"
#include "model/layer_stack.hpp"
#include "reference/reference.hpp"

using namespace minictx;

namespace {

KokkosDevice& device() {
  static KokkosDevice dev;
  return dev;
}

RunConfig small(int64_t len, int batch, Mode mode) {
  RunConfig c;
  c.run.mode = mode;
  c.model = {"custom", 1, 32, 4, 2, 8, 48};  // layers, d_model, heads, kv_heads, head_dim, ffn_hidden
  c.sequence.length = len;
  c.sequence.batch = batch;
  c.attention.block_q = 8;  // tiles that documents cut inside and tiles they mask whole
  c.attention.block_k = 16;
  c.run.seed = 5;
  return c;
}

std::vector<float> get(const Tensor& t) {
  std::vector<float> h(size_t(t.numel()));
  device().download(t, h.data());
  return h;
}

// Attention mode on the local backend: o, lse, dq, dk, dv.
std::vector<std::vector<float>> attention(const RunConfig& cfg) {
  auto world = MpiComm::world(1);
  auto backend = find_backend("local").create(*world, device(), cfg);
  PhaseTimer timer;
  AttentionStep step(cfg, device(), *backend, timer);
  step.step(true);
  return {get(step.o()), get(step.lse()), get(step.dq()), get(step.dk()), get(step.dv())};
}

// Model mode on the local backend: loss, y, dx and dwq.
std::vector<std::vector<float>> model(const RunConfig& cfg) {
  auto world = MpiComm::world(1);
  auto backend = find_backend("local").create(*world, device(), cfg);
  PhaseTimer timer;
  LayerStack stack(cfg, device(), *world, *backend, timer);
  const float loss = float(stack.step(true));
  return {{loss}, get(stack.output()), get(stack.input_grad()), get(stack.weight_grad(0, Weight::wq))};
}

// max |got − ref| / max |ref|, as verify measures it.
double rel_err(const std::vector<float>& got, const std::vector<double>& ref) {
  return compare_tensor("", {got.begin(), got.end()}, ref, 0).max_rel_err;
}

DocumentPacking given(std::vector<std::vector<int64_t>> lengths) {
  DocumentPacking p;
  p.per_row = lengths.size() > 1;
  p.lengths = std::move(lengths);
  return p;
}

}  // namespace

TEST(DocumentBounds, KeysOffsetsAndPadding) {
  const DocumentBounds d({{3, 1, 4}, {8}}, 8);
  EXPECT_EQ(d.keys(0, 5, true), (std::pair<int64_t, int64_t>{4, 6}));
  EXPECT_EQ(d.keys(0, 5, false), (std::pair<int64_t, int64_t>{4, 8}));
  EXPECT_EQ(d.keys(0, 3, false), (std::pair<int64_t, int64_t>{3, 4}));  // a one-token document
  EXPECT_EQ(d.keys(1, 5, false), (std::pair<int64_t, int64_t>{0, 8}));
  EXPECT_EQ(d.keys(0, 9, false), (std::pair<int64_t, int64_t>{0, 0}));  // padding: no document
  EXPECT_EQ(d.offsets({0, 2, 3, 4, 7, 9}), (std::vector<int64_t>{0, 2, 0, 0, 3, 9, 0, 2, 3, 4, 7, 9}));
}

// block_visible is exactly "some pair of the block's active rows is visible", so a block
// it refuses is one the masks leave empty; and such blocks occur (they are skipped).
TEST(DocumentBounds, RingSkipsExactlyTheBlocksDocumentsMaskWhole) {
  int skipped = 0;
  for (LayoutKind kind : {LayoutKind::contiguous, LayoutKind::zigzag, LayoutKind::stripe})
    for (int P : {2, 3, 4, 8})
      for (bool causal : {true, false}) {
        const int64_t len = 61;  // every layout pads it
        const SequenceLayout layout(kind, len, P);
        AttnShape s;
        s.causal = causal;
        s.real_len = len;
        s.batch = 2;
        s.documents = std::make_shared<const DocumentBounds>(
            std::vector<std::vector<int64_t>>{{5, 1, 30, 1, 24}, {61}}, len);
        const DocumentBounds& d = *s.documents;
        for (int r = 0; r < P; ++r)
          for (int j = 0; j < P; ++j) {
            const auto qpos = layout.outer_positions(r), kpos = layout.outer_positions(j);
            const int64_t rows = layout.outer_len();
            const ActiveRows a = active_rows(kind, causal, r, j, rows, rows);
            if (a.empty()) continue;
            bool any = false;
            for (int b = 0; b < 2; ++b)
              for (int64_t i = a.q.begin; i < a.q.begin + a.q.len; ++i)
                for (int64_t m = a.k.begin; m < a.k.begin + a.k.len; ++m) {
                  const auto [first, end] = d.keys(b, qpos[size_t(i)], causal);
                  any = any || (kpos[size_t(m)] >= first && kpos[size_t(m)] < end);
                }
            // Batch row 1 is one document: a block is skipped only where row 0's documents
            // and row 1's causality both leave it empty.
            EXPECT_EQ(block_visible(s, qpos.data(), a.q, kpos.data(), a.k), any)
                << "kind " << int(kind) << " P " << P << " r " << r << " j " << j;
            AttnShape one_row = s;
            one_row.batch = 1;
            one_row.documents = std::make_shared<const DocumentBounds>(
                std::vector<std::vector<int64_t>>{{5, 1, 30, 1, 24}}, len);
            skipped += !block_visible(one_row, qpos.data(), a.q, kpos.data(), a.k);
          }
      }
  EXPECT_GT(skipped, 0) << "no block was masked whole: the skip is untested";
}

TEST(Documents, HostKernelMatchesFp64ReferenceAttentionMode) {
  for (bool causal : {true, false}) {
    RunConfig cfg = small(70, 2, Mode::attention);
    cfg.attention.causal = causal;
    cfg.sequence.documents = given({{9, 1, 40, 1, 19}, {1, 69}});
    const auto got = attention(cfg);
    const auto ref = reference::attention(reference_problem(cfg));
    EXPECT_LT(rel_err(got[0], ref.o), 1e-5) << causal;
    EXPECT_LT(rel_err(got[2], ref.dq), 1e-5) << causal;
    EXPECT_LT(rel_err(got[3], ref.dk), 1e-5) << causal;
    EXPECT_LT(rel_err(got[4], ref.dv), 1e-5) << causal;
    reference::Problem whole = reference_problem(cfg);  // the masks change the result
    whole.documents.clear();
    EXPECT_GT(rel_err(got[0], reference::attention(whole).o), 1e-2) << causal;
  }
}

// Model mode adds RoPE, whose positions restart at each document.
TEST(Documents, LayerStackMatchesFp64ReferenceWithRopeRestarts) {
  RunConfig cfg = small(50, 2, Mode::model);
  cfg.sequence.documents.min_length = 3;
  cfg.sequence.documents.max_length = 20;
  cfg.sequence.documents.seed = 11;
  const auto got = model(cfg);
  const auto ref = reference::model(reference_problem(cfg));
  EXPECT_NEAR(got[0][0], ref.loss, 1e-5 * std::fabs(ref.loss));
  EXPECT_LT(rel_err(got[1], ref.y), 1e-5);
  EXPECT_LT(rel_err(got[2], ref.dx), 1e-5);
  EXPECT_LT(rel_err(got[3], ref.weight_grads[0][size_t(Weight::wq)]), 1e-5);
  // The reference with the RoPE positions of one document differs: the restarts count.
  reference::Problem whole = reference_problem(cfg);
  whole.documents.clear();
  EXPECT_GT(std::fabs(reference::model(whole).loss - ref.loss), 1e-6 * std::fabs(ref.loss));
}

TEST(Documents, OneDocumentAsLongAsTheSequenceIsBitwiseNone) {
  for (Mode mode : {Mode::attention, Mode::model}) {
    const RunConfig none = small(45, 2, mode);
    RunConfig one = none;
    one.sequence.documents = given({{45}});
    EXPECT_EQ(mode == Mode::model ? model(one) : attention(one),
              mode == Mode::model ? model(none) : attention(none))
        << to_string(mode);
  }
}

TEST(Documents, GeneratedLengthsFillEveryRowFromTheSeed) {
  DocumentPacking p;
  p.min_length = 4;
  p.max_length = 9;
  p.seed = 3;
  const auto rows = document_lengths(p, 100, 3);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) {
    int64_t sum = 0;
    for (size_t i = 0; i < row.size(); ++i) {
      sum += row[i];
      EXPECT_LE(row[i], 9);
      EXPECT_TRUE(row[i] >= 4 || i + 1 == row.size()) << row[i];  // the last one takes what is left
    }
    EXPECT_EQ(sum, 100);
  }
  EXPECT_NE(rows[0], rows[1]);
  EXPECT_EQ(document_lengths(p, 100, 3), rows);
}

// The long-tailed form: lengths in [min, max] (the last what is left), most of them short,
// a few long ones carrying a large share of the tokens, the same for the same seed, and the deck's
// spelling reading back to the same packing.
TEST(Documents, ParetoLengthsHaveAHeavyTail) {
  const DocumentPacking p = packing_from_text("{pareto: [16, 65536], alpha: 1, seed: 7}", "test");
  EXPECT_EQ(to_text(p), "{pareto: [16, 65536], alpha: 1, seed: 7}");
  EXPECT_EQ(to_text(packing_from_text("{pareto: [2, 9], alpha: +0.75, seed: 1}", "test")),
            "{pareto: [2, 9], alpha: 0.75, seed: 1}");
  const auto rows = document_lengths(p, 1 << 20, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(document_lengths(p, 1 << 20, 2), rows);
  for (const auto& row : rows) {
    ASSERT_GT(row.size(), 100u);
    int64_t sum = 0, short_ones = 0, long_ones = 0, in_long = 0;
    for (size_t i = 0; i < row.size(); ++i) {
      sum += row[i];
      EXPECT_LE(row[i], 65536);
      EXPECT_TRUE(row[i] >= 16 || i + 1 == row.size()) << row[i];
      short_ones += row[i] < 64;
      if (row[i] >= 1024) long_ones += 1, in_long += row[i];
    }
    EXPECT_EQ(sum, 1 << 20);
    EXPECT_GT(short_ones, int64_t(row.size()) / 2) << "most documents are short";
    EXPECT_LT(long_ones, int64_t(row.size()) / 20) << "few documents are long";
    EXPECT_GT(in_long, sum * 2 / 5) << "and they hold a large share of the tokens";
  }
  for (const char* bad : {"{pareto: [2, 9], seed: 1}", "{pareto: [2, 9], alpha: 0, seed: 1}",
                          "{pareto: [2, 9], alpha: -1, seed: 1}", "{pareto: [2, 9], alpha: x, seed: 1}",
                          "{pareto: [9, 2], alpha: 1, seed: 1}", "{uniform: [2, 9], alpha: 1, seed: 1}"})
    EXPECT_THROW(packing_from_text(bad, "test"), InputError) << bad;
}

// FLOPs count the pairs the document masks leave: Σ length² over documents and rows,
// halved when causal; one document as long as the sequence counts as none.
TEST(Documents, FlopsCountThePairsTheMasksLeave) {
  for (Mode mode : {Mode::attention, Mode::model}) {
    RunConfig none = small(100, 2, mode);
    RunConfig one = none, packed = none;
    one.sequence.documents = given({{100}});
    packed.sequence.documents = given({{50, 30, 20}, {1, 99}});
    EXPECT_EQ(attention_pairs(none), 2 * 100.0 * 100);
    EXPECT_EQ(attention_pairs(packed), 2500 + 900 + 400 + 1 + 99 * 99);
    EXPECT_EQ(step_flops(one).model, step_flops(none).model);
    const double attn_share = (attention_pairs(none) - attention_pairs(packed)) / attention_pairs(none);
    if (mode == Mode::attention) {
      EXPECT_DOUBLE_EQ(step_flops(packed).model, step_flops(none).model * (1 - attn_share));
      EXPECT_DOUBLE_EQ(attention_fwd_flops(packed), 4.0 * attention_pairs(packed) * 4 * 8 / 2);
    } else {
      const double attn = 3 * packed.model.layers * 4.0 * packed.model.d_model;
      EXPECT_DOUBLE_EQ(step_flops(none).model - step_flops(packed).model,
                       attn * (attention_pairs(none) - attention_pairs(packed)));
    }
  }
}
