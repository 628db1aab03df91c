// The layer stack on one rank against the fp64 reference, and checkpointing: none, full,
// selective and selective_half give the same loss and gradients; selective never re-runs
// attention, selective_half for half the rows; HFU counts what each recomputes.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/backend.hpp"
#include "comm/mpi_comm.hpp"
#include "core/phase_timer.hpp"
#include "device/kokkos_device.hpp"
#include "model/flops.hpp"
#include "model/layer_stack.hpp"
#include "reference/reference.hpp"

using namespace minictx;

namespace {

RunConfig tiny(int64_t len, bool causal) {
  RunConfig c;
  c.model.layers = 2;
  c.model.d_model = 64;
  c.model.heads = 4;
  c.model.kv_heads = 2;
  c.model.head_dim = 16;
  c.model.ffn_hidden = 96;
  c.sequence.length = len;
  c.sequence.batch = 2;
  c.attention.causal = causal;
  c.attention.block_q = 16;
  c.attention.block_k = 32;
  c.run.seed = 77;
  return c;
}

struct Grads {
  double loss;
  std::vector<float> y, dx, dwq;
  int64_t attention_rows;
};

Grads run(const RunConfig& cfg) {
  static KokkosDevice dev;
  auto world = MpiComm::world(1);
  auto backend = find_backend("local").create(*world, dev, cfg);
  PhaseTimer timer;
  LayerStack model(cfg, dev, *world, *backend, timer);
  Grads g;
  g.loss = model.step(true);
  auto get = [&](const Tensor& t) {
    std::vector<float> h(size_t(t.numel()));
    dev.download(t, h.data());
    return h;
  };
  g.y = get(model.output());
  g.dx = get(model.input_grad());
  g.dwq = get(model.weight_grad(0, Weight::wq));
  g.attention_rows = model.attention_query_rows();
  return g;
}

double rel_err(const std::vector<float>& a, const std::vector<double>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::fabs(a[i] - b[i]));
    ref = std::max(ref, std::fabs(b[i]));
  }
  return err / ref;
}

}  // namespace

TEST(LayerStack, MatchesFp64ReferenceCausalAndNot) {
  for (bool causal : {true, false}) {
    const RunConfig cfg = tiny(45, causal);
    const Grads g = run(cfg);
    reference::Problem p;
    p.batch = 2;
    p.seq_len = 45;
    p.layers = 2;
    p.d_model = 64;
    p.heads = 4;
    p.kv_heads = 2;
    p.head_dim = 16;
    p.ffn_hidden = 96;
    p.causal = causal;
    p.seed = 77;
    const auto ref = reference::model(p);
    EXPECT_NEAR(g.loss, ref.loss, 1e-5 * std::fabs(ref.loss));
    EXPECT_LT(rel_err(g.y, ref.y), 1e-5);
    EXPECT_LT(rel_err(g.dx, ref.dx), 1e-5);
    EXPECT_LT(rel_err(g.dwq, ref.weight_grads[0][size_t(Weight::wq)]), 1e-5);
  }
}

TEST(LayerStack, CheckpointingChangesNeitherLossNorGradients) {
  RunConfig cfg = tiny(40, true);
  const Grads none = run(cfg);
  cfg.run.checkpointing = Checkpointing::full;
  const Grads full = run(cfg);
  cfg.run.checkpointing = Checkpointing::selective;
  const Grads selective = run(cfg);
  // Recompute repeats the same arithmetic in the same order: results are identical.
  EXPECT_EQ(none.loss, full.loss);
  EXPECT_EQ(none.loss, selective.loss);
  EXPECT_EQ(none.dx, full.dx);
  EXPECT_EQ(none.dx, selective.dx);
  EXPECT_EQ(none.dwq, full.dwq);
  EXPECT_EQ(none.dwq, selective.dwq);
  // Attention runs over every row once per layer (2 layers, batch 2, 40 rows), again under
  // full checkpointing, and never again under selective checkpointing.
  EXPECT_EQ(none.attention_rows, 2 * 80);
  EXPECT_EQ(full.attention_rows, 4 * 80);
  EXPECT_EQ(selective.attention_rows, 2 * 80);
}

