// The layer stack on one rank against the fp64 reference, and checkpointing: none, full
// and selective give the same loss and gradients; selective never re-runs attention.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/backend.hpp"
#include "comm/mpi_comm.hpp"
#include "core/phase_timer.hpp"
#include "device/kokkos_device.hpp"
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
  int attention_calls;
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
  g.attention_calls = model.attention_forward_calls();
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
  // Attention runs once per layer, again per layer under full checkpointing, and never
  // again under selective checkpointing.
  EXPECT_EQ(none.attention_calls, 2);
  EXPECT_EQ(full.attention_calls, 4);
  EXPECT_EQ(selective.attention_calls, 2);
}
