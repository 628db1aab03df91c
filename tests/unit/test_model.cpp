// The layer stack on one rank against the fp64 reference, and checkpointing: none, full,
// selective and selective_half give the same loss and gradients; selective never re-runs
// attention, selective_half for half the rows; HFU counts what each recomputes; the loss
// scale and its dynamic halving; the weight gradients' precision.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "comm/mpi_comm.hpp"
#include "core/error.hpp"
#include "core/half_float.hpp"
#include "core/phase_names.hpp"
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

// tiny(45, causal)'s problem for the fp64 reference.
reference::Problem tiny_problem(bool causal) {
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
  return p;
}

struct Grads {
  double loss;
  std::vector<float> y, dx, dwq;
  std::vector<std::vector<float>> dw;  // layer 0's, by Weight
  int64_t attention_rows;
  DType grad_dtype;
  double scale;
  int64_t overflows;
  std::vector<PhaseTimer::Span> spans;  // the step's phase scopes
};

Grads run(const RunConfig& cfg) {
  static KokkosDevice dev;
  dev.configure(DeviceSettings::of(cfg));
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
  for (int w = 0; w < int(Weight::count); ++w) g.dw.push_back(get(model.weight_grad(0, Weight(w))));
  g.attention_rows = model.attention_query_rows();
  g.grad_dtype = model.weight_grad(0, Weight::wq).dtype();
  g.scale = model.grad_scale();
  g.overflows = model.loss_scaler().overflows();
  timer.settle();
  g.spans = timer.settled();
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
    const auto ref = reference::model(tiny_problem(causal));
    EXPECT_NEAR(g.loss, ref.loss, 1e-5 * std::fabs(ref.loss));
    EXPECT_LT(rel_err(g.y, ref.y), 1e-5);
    EXPECT_LT(rel_err(g.dx, ref.dx), 1e-5);
    EXPECT_LT(rel_err(g.dwq, ref.weight_grads[0][size_t(Weight::wq)]), 1e-5);
  }
}

// The LM head computes its logits a chunk of rows at a time: the chunk changes neither the
// loss nor the gradients (against fp64), and a forward's memory holds one chunk's logits,
// not all of them.
TEST(LayerStack, LmHeadChunksChangeTheResultsNotAndBoundTheLogits) {
  RunConfig cfg = tiny(45, true);
  cfg.model.vocab = 3000;
  reference::Problem p = tiny_problem(true);
  p.vocab = 3000;
  const auto ref = reference::model(p);
  static KokkosDevice dev;
  auto peak_of = [&](int64_t chunk) {
    cfg.run.loss_chunk = chunk;
    auto world = MpiComm::world(1);
    auto backend = find_backend("local").create(*world, dev, cfg);
    PhaseTimer timer;
    LayerStack model(cfg, dev, *world, *backend, timer);
    EXPECT_NEAR(model.step(true), ref.loss, 1e-5 * ref.loss) << "chunk " << chunk;
    std::vector<float> dw(size_t(model.head_grad().numel())), dx(size_t(model.input_grad().numel()));
    dev.download(model.head_grad(), dw.data());
    dev.download(model.input_grad(), dx.data());
    EXPECT_LT(rel_err(dw, ref.head_grad), 1e-5) << "chunk " << chunk;
    EXPECT_LT(rel_err(dx, ref.dx), 1e-5) << "chunk " << chunk;
    dev.memory().reset_peak();
    const int64_t between = dev.memory().current();
    model.step(false);
    return dev.memory().peak() - between;
  };
  // What a forward adds to the memory held between steps: less than the 90 rows' logits
  // with chunks (automatic: ceil(3000 / 64) = 47 chunks of 2 rows), more in one chunk.
  const int64_t logits = 90 * 3000 * 4;
  EXPECT_LT(peak_of(0), logits);
  EXPECT_LT(peak_of(7), logits);
  EXPECT_GE(peak_of(90), logits);
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
// two, in fp32), and leaves the loss as it is; dynamic starts at initial_loss_scale in fp16
// alone.
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
  RunConfig dynamic;
  EXPECT_EQ(dynamic.loss_scale(), 1.0);
  EXPECT_FALSE(dynamic.dynamic_loss_scale());
  EXPECT_FALSE(dynamic.checks_gradients());
  dynamic.run.dtype = DType::bf16;
  EXPECT_EQ(dynamic.loss_scale(), 1.0);
  EXPECT_FALSE(dynamic.checks_gradients());
  dynamic.run.dtype = DType::f16;
  EXPECT_EQ(dynamic.loss_scale(), 65536.0);
  EXPECT_TRUE(dynamic.dynamic_loss_scale());
  EXPECT_TRUE(dynamic.checks_gradients());
  dynamic.run.initial_loss_scale = 1024;
  EXPECT_EQ(dynamic.loss_scale(), 1024.0);
  dynamic.run.loss_scale = 8;
  EXPECT_EQ(dynamic.loss_scale(), 8.0);
  EXPECT_FALSE(dynamic.dynamic_loss_scale());
  EXPECT_TRUE(dynamic.checks_gradients());  // a fixed scale is checked, and refused on an overflow
}