// selective_half recomputes the attention of the first half of the rows only (batch 2 ×
// 20 per layer) and keeps the rest. Its recompute runs the kernel on fewer rows, so its
// GEMMs have other shapes: equal to rounding, not bit for bit.
TEST(LayerStack, HalfRecomputeChangesNeitherLossNorGradients) {
  for (bool causal : {true, false}) {
    RunConfig cfg = tiny(41, causal);
    const Grads none = run(cfg);
    cfg.run.checkpointing = Checkpointing::selective_half;
    const Grads half = run(cfg);
    EXPECT_NEAR(half.loss, none.loss, 1e-6 * std::fabs(none.loss));
    std::vector<double> dx(none.dx.begin(), none.dx.end()), dwq(none.dwq.begin(), none.dwq.end());
    EXPECT_LT(rel_err(half.dx, dx), 1e-6);
    EXPECT_LT(rel_err(half.dwq, dwq), 1e-6);
    EXPECT_EQ(half.attention_rows, 2 * 82 + 2 * 2 * 20);
  }
}

// The loss scale multiplies the backward's seed and so every gradient, exactly (a power of
// two, in fp32), and leaves the loss as it is; automatic is 65536 in fp16 alone.
TEST(LayerStack, LossScaleScalesTheGradientsExactly) {
  RunConfig cfg = tiny(45, true);
  const Grads plain = run(cfg);
  cfg.run.loss_scale = 1024;
  const Grads scaled = run(cfg);
  EXPECT_EQ(scaled.loss, plain.loss);
  EXPECT_EQ(scaled.y, plain.y);
  ASSERT_EQ(scaled.dwq.size(), plain.dwq.size());
  for (size_t i = 0; i < plain.dwq.size(); ++i) ASSERT_EQ(scaled.dwq[i], 1024 * plain.dwq[i]) << i;
  for (size_t i = 0; i < plain.dx.size(); ++i) ASSERT_EQ(scaled.dx[i], 1024 * plain.dx[i]) << i;
  RunConfig automatic;
  EXPECT_EQ(automatic.loss_scale(), 1.0);
  automatic.run.dtype = DType::bf16;
  EXPECT_EQ(automatic.loss_scale(), 1.0);
  automatic.run.dtype = DType::f16;
  EXPECT_EQ(automatic.loss_scale(), 65536.0);
  automatic.run.loss_scale = 8;
  EXPECT_EQ(automatic.loss_scale(), 8.0);
}

// The MPT counts: model = 3·(dense + attention) whatever the policy; the hardware count
// adds the recompute (dense once, attention all, none or half of it; causal-exact: a
// quarter, since the first half's queries see only the first half's keys).
TEST(StepFlops, HardwareCountsWhatCheckpointingRecomputes) {
  RunConfig cfg = tiny(4096, true);
  cfg.run.mode = Mode::model;
  const StepFlops none = step_flops(cfg);
  const double attn = 2 * (none.model - none.model_causal) / 3, dense = none.model / 3 - attn;
  ASSERT_GT(attn, 0);
  ASSERT_GT(dense, 0);
  EXPECT_DOUBLE_EQ(none.hardware, none.model);
  const struct {
    Checkpointing ckpt;
    double attn_mult, attn_causal_mult;
  } cases[] = {{Checkpointing::full, 4, 4},
               {Checkpointing::selective, 3, 3},
               {Checkpointing::selective_half, 3.5, 3.25}};
  for (const auto& c : cases) {
    cfg.run.checkpointing = c.ckpt;
    const StepFlops f = step_flops(cfg);
    EXPECT_DOUBLE_EQ(f.model, none.model) << to_string(c.ckpt);
    EXPECT_NEAR(f.hardware, 4 * dense + c.attn_mult * attn, 1e-12 * f.hardware) << to_string(c.ckpt);
    EXPECT_NEAR(f.hardware_causal, 4 * dense + c.attn_causal_mult * attn / 2, 1e-12 * f.hardware)
        << to_string(c.ckpt);
  }
  cfg.attention.causal = false;
  cfg.run.checkpointing = Checkpointing::selective_half;
  const StepFlops full_mask = step_flops(cfg);
  EXPECT_DOUBLE_EQ(full_mask.hardware_causal, full_mask.hardware);
}
