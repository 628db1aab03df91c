// The attention variants on one rank: the deck's attention.window, the mask by global
// position (visible_keys) and the ring's hops against brute force, the host kernel with
// windows, sinks, MLA head shapes and documents against the fp64 reference, the sinks'
// gradient against finite differences, the FLOP count, and the negative controls: a
// window ignored, a sink merged once per ring step and a wrong value head dim are each
// INVALID at verify's tolerance. Every backend and layout is checked under mpiexec
// (tests/mpi/variants.cmake).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/backend.hpp"
#include "backends/engine/ring_blocks.hpp"
#include "backends/registry.hpp"
#include "config/deck.hpp"
#include "core/error.hpp"
#include "device/visible_keys.hpp"
#include "device_test_support.hpp"
#include "driver/verification.hpp"
#include "model/flops.hpp"

using namespace minictx;
using test::download;
using test::host_device;
using test::upload;

namespace {

struct InstalledDeck : ::testing::Environment {
  void SetUp() override {
    install_deck_backends();
    install_deck_devices();
  }
};
const auto* const deck_env = ::testing::AddGlobalTestEnvironment(new InstalledDeck);

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

RunConfig resolve(const std::string& yaml) { return Deck::from_string(yaml, "t.yaml").resolve(); }

TEST(AttentionWindow, DeckSpellingsReadBackToTheSameWindows) {
  for (const auto& [text, canonical] : std::vector<std::pair<std::string, std::string>>{
           {"global", "global"},
           {"128", "128"},
           {"+64", "64"},
           {"{layers: [128, global]}", "{layers: [128, global]}"},
           {"{layers: [64, 64, 64]}", "64"},
           {"{layers: [global]}", "global"}}) {
    const AttentionWindow w = window_from_text(text, "t");
    EXPECT_EQ(to_text(w), canonical) << text;
    EXPECT_EQ(to_text(window_from_text(to_text(w), "t")), canonical) << text;
  }
  const AttentionWindow w = window_from_text("{layers: [8, global, 3]}", "t");
  EXPECT_EQ(w.of_layer(0), 8);
  EXPECT_EQ(w.of_layer(1), AttentionWindow::kGlobal);
  EXPECT_EQ(w.of_layer(5), 3);
  for (const char* bad : {"0", "-3", "1.5", "{layers: []}", "{rows: [1]}", "{layers: [4], x: 1}", "wide"})
    EXPECT_NE(input_error_of([&] { window_from_text(bad, "t"); }).find("attention.window must be"),
              std::string::npos)
        << bad;
}

TEST(AttentionWindow, DeckChecksWindowsAgainstLayersModeAndDevice) {
  const RunConfig c = resolve("model: {layers: 4}\nattention: {window: {layers: [16, global]}, sinks: true}");
  EXPECT_EQ(c.attention.window.of_layer(2), 16);
  EXPECT_TRUE(c.attention.sinks);
  // A list of windows is a sweep, as for every other integer key.
  EXPECT_EQ(Deck::from_string("attention: {window: [16, 32, global]}", "t.yaml").expand().size(), 3u);
  EXPECT_NE(input_error_of([] {
              resolve("model: {layers: 1}\nattention: {window: {layers: [8, 16]}}");
            }).find("lists 2 layers' windows, but model.layers is 1"),
            std::string::npos);
  EXPECT_NE(input_error_of([] {
              resolve("run: {mode: attention}\nattention: {window: {layers: [8, 16]}}");
            }).find("attention mode runs one attention"),
            std::string::npos);
  // The GPU's kernels lack each variant: one line naming the device that has them.
  for (const char* variant :
       {"attention: {window: 64}", "attention: {sinks: true}", "model: {head_dim: 64, head_dim_v: 32}"}) {
    const std::string line = input_error_of([&] { resolve(std::string(variant) + "\nrun: {device: cuda}"); });
    EXPECT_NE(line.find("run.device cuda has no attention kernels for"), std::string::npos) << line;
    EXPECT_NE(line.find("(run.device kokkos has)"), std::string::npos) << line;
  }
}

// visible_keys is exactly the mask written out pair by pair: the document, causality,
// padding and the window.
TEST(VisibleKeys, AreTheMaskPairByPair) {
  const int64_t real = 40, padded = 44;
  AttnShape s;
  s.batch = 2;
  s.real_len = real;
  s.documents =
      std::make_shared<const DocumentBounds>(std::vector<std::vector<int64_t>>{{10, 1, 29}, {40}}, real);
  for (bool causal : {true, false})
    for (int64_t window : {0, 1, 3, 12, 100}) {
      s.causal = causal;
      s.window = window;
      for (int b = 0; b < 2; ++b)
        for (int64_t q = 0; q < padded; ++q) {
          const KeyRange r = visible_keys(s, b, q);
          for (int64_t k = 0; k < padded; ++k) {
            const bool same_doc = q < real && k < real &&
                                  s.documents->document_start(b, q) == s.documents->document_start(b, k);
            const bool want = same_doc && (!causal || k <= q) && (window == 0 || std::abs(q - k) < window);
            EXPECT_EQ(k >= r.first && k < r.end, want)
                << causal << " w " << window << " b " << b << " q " << q << " k " << k;
          }
        }
    }
}

// hops[j] is the last ring step at which a rank's active rows see some of block j's
// within the window (brute force over every pair), and a shorter window never sends more.
TEST(WindowHops, AreTheLastStepThatSeesTheBlock) {
  int fewer = 0;
  for (LayoutKind kind : {LayoutKind::contiguous, LayoutKind::zigzag, LayoutKind::stripe})
    for (int P : {2, 3, 4, 8})
      for (bool causal : {true, false}) {
        const int64_t len = 61;  // every layout pads it
        const SequenceLayout layout(kind, len, P);
        std::vector<std::vector<int64_t>> positions;
        for (int j = 0; j < P; ++j) positions.push_back(layout.outer_positions(j));
        const int64_t rows = layout.outer_len();
        int previous_total = -1;
        for (int64_t window : {64, 20, 9, 3, 1}) {
          AttnShape s;
          s.causal = causal;
          s.real_len = len;
          s.window = window;
          const std::vector<int> hops = window_hops(s, kind, positions, rows, rows, false);
          int total = 0;
          for (int j = 0; j < P; ++j) {
            int want = 0;
            for (int step = 1; step < P; ++step) {
              const int x = (j + step) % P;
              const ActiveRows a = active_rows(kind, causal, x, j, rows, rows);
              bool seen = false;
              for (int64_t i = a.q.begin; i < a.q.begin + a.q.len; ++i)
                for (int64_t m = a.k.begin; m < a.k.begin + a.k.len; ++m) {
                  const int64_t q = positions[size_t(x)][size_t(i)], k = positions[size_t(j)][size_t(m)];
                  seen = seen || (q < len && k < len && (!causal || k <= q) && std::abs(q - k) < window);
                }
              if (seen) want = step;
            }
            EXPECT_EQ(hops[size_t(j)], want)
                << int(kind) << " P " << P << " causal " << causal << " w " << window << " j " << j;
            total += hops[size_t(j)];
          }
          if (previous_total >= 0) {
            EXPECT_LE(total, previous_total);
            fewer += total < previous_total;
          }
          previous_total = total;
        }
      }
  EXPECT_GT(fewer, 0) << "no window shortened a walk: the skipped sends are untested";
}

// One head's worth of problem for the host kernel: [1, S, heads, dim] tensors of
// generated data and the matching fp64 reference problem.
struct KernelCase {
  reference::Problem p;
  std::vector<double> q, k, v, dout;
  std::vector<int64_t> pos;