// AMP's rules: an overflow halves a dynamic scale and asks for the step again; 2000 clean
// steps in a row double it; where halving cannot help the point is refused in one line.
TEST(LossScaler, HalvesOnOverflowGrowsWhenCleanAndRefusesWhatHalvingCannotCure) {
  RunConfig cfg;
  cfg.run.dtype = DType::f16;
  cfg.run.initial_loss_scale = 4;
  LossScaler dynamic(cfg);
  EXPECT_TRUE(dynamic.accept(true, 1.0));
  EXPECT_FALSE(dynamic.accept(false, 1.0));
  EXPECT_EQ(dynamic.scale(), 2);
  EXPECT_FALSE(dynamic.accept(false, 1.0));
  EXPECT_EQ(dynamic.scale(), 1);
  EXPECT_EQ(dynamic.overflows(), 2);
  for (int64_t i = 1; i < LossScaler::kGrowthInterval; ++i) ASSERT_TRUE(dynamic.accept(true, 1.0));
  EXPECT_EQ(dynamic.scale(), 1);
  EXPECT_TRUE(dynamic.accept(true, 1.0));
  EXPECT_EQ(dynamic.scale(), 2);
  EXPECT_FALSE(dynamic.accept(false, 1.0));
  const auto refusal = [](LossScaler& s, bool finite, double loss) {
    try {
      s.accept(finite, loss);
    } catch (const PointRefused& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(dynamic, false, 1.0),
            "the weight gradients overflow fp16 (Inf or NaN) even at loss scale 1, after 3 halvings from "
            "run.initial_loss_scale 4: this point's backward exceeds fp16's range unscaled");
  cfg.run.loss_scale = 1024;
  LossScaler fixed(cfg);
  EXPECT_EQ(refusal(fixed, false, 1.0),
            "the weight gradients overflow fp16 (Inf or NaN) at the fixed run.loss_scale 1024: set "
            "run.loss_scale to dynamic, or to a smaller power of two");
  for (int64_t i = 0; i <= LossScaler::kGrowthInterval; ++i) ASSERT_TRUE(fixed.accept(true, 1.0));
  EXPECT_EQ(fixed.scale(), 1024);  // a fixed scale never grows
  LossScaler forward(RunConfig{});
  EXPECT_EQ(refusal(forward, false, INFINITY),
            "the loss is inf: the forward overflows fp32, which no loss scale changes (a smaller "
            "run.input_scale keeps the activations in range)");
}

// A first scale of 2^40 overflows fp16's gradients: the step is run again at half the
// scale until they are finite, and what it leaves is bit for bit the step at the scale it
// settled on, fixed.
TEST(LayerStack, Fp16OverflowHalvesTheScaleAndRunsTheStepAgain) {
  RunConfig cfg = tiny(45, true);
  cfg.run.dtype = DType::f16;
  cfg.run.initial_loss_scale = std::ldexp(1.0, 40);
  const Grads settled = run(cfg);
  EXPECT_GT(settled.overflows, 0);
  EXPECT_EQ(settled.scale, std::ldexp(1.0, 40 - int(settled.overflows)));
  for (float g : settled.dwq) ASSERT_TRUE(std::isfinite(g));
  cfg.run.loss_scale = settled.scale;
  const Grads fixed = run(cfg);
  EXPECT_EQ(fixed.overflows, 0);
  EXPECT_EQ(fixed.loss, settled.loss);
  EXPECT_EQ(fixed.dwq, settled.dwq);
  EXPECT_EQ(fixed.dx, settled.dx);
  // Twice that scale overflows: fixed, the point is refused.
  cfg.run.loss_scale = 2 * settled.scale;
  EXPECT_THROW(run(cfg), PointRefused);
}

// run.grad_reduce_dtype: fp32 accumulates the weight gradients in fp32 buffers, storage in
// the run's dtype. On one rank wq's gradient is one GEMM's result, which storage rounds
// once: storage's gradient is fp32's rounded to 16 bits, bit for bit. In an fp32 run the
// two are the same step.
TEST(LayerStack, GradReduceDtypeSetsTheWeightGradientsPrecision) {
  RunConfig cfg = tiny(45, true);
  const Grads fp32_run = run(cfg);
  cfg.run.grad_reduce_dtype = GradReduceDtype::storage;
  EXPECT_EQ(run(cfg).dwq, fp32_run.dwq);
  for (DType dtype : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(to_string(dtype));
    cfg.run.dtype = dtype;
    cfg.run.grad_reduce_dtype = GradReduceDtype::storage;
    const Grads storage = run(cfg);
    cfg.run.grad_reduce_dtype = GradReduceDtype::fp32;
    const Grads main_grad = run(cfg);
    EXPECT_EQ(storage.grad_dtype, dtype);
    EXPECT_EQ(main_grad.grad_dtype, DType::f32);
    ASSERT_EQ(storage.scale, main_grad.scale);
    std::vector<float> rounded = main_grad.dwq;
    size_t changed = 0;
    for (float& g : rounded) {
      const float r = half_float::widen(half_float::narrow(g, dtype), dtype);
      changed += r != g;
      g = r;
    }
    EXPECT_EQ(storage.dwq, rounded);
    EXPECT_GT(changed, rounded.size() / 2);  // fp32 gradients hold bits 16 bits do not
  }
}

// The tuned set packs wq|wk|wv and w1|w3 into one tensor each, so that one GEMM serves
// each group; every weight's gradient, read back through its columns, still matches the
// fp64 reference (a column offset off by one would not), and the loss and output too.
// In bf16 the tuned set rounds the attention's fp32 gradients once, not once per GEMM:
// the same gradients to bf16's precision, not the same bits.
TEST(LayerStack, TunedLayerKernelsPackTheProjectionsAndMatchFp64) {
  RunConfig cfg = tiny(45, true);
  cfg.run.layer_kernels = LayerKernels::tuned;
  const Grads tuned = run(cfg);
  const auto ref = reference::model(tiny_problem(true));
  EXPECT_NEAR(tuned.loss, ref.loss, 1e-5 * std::fabs(ref.loss));
  EXPECT_LT(rel_err(tuned.y, ref.y), 1e-5);
  EXPECT_LT(rel_err(tuned.dx, ref.dx), 1e-5);
  for (int w = 0; w < int(Weight::count); ++w)
    EXPECT_LT(rel_err(tuned.dw[size_t(w)], ref.weight_grads[0][size_t(w)]), 1e-5) << weight_name(Weight(w));
  cfg.run.dtype = DType::bf16;
  const Grads bf16_tuned = run(cfg);
  cfg.run.layer_kernels = LayerKernels::standard;
  const Grads bf16_standard = run(cfg);
  for (int w = 0; w < int(Weight::count); ++w) {
    const std::vector<double> want(bf16_standard.dw[size_t(w)].begin(), bf16_standard.dw[size_t(w)].end());
    EXPECT_LT(rel_err(bf16_tuned.dw[size_t(w)], want), 2.5e-2) << weight_name(Weight(w));
  }
  EXPECT_NE(bf16_tuned.dwq, bf16_standard.dwq);
  // The host's GEMM sums each output column alone, so the packed forward makes the same bits.
  EXPECT_EQ(bf16_tuned.loss, bf16_standard.loss);
}

// The GEMM phases: four scopes per layer and pass (q, k, v; the out-projection; gate and
// up; the down-projection, and their gradients), the forward's again in a full recompute,
// the LM head's one per chunk in each; each inside a scope of the pass it belongs to.
TEST(LayerStack, GemmPhasesTimeEachPassGemmsInsideIt) {
  RunConfig cfg = tiny(45, true);
  for (const auto& [ckpt, vocab] : {std::pair{Checkpointing::none, 0}, std::pair{Checkpointing::full, 0},
                                    std::pair{Checkpointing::none, 300}}) {
    cfg.run.checkpointing = ckpt;
    cfg.model.vocab = vocab;
    cfg.run.loss_chunk = vocab > 0 ? 30 : 0;  // 90 rows: 3 chunks
    const std::vector<PhaseTimer::Span> spans = run(cfg).spans;
    auto inside = [&](const PhaseTimer::Span& s, std::initializer_list<const char*> parents) {
      for (const PhaseTimer::Span& p : spans)
        for (const char* name : parents)
          if (p.phase == std::string(name) && p.start <= s.start && s.end <= p.end) return true;
      return false;
    };
    int fwd = 0, bwd = 0;
    for (const PhaseTimer::Span& s : spans) {
      if (s.phase == std::string(phase::gemm_fwd)) {
        ++fwd;
        EXPECT_TRUE(inside(s, {phase::forward, phase::recompute}));
      } else if (s.phase == std::string(phase::gemm_bwd)) {
        ++bwd;
        EXPECT_TRUE(inside(s, {vocab > 0 ? phase::forward : phase::backward, phase::backward}));
      }
    }
    const int layers = cfg.model.layers, chunks = vocab > 0 ? 3 : 0;
    EXPECT_EQ(fwd, 4 * layers * (ckpt == Checkpointing::full ? 2 : 1) + chunks) << to_string(ckpt) << vocab;
    EXPECT_EQ(bwd, 4 * layers + chunks) << to_string(ckpt) << vocab;
  }
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