  explicit KernelCase(int64_t window, bool sinks, int head_dim_v) {
    p.batch = 1;
    p.seq_len = 53;
    p.heads = 4;
    p.kv_heads = 2;
    p.head_dim = 16;
    p.head_dim_v = head_dim_v;
    p.causal = true;
    p.seed = 5;
    p.layers = 1;
    p.window = {window};
    p.documents = {{20, 1, 32}};
    if (sinks) p.sinks = reference::generated_sinks(p);
    const size_t rows = size_t(p.seq_len);
    q = test::generated(rows * p.heads * p.head_dim, tensor_id::attn_q);
    k = test::generated(rows * p.kv_heads * p.head_dim, tensor_id::attn_k);
    v = test::generated(rows * p.kv_heads * p.value_dim(), tensor_id::attn_v);
    dout = test::generated(rows * p.heads * p.value_dim(), tensor_id::attn_do);
    for (int64_t i = 0; i < p.seq_len; ++i) pos.push_back(i);
  }

  AttnShape shape() const {
    AttnShape s;
    s.heads = p.heads;
    s.kv_heads = p.kv_heads;
    s.head_dim = p.head_dim;
    s.head_dim_v = p.value_dim();
    s.real_len = p.seq_len;
    s.window = p.window_of(0);
    s.block_q = 8;
    s.block_k = 16;
    s.documents = std::make_shared<const DocumentBounds>(p.documents, p.seq_len);
    return s;
  }
};

// What the app's kernels give for a case: o, lse, dq, dk, dv and dsinks, the keys merged
// in `blocks` pieces as a ring merges its steps. `sink_every_block` merges the sinks after
// each piece (the bug of a ring that merges them per step), else once at the end.
struct AppResult {
  std::vector<double> o, lse, dq, dk, dv, dsinks;
};
AppResult run_app(const KernelCase& c, const AttnShape& s, int blocks, bool sink_every_block) {
  Device& dev = host_device();
  const int64_t S = c.p.seq_len, dv = c.p.value_dim();
  const Tensor q = upload(dev, c.q, {S, int64_t(c.p.heads) * c.p.head_dim});
  const Tensor k = upload(dev, c.k, {S, int64_t(c.p.kv_heads) * c.p.head_dim});
  const Tensor v = upload(dev, c.v, {S, int64_t(c.p.kv_heads) * dv});
  const Tensor dout = upload(dev, c.dout, {S, int64_t(c.p.heads) * dv});
  Tensor o = dev.alloc({S, int64_t(c.p.heads) * dv}), lse = dev.alloc_lse(1, c.p.heads, S);
  const bool sinks = !c.p.sinks.empty();
  const Tensor sink = sinks ? upload(dev, c.p.sinks[0], {int64_t(c.p.heads)}) : Tensor();
  dev.attn_init(o, lse);
  const int64_t piece = (S + blocks - 1) / blocks;
  for (int64_t first = 0; first < S; first += piece) {
    const int64_t n = std::min(piece, S - first);
    dev.attn_fwd(s, {{&q, 0, S, c.pos.data()},
                     {&k, first, n, c.pos.data() + first},
                     {&v, first, n, c.pos.data() + first},
                     &o,
                     &lse});
    if (sinks && sink_every_block) dev.attn_sink_merge(s, sink, o, lse);
  }
  if (sinks && !sink_every_block) dev.attn_sink_merge(s, sink, o, lse);
  Tensor delta = dev.alloc_rows_of_lse(lse);
  dev.attn_bwd_delta(s, o, dout, delta);
  Tensor dq = dev.zeros(q.shape()), dk = dev.zeros(k.shape()), dvt = dev.zeros(v.shape());
  dev.attn_bwd(s, {{&q, 0, S, c.pos.data()},
                   {&k, 0, S, c.pos.data()},
                   {&v, 0, S, c.pos.data()},
                   &dout,
                   &lse,
                   &delta,
                   &dq,
                   &dk,
                   &dvt});
  std::vector<double> lse_hi = download(dev, lse);
  lse_hi.resize(size_t(c.p.heads * S));  // the fp32 plane, as verify reads it
  AppResult r{download(dev, o), lse_hi, download(dev, dq), download(dev, dk), download(dev, dvt), {}};
  if (sinks) {
    Tensor dsinks = dev.zeros(sink.shape());
    dev.attn_sink_grad(s, sink, o, lse, dout, dsinks);
    r.dsinks = download(dev, dsinks);
  }
  return r;
}

// Whether every tensor passes verify's comparison at the fp32 tolerance.
bool valid(const AppResult& got, const reference::AttentionResult& ref) {
  RunConfig fp32;
  const double tol = verify_tolerance(fp32);
  bool ok = true;
  for (const auto& [g, r] : {std::pair{&got.o, &ref.o},
                             {&got.dq, &ref.dq},
                             {&got.dk, &ref.dk},
                             {&got.dv, &ref.dv},
                             {&got.dsinks, &ref.dsinks}})
    ok = ok && compare_tensor("", *g, *r, tol).pass;
  // lse is [H, S] on both sides here (batch 1).
  return ok && compare_tensor("", got.lse, ref.lse, tol).pass;
}

reference::AttentionResult fp64(const KernelCase& c) {
  return reference::attention_on(c.p, c.q, c.k, c.v, c.dout, c.pos);
}

TEST(Variants, HostKernelMatchesFp64WithWindowSinksValueDimAndDocuments) {
  for (int64_t window : {0, 1, 7, 30})
    for (bool sinks : {false, true})
      for (int dv : {16, 24}) {
        const KernelCase c(window, sinks, dv);
        EXPECT_TRUE(valid(run_app(c, c.shape(), 3, false), fp64(c))) << window << " " << sinks << " " << dv;
      }
}

// Negative controls: each mistake a peer shipped is INVALID at verify's tolerance.
TEST(NegativeControls, AWindowIgnoredIsInvalid) {
  const KernelCase c(7, false, 16);
  AttnShape ignored = c.shape();
  ignored.window = 0;
  EXPECT_TRUE(valid(run_app(c, c.shape(), 1, false), fp64(c)));
  EXPECT_FALSE(valid(run_app(c, ignored, 1, false), fp64(c)));
}

TEST(NegativeControls, ASinkMergedOncePerRingStepIsInvalid) {
  const KernelCase c(0, true, 16);
  EXPECT_TRUE(valid(run_app(c, c.shape(), 3, false), fp64(c)));
  EXPECT_FALSE(valid(run_app(c, c.shape(), 3, true), fp64(c)));
}

TEST(NegativeControls, AWrongValueHeadDimIsInvalid) {
  const KernelCase c(0, false, 24);
  AttnShape wrong = c.shape();
  wrong.head_dim_v = 0;  // the value rows read as if they were head_dim wide
  EXPECT_TRUE(valid(run_app(c, c.shape(), 1, false), fp64(c)));
  EXPECT_FALSE(valid(run_app(c, wrong, 1, false), fp64(c)));
}

// The reference's sink gradient is the derivative of Σ dO ∘ O (central differences).
TEST(Variants, ReferenceSinkGradientIsTheDerivative) {
  const KernelCase c(7, true, 24);
  const reference::AttentionResult r = fp64(c);
  auto loss = [&](const reference::Problem& p) {
    const auto o = reference::attention_forward(p, c.q, c.k, c.v, c.pos).o;
    double sum = 0;
    for (size_t i = 0; i < o.size(); ++i) sum += o[i] * c.dout[i];
    return sum;
  };
  const double eps = 1e-5;
  for (int h = 0; h < c.p.heads; ++h) {
    reference::Problem up = c.p, down = c.p;
    up.sinks[0][size_t(h)] += eps;
    down.sinks[0][size_t(h)] -= eps;
    EXPECT_NEAR(r.dsinks[size_t(h)], (loss(up) - loss(down)) / (2 * eps), 1e-8) << h;
  }
}

// The FLOPs count the pairs within the window (brute force), halved when causal; a window
// as long as the sequence counts what none does; MLA heads count 2·(D + Dv) per pair.
TEST(Variants, FlopsCountTheWindowsPairsAndValueDim) {
  RunConfig c;
  c.sequence.length = 57;
  c.sequence.batch = 2;
  c.run.mode = Mode::attention;
  DocumentPacking docs;
  docs.lengths = {{20, 1, 36}};
  c.sequence.documents = docs;
  for (int64_t window : {1, 5, 19, 36}) {
    double pairs = 0;
    for (int64_t len : {20, 1, 36})
      for (int64_t i = 0; i < len; ++i)
        for (int64_t j = 0; j < len; ++j) pairs += std::abs(i - j) < window;
    EXPECT_EQ(attention_pairs(c, window), 2 * pairs) << window;
  }
  EXPECT_EQ(attention_pairs(c, 57), attention_pairs(c));
  c.attention.window = window_from_text("5", "t");
  c.model.head_dim = 32;
  c.model.head_dim_v = 16;
  EXPECT_DOUBLE_EQ(attention_fwd_flops(c), 2.0 * attention_pairs(c, 5) * c.model.heads * (32 + 16) / 2);
}

}  // namespace
