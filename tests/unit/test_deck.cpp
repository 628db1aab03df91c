// The input deck: defaults, presets, every kind of bad input, --set, sweeps, machine
// profiles, round trips, and that the docs and the built-in quickstart match the code.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/backend.hpp"
#include "backends/registry.hpp"
#include "config/backend_catalog.hpp"
#include "config/benchmark.hpp"
#include "config/deck.hpp"
#include "config/deck_diff.hpp"
#include "config/deck_schema.hpp"
#include "core/error.hpp"
#include "device/device.hpp"

namespace fs = std::filesystem;
using namespace minictx;

namespace {

const fs::path repo = fs::path(__FILE__).parent_path() / ".." / "..";

// A site's MINICTX_DATA_DIR must not change what these tests see.
struct CleanEnvironment : ::testing::Environment {
  void SetUp() override { unsetenv("MINICTX_DATA_DIR"); }
};
const auto* const clean_env = ::testing::AddGlobalTestEnvironment(new CleanEnvironment);

// The deck takes its backend names and options from the registry, and what each device
// can do from the device layer, as the program does.
struct InstalledBackends : ::testing::Environment {
  void SetUp() override {
    install_deck_backends();
    install_deck_devices();
  }
};
const auto* const backends_env = ::testing::AddGlobalTestEnvironment(new InstalledBackends);

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Deck deck(const std::string& yaml) { return Deck::from_string(yaml, "t.yaml"); }

// Runs f, which must throw an InputError of one line; returns its message.
template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string resolve_error(const std::string& yaml) {
  return input_error_of([&] { deck(yaml).resolve(); });
}

void expect_same(const RunConfig& a, const RunConfig& b) {
  EXPECT_EQ(a.model.preset, b.model.preset);
  EXPECT_EQ(a.model.layers, b.model.layers);
  EXPECT_EQ(a.model.d_model, b.model.d_model);
  EXPECT_EQ(a.model.heads, b.model.heads);
  EXPECT_EQ(a.model.kv_heads, b.model.kv_heads);
  EXPECT_EQ(a.model.head_dim, b.model.head_dim);
  EXPECT_EQ(a.model.ffn_hidden, b.model.ffn_hidden);
  EXPECT_EQ(a.model.rms_eps, b.model.rms_eps);
  EXPECT_EQ(a.model.rope_theta, b.model.rope_theta);
  EXPECT_EQ(a.model.vocab, b.model.vocab);
  EXPECT_EQ(a.run.loss_chunk, b.run.loss_chunk);
  EXPECT_EQ(a.sequence.length, b.sequence.length);
  EXPECT_EQ(a.sequence.batch, b.sequence.batch);
  EXPECT_EQ(to_text(a.sequence.documents), to_text(b.sequence.documents));
  EXPECT_EQ(a.attention.backend, b.attention.backend);
  EXPECT_EQ(a.attention.causal, b.attention.causal);
  for (const BackendKey& k : backend_keys())
    EXPECT_EQ(a.attention.options.value(k.key), b.attention.options.value(k.key)) << k.key;
  EXPECT_EQ(a.attention.block_q, b.attention.block_q);
  EXPECT_EQ(a.attention.block_k, b.attention.block_k);
  EXPECT_EQ(a.run.mode, b.run.mode);
  EXPECT_EQ(a.run.fwd_only, b.run.fwd_only);
  EXPECT_EQ(a.run.warmup, b.run.warmup);
  EXPECT_EQ(a.run.iters, b.run.iters);
  EXPECT_EQ(a.run.checkpointing, b.run.checkpointing);
  EXPECT_EQ(a.run.grad_reduce, b.run.grad_reduce);
  EXPECT_EQ(a.run.grad_reduce_dtype, b.run.grad_reduce_dtype);
  EXPECT_EQ(a.run.dtype, b.run.dtype);
  EXPECT_EQ(a.run.loss_scale, b.run.loss_scale);
  EXPECT_EQ(a.run.initial_loss_scale, b.run.initial_loss_scale);
  EXPECT_EQ(a.run.device, b.run.device);
  EXPECT_EQ(a.run.comm, b.run.comm);
  EXPECT_EQ(a.run.seed, b.run.seed);
  EXPECT_EQ(a.run.verify, b.run.verify);
  EXPECT_EQ(a.run.reference, b.run.reference);
  EXPECT_EQ(a.machine.profile, b.machine.profile);
  EXPECT_EQ(a.machine.peak_tflops, b.machine.peak_tflops);
  EXPECT_EQ(a.machine.name, b.machine.name);
  EXPECT_EQ(a.topology.ranks_per_node, b.topology.ranks_per_node);
  EXPECT_EQ(a.output.file, b.output.file);
  EXPECT_EQ(a.output.overwrite, b.output.overwrite);
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("minictx_test_deck_" + std::to_string(getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel) << text;
  }
};

}  // namespace

TEST(Deck, EmptyDeckGivesTheStructDefaults) {
  const RunConfig c = deck("").resolve();
  RunConfig d;
  d.model.preset = "custom";
  d.machine.name = "generic CPU core";  // the default profile, generic-cpu, fp32
  d.machine.peak_tflops = 0.05;
  expect_same(c, d);
  expect_same(deck("# only a comment\nmodel:\n").resolve(), d);
}

TEST(Deck, EnumNamesAreTheDeckSpellings) {
  EXPECT_STREQ(to_string(Mode::attention), "attention");
  EXPECT_STREQ(to_string(Mode::model), "model");
  EXPECT_STREQ(to_string(Checkpointing::none), "none");
  EXPECT_STREQ(to_string(Checkpointing::full), "full");
  EXPECT_STREQ(to_string(Checkpointing::selective), "selective");
  EXPECT_STREQ(to_string(Checkpointing::selective_half), "selective_half");
  EXPECT_STREQ(to_string(GradReduce::overlap), "overlap");
  EXPECT_STREQ(to_string(GradReduce::after_backward), "after_backward");
  EXPECT_STREQ(to_string(DType::f32), "fp32");
  EXPECT_STREQ(to_string(DType::bf16), "bf16");
  EXPECT_STREQ(to_string(DType::f16), "fp16");
  const RunConfig c = deck(
                          "run: {mode: attention, checkpointing: selective, dtype: fp16}\n"
                          "machine: {profile: measure}\n")
                          .resolve();
  EXPECT_EQ(c.run.mode, Mode::attention);
  EXPECT_EQ(c.run.checkpointing, Checkpointing::selective);
  EXPECT_EQ(c.run.dtype, DType::f16);
  EXPECT_EQ(
      deck("run: {checkpointing: selective_half}\nmachine: {profile: measure}\n").resolve().run.checkpointing,
      Checkpointing::selective_half);
}

TEST(Deck, EveryKeyIsRead) {
  const RunConfig c = deck(R"(
model: {layers: 3, d_model: 64, heads: 4, kv_heads: 2, head_dim: 16, ffn_hidden: 100, rms_eps: 1e-6, rope_theta: 5e5}
sequence: {length: 4097, batch: 2}
attention: {backend: double_ring, causal: false, ring_type: zigzag, ulysses_degree: 2, ring_degree: 3,
            window_size: 4}
run: {mode: attention, fwd_only: true, warmup: 0, iters: 7, checkpointing: full, dtype: bf16,
      device: cuda, comm: nccl, seed: 0, verify: true, reference: single-device}
machine: {profile: a100-80gb, peak_tflops: 100.5}
topology: {ranks_per_node: 4}
output: {file: out/x.h5, overwrite: true}
)")
                          .resolve();
  EXPECT_EQ(c.model.preset, "custom");
  EXPECT_EQ(c.model.layers, 3);
  EXPECT_EQ(c.model.d_model, 64);
  EXPECT_EQ(c.model.heads, 4);
  EXPECT_EQ(c.model.kv_heads, 2);
  EXPECT_EQ(c.model.head_dim, 16);
  EXPECT_EQ(c.model.ffn_hidden, 100);
  EXPECT_EQ(c.model.rms_eps, 1e-6);
  EXPECT_EQ(c.model.rope_theta, 5e5);
  EXPECT_EQ(c.sequence.length, 4097);
  EXPECT_EQ(c.sequence.batch, 2);
  EXPECT_EQ(c.attention.backend, "double_ring");
  EXPECT_FALSE(c.attention.causal);
  EXPECT_EQ(c.attention.options.choice("attention.ring_type"), "zigzag");
  EXPECT_EQ(c.attention.options.integer("attention.ulysses_degree"), 2);
  EXPECT_EQ(c.attention.options.integer("attention.ring_degree"), 3);
  EXPECT_EQ(c.attention.options.integer("attention.window_size"), 4);
  // burst's own keys: no backend takes every backend option.
  const AttentionConfig burst =
      deck("attention: {backend: burst, intra: ulysses, bwd_comm: kv}\n").resolve().attention;
  EXPECT_EQ(burst.options.choice("attention.intra"), "ulysses");
  EXPECT_EQ(burst.options.choice("attention.bwd_comm"), "kv");
  // The host kernel's tiles are read on the host device (the cuda device refuses them).
  const RunConfig tiles = deck("attention: {block_q: 32, block_k: 128}\n").resolve();
  EXPECT_EQ(tiles.attention.block_q, 32);
  EXPECT_EQ(tiles.attention.block_k, 128);
  EXPECT_EQ(c.run.mode, Mode::attention);
  EXPECT_TRUE(c.run.fwd_only);
  EXPECT_EQ(c.run.warmup, 0);
  EXPECT_EQ(c.run.iters, 7);
  EXPECT_EQ(c.run.checkpointing, Checkpointing::full);
  EXPECT_EQ(c.run.dtype, DType::bf16);
  EXPECT_EQ(c.run.device, DeviceKind::cuda);
  EXPECT_EQ(c.run.comm, CommKind::nccl);
  EXPECT_EQ(c.run.seed, 0u);
  EXPECT_TRUE(c.run.verify);
  EXPECT_EQ(c.run.reference, Reference::single_device);
  EXPECT_EQ(c.machine.profile, "a100-80gb");
  EXPECT_EQ(c.machine.peak_tflops, 100.5);  // the deck's figure beats the datasheet's
  EXPECT_EQ(c.machine.name, "A100-SXM4-80GB");
  EXPECT_EQ(c.topology.ranks_per_node, 4);
  EXPECT_EQ(c.output.file, "out/x.h5");
  EXPECT_TRUE(c.output.overwrite);
}

TEST(Deck, PresetsFillTheModelAndExplicitKeysOverride) {
  const ModelShape m = deck("model:\n  preset: llama-7b\n").resolve().model;
  EXPECT_EQ(m.preset, "llama-7b");
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.d_model, 4096);
  EXPECT_EQ(m.heads, 32);
  EXPECT_EQ(m.kv_heads, 32);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.ffn_hidden, 11008);
  EXPECT_EQ(m.rope_theta, 10000.0);

  // The explicit key wins wherever it stands relative to the preset.
  const ModelShape o = deck("model:\n  layers: 4\n  preset: llama-13b\n").resolve().model;
  EXPECT_EQ(o.preset, "llama-13b");
  EXPECT_EQ(o.layers, 4);
  EXPECT_EQ(o.d_model, 5120);
  EXPECT_EQ(o.heads, 40);
  EXPECT_EQ(o.ffn_hidden, 13824);

  const ModelShape l3 = deck("model: {preset: llama-3-8b}\n").resolve().model;
  EXPECT_EQ(l3.kv_heads, 8);
  EXPECT_EQ(l3.ffn_hidden, 14336);
  EXPECT_EQ(l3.rope_theta, 500000.0);
  EXPECT_EQ(l3.vocab, 128256);
  EXPECT_EQ(deck("model: {preset: llama-7b}\n").resolve().model.vocab, 0);  // no head unless asked
  const ModelShape oss = deck("model: {preset: gpt-oss-20b-like}\n").resolve().model;
  EXPECT_EQ(oss.heads * oss.head_dim, 4096);  // wider than d_model 2880, as gpt-oss's attention
  EXPECT_EQ(oss.vocab, 201088);
  const ModelShape ds = deck("model: {preset: deepseek-v3-like, vocab: 0}\n").resolve().model;
  EXPECT_EQ(ds.head_dim, 192);
  EXPECT_EQ(ds.value_dim(), 128);  // MLA's value heads
  EXPECT_EQ(ds.kv_heads, ds.heads);
  EXPECT_EQ(ds.vocab, 0);  // the deck's own key wins

  const ModelShape tiny = deck("model: {preset: tiny}\n").resolve().model;
  EXPECT_EQ(tiny.layers, 2);
  EXPECT_EQ(tiny.d_model, 256);
  EXPECT_EQ(tiny.heads, 8);
  EXPECT_EQ(tiny.kv_heads, 4);
  EXPECT_EQ(tiny.head_dim, 32);
  EXPECT_EQ(tiny.ffn_hidden, 688);
}

TEST(Deck, ParameterCount) {
  // llama-7b, per layer: norms 2*4096 = 8,192; wq 4096*32*128 = 16,777,216;
  // wk+wv 2*4096*32*128 = 33,554,432; wo 16,777,216; w1,w3,w2 3*4096*11008 = 135,266,304;
  // sum 202,383,360; x 32 layers = 6,476,267,520. (Adding the 32000x4096 embedding and
  // output matrices and the final norm gives 6,738,415,616, the published Llama-2-7B count.)
  EXPECT_EQ(deck("model: {preset: llama-7b}").resolve().model.n_params(false), 6476267520LL);
  // tiny, per layer: 2*256 + 256*256 + 2*256*128 + 256*256 + 3*256*688
  //                = 512 + 65,536 + 65,536 + 65,536 + 528,384 = 725,504; x 2 = 1,451,008.
  EXPECT_EQ(deck("model: {preset: tiny}").resolve().model.n_params(false), 1451008);
  // llama-3-8b, per layer: norms 8,192; wq 16,777,216; wk+wv 2*4096*8*128 = 8,388,608;
  // wo 16,777,216; w1,w3,w2 3*4096*14336 = 176,160,768; sum 218,112,000; x 32 layers =
  // 6,979,584,000; the head 4096*128256 = 525,336,576: 7,504,920,576. (The input embedding,
  // as large, and the final norm give 8,030,261,248, the published Llama-3-8B count.)
  EXPECT_EQ(deck("model: {preset: llama-3-8b}").resolve().model.n_params(false), 7504920576LL);
}

TEST(DeckErrors, UnknownKeySuggestsTheNearestName) {
  EXPECT_EQ(resolve_error("# c\nattention:\n  ring_typ: zigzag\n"),
            "deck t.yaml line 3: unknown key 'attention.ring_typ' (did you mean 'attention.ring_type'?)");
  EXPECT_EQ(resolve_error("attention:\n  layers: 2\n"),
            "deck t.yaml line 2: unknown key 'attention.layers' (did you mean 'model.layers'?)");
  const std::string far = resolve_error("run:\n  banana: 2\n");
  EXPECT_EQ(far.rfind("deck t.yaml line 2: unknown key 'run.banana' (keys of run: mode, fwd_only,", 0), 0u)
      << far;
  EXPECT_EQ(resolve_error("modle:\n  layers: 2\n"),
            "deck t.yaml line 1: unknown section 'modle' (did you mean 'model'?)");
  EXPECT_EQ(resolve_error("model.layers: 2\n"),
            "deck t.yaml line 1: unknown section 'model.layers' (write 'layers:' indented under 'model:')");
}

TEST(DeckErrors, WrongTypeNamesTheLine) {
  EXPECT_EQ(resolve_error("# a deck\n\nsequence:\n  length: 10\nmodel:\n  layers: four\n"),
            "deck t.yaml line 6: model.layers must be an integer, got 'four'");
  EXPECT_EQ(resolve_error("model:\n  layers: 3.5\n"),
            "deck t.yaml line 2: model.layers must be an integer, got '3.5'");
  EXPECT_EQ(resolve_error("attention:\n  causal: yes\n"),
            "deck t.yaml line 2: attention.causal must be true or false, got 'yes'");
  EXPECT_EQ(resolve_error("model:\n  rms_eps: small\n"),
            "deck t.yaml line 2: model.rms_eps must be a number, got 'small'");
  EXPECT_EQ(resolve_error("model:\n  layers:\n"), "deck t.yaml line 2: model.layers has no value");
  EXPECT_EQ(resolve_error("model:\n  layers: {a: 1}\n"),
            "deck t.yaml line 2: model.layers must be a single value, got a mapping");
  EXPECT_EQ(resolve_error("model: 3\n"), "deck t.yaml line 1: section 'model' must hold 'key: value' lines");
  // A list item reports its own line.
  EXPECT_EQ(resolve_error("sequence:\n  length:\n    - 1024\n    - lots\n"),
            "deck t.yaml line 4: sequence.length must be an integer, got 'lots'");
}

TEST(DeckErrors, BadEnumListsTheChoices) {
  EXPECT_EQ(
      resolve_error("attention:\n  ring_type: zz\n"),
      "deck t.yaml line 2: attention.ring_type must be one of basic, zigzag, stripe, balanced; got 'zz'");
  // The backends are the registry's, in its order, so a new backend changes no test here.
  std::string backends;
  for (const auto& b : backend_registry()) backends += (backends.empty() ? "" : ", ") + b.name;
  EXPECT_EQ(backends.rfind("local, ring, ulysses, usp, allgather, double_ring, burst", 0), 0U) << backends;
  EXPECT_EQ(resolve_error("attention:\n  backend: rings\n"),
            "deck t.yaml line 2: attention.backend must be one of " + backends + "; got 'rings'");
  EXPECT_EQ(resolve_error("run:\n  dtype: f32\n"),
            "deck t.yaml line 2: run.dtype must be one of fp32, bf16, fp16; got 'f32'");
  EXPECT_EQ(resolve_error("model:\n  preset: llama-65b\n"),
            "deck t.yaml line 2: model.preset must be one of custom, tiny, llama-7b, llama-13b, llama-3-8b, "
            "gpt-oss-20b-like, deepseek-v3-like; "
            "got 'llama-65b'");
}

TEST(DeckErrors, ImpossibleValues) {
  EXPECT_EQ(resolve_error("model:\n  layers: 0\n"),
            "deck t.yaml line 2: model.layers must be at least 1, got 0");
  EXPECT_EQ(resolve_error("model:\n  d_model: -8\n"),
            "deck t.yaml line 2: model.d_model must be at least 1, got -8");
  EXPECT_EQ(resolve_error("model:\n  heads: 0\n"),
            "deck t.yaml line 2: model.heads must be at least 1, got 0");
  EXPECT_EQ(resolve_error("model:\n  kv_heads: 0\n"),
            "deck t.yaml line 2: model.kv_heads must be at least 1, got 0");
  EXPECT_EQ(resolve_error("model:\n  head_dim: 33\n"),
            "deck t.yaml line 2: model.head_dim must be even (RoPE rotates pairs of dimensions), got 33");
  EXPECT_EQ(resolve_error("model:\n  ffn_hidden: 0\n"),
            "deck t.yaml line 2: model.ffn_hidden must be at least 1, got 0");
  EXPECT_EQ(resolve_error("model:\n  rms_eps: 0\n"),
            "deck t.yaml line 2: model.rms_eps must be greater than 0, got 0");
  EXPECT_EQ(resolve_error("model:\n  layers: 3000000000\n"),
            "deck t.yaml line 2: model.layers must be at most 2147483647, got 3000000000");
  EXPECT_EQ(
      resolve_error("sequence:\n  length: 99999999999999999999\n"),
      "deck t.yaml line 2: sequence.length must be at most 9223372036854775807, got 99999999999999999999");
  EXPECT_EQ(resolve_error("model:\n  layers: +-3\n"),
            "deck t.yaml line 2: model.layers must be an integer, got '+-3'");
  EXPECT_EQ(resolve_error("sequence:\n  length: 0\n"),
            "deck t.yaml line 2: sequence.length must be at least 1, got 0");
  EXPECT_EQ(resolve_error("sequence:\n  batch: 0\n"),
            "deck t.yaml line 2: sequence.batch must be at least 1, got 0");
  EXPECT_EQ(resolve_error("run:\n  iters: 0\n"), "deck t.yaml line 2: run.iters must be at least 1, got 0");
  EXPECT_EQ(resolve_error("run:\n  warmup: -1\n"),
            "deck t.yaml line 2: run.warmup must be at least 0, got -1");
  EXPECT_EQ(resolve_error("run:\n  seed: -1\n"), "deck t.yaml line 2: run.seed must be at least 0, got -1");
  EXPECT_EQ(resolve_error("attention:\n  block_k: 0\n"),
            "deck t.yaml line 2: attention.block_k must be at least 1, got 0");
  EXPECT_EQ(resolve_error("machine:\n  peak_tflops: -1\n"),
            "deck t.yaml line 2: machine.peak_tflops must be at least 0, got -1");
  EXPECT_EQ(resolve_error("machine:\n  peak_tflops: .inf\n"),
            "deck t.yaml line 2: machine.peak_tflops must be a number, got '.inf'");
  // The scaled inputs keep their precision in the run's dtype, and the attention
  // gradients (the cube of the scale) theirs in fp32.
  EXPECT_EQ(resolve_error("run:\n  input_scale: 4.9406564584124654e-324\n"),
            "deck t.yaml line 2: run.input_scale must lie between 2^-42 and 2^127 in fp32 (below, the inputs "
            "or the attention gradients, which grow as its cube, underflow; above, the inputs overflow), got "
            "4.94066e-324");
  EXPECT_NE(resolve_error("run:\n  dtype: fp16\n  input_scale: 65536\n")
                .find("run.input_scale must lie between 2^-17 and 2^15 in fp16"),
            std::string::npos);
  EXPECT_EQ(deck("run: {input_scale: 2.2737367544323206e-13}").resolve().run.input_scale,
            std::ldexp(1.0, -42));
  EXPECT_EQ(
      deck("run: {dtype: fp16, input_scale: 32768}\nmachine: {peak_tflops: 1}").resolve().run.input_scale,
      32768);
  EXPECT_EQ(
      resolve_error("run:\n  key_directions: 4\n"),
      "deck t.yaml line 2: run.key_directions draws the keys of attention mode; model mode computes its "
      "keys from x");
  EXPECT_EQ(deck("run: {mode: attention, key_directions: 4}").resolve().run.key_directions, 4);

  // Between keys: the line is that of the first key involved that the deck sets.
  EXPECT_EQ(resolve_error("model:\n  heads: 8\n  kv_heads: 3\n"),
            "deck t.yaml line 3: model.heads (8) must be a multiple of model.kv_heads (3) for grouped-query "
            "attention");
  EXPECT_EQ(resolve_error("model:\n  preset: llama-3-8b\n  heads: 12\n"),
            "deck t.yaml line 3: model.heads (12) must be a multiple of model.kv_heads (8) for grouped-query "
            "attention");
  EXPECT_EQ(resolve_error("attention:\n  backend: usp\n  ulysses_degree: 3\n"),
            "deck t.yaml line 3: attention.ulysses_degree (3) must divide model.heads (8) because Ulysses "
            "splits the "
            "heads across ranks");
  EXPECT_EQ(resolve_error("run:\n  comm: nccl\n"),
            "deck t.yaml line 2: run.comm nccl needs run.device cuda (NCCL moves device memory)");
}

// The checks between run.device and the other keys ask the device layer what a kind can do
// (config/device_catalog.hpp), and their lines name the kinds that can.
// run.loss_scale is `dynamic` or a fixed power of two; the layer stack's gradient keys are
// errors where nothing would read them (attention mode, a scale that is not dynamic), and
// the word and the numbers read back from a resolved deck.
TEST(DeckErrors, LossScaleAndGradientSums) {
  const RunConfig fixed = deck("run: {loss_scale: 1024, grad_reduce_dtype: storage}\n").resolve();
  EXPECT_EQ(fixed.run.loss_scale, 1024);
  EXPECT_EQ(fixed.run.grad_reduce_dtype, GradReduceDtype::storage);
  const auto swept =
      deck("run: {dtype: fp16, loss_scale: [dynamic, 8]}\nmachine: {profile: measure}\n").expand();
  ASSERT_EQ(swept.size(), 2u);
  EXPECT_EQ(swept[0].label, "run.loss_scale=dynamic");
  EXPECT_EQ(swept[1].config.loss_scale(), 8);
  const auto dynamic =
      deck("run: {dtype: fp16, loss_scale: dynamic, initial_loss_scale: 4096}\nmachine: {profile: measure}\n")
          .expand();
  ASSERT_EQ(dynamic.size(), 1u);
  EXPECT_TRUE(dynamic[0].config.dynamic_loss_scale());
  EXPECT_EQ(dynamic[0].config.loss_scale(), 4096);
  EXPECT_NE(dynamic[0].resolved_yaml.find("loss_scale: dynamic"), std::string::npos);
  expect_same(Deck::from_string(dynamic[0].resolved_yaml, "resolved").resolve(), dynamic[0].config);
  EXPECT_STREQ(to_string(GradReduceDtype::fp32), "fp32");
  EXPECT_STREQ(to_string(GradReduceDtype::storage), "storage");

  EXPECT_EQ(resolve_error("run:\n  loss_scale: 0\n"),
            "deck t.yaml line 2: run.loss_scale must be dynamic or at least 1, got 0");
  EXPECT_EQ(resolve_error("run:\n  loss_scale: dynamc\n"),
            "deck t.yaml line 2: run.loss_scale must be dynamic or a number, got 'dynamc'");
  EXPECT_EQ(
      resolve_error("run:\n  loss_scale: 1000\n"),
      "deck t.yaml line 2: run.loss_scale must be dynamic or a power of two of at least 1 (so that scaling "
      "the loss and unscaling its gradients are exact), got 1000");
  EXPECT_EQ(
      resolve_error("run:\n  dtype: fp16\n  initial_loss_scale: 3\n"),
      "deck t.yaml line 3: run.initial_loss_scale must be a power of two of at least 1 (so that scaling "
      "the loss and unscaling its gradients are exact), got 3");
  EXPECT_EQ(resolve_error("run:\n  mode: attention\n  loss_scale: 1024\n"),
            "deck t.yaml line 3: run.loss_scale and run.initial_loss_scale scale the layer stack's loss "
            "(run.mode model); attention mode has no loss, its backward starts from a generated dO (scaled "
            "with the inputs by run.input_scale)");
  EXPECT_EQ(resolve_error("run:\n  mode: attention\n  dtype: fp16\n  initial_loss_scale: 1024\n"),
            "deck t.yaml line 4: run.loss_scale and run.initial_loss_scale scale the layer stack's loss "
            "(run.mode model); attention mode has no loss, its backward starts from a generated dO (scaled "
            "with the inputs by run.input_scale)");
  EXPECT_EQ(
      resolve_error("run:\n  mode: attention\n  grad_reduce_dtype: storage\n"),
      "deck t.yaml line 3: run.grad_reduce_dtype sets the precision of the layer stack's weight-gradient "
      "sums (run.mode model); attention mode has no weights");
  EXPECT_EQ(
      resolve_error("run:\n  dtype: bf16\n  initial_loss_scale: 1024\n"),
      "deck t.yaml line 3: run.initial_loss_scale is where fp16's dynamic loss scale starts; this point's "
      "scale is 1 in bf16");
  EXPECT_EQ(
      resolve_error("run:\n  dtype: fp16\n  loss_scale: 8\n  initial_loss_scale: 1024\n"),
      "deck t.yaml line 4: run.initial_loss_scale is where fp16's dynamic loss scale starts; this point's "
      "scale is fixed (run.loss_scale 8)");
  // Their defaults change nothing and are let through in attention mode.
  EXPECT_EQ(
      deck(
          "run: {mode: attention, loss_scale: dynamic, grad_reduce_dtype: fp32, initial_loss_scale: 65536}\n")
          .resolve()
          .run.mode,
      Mode::attention);
}

TEST(DeckErrors, DeviceCapabilitiesNameTheKindsThatHaveThem) {
  EXPECT_EQ(resolve_error("attention: {block_k: 128}\nrun: {device: cuda}\n"),
            "deck t.yaml line 1: attention.block_q/block_k are the host kernel's tiles; run.device cuda "
            "chooses its own per head dim (the results' device_config names them)");
  EXPECT_EQ(resolve_error("attention: {kernels: sm80}\n"),
            "deck t.yaml line 1: attention.kernels sm80 picks the cuda device's flash kernels; run.device "
            "kokkos has one attention kernel (leave attention.kernels at auto)");
  EXPECT_NO_THROW(deck("attention: {kernels: sm90}\nrun: {device: cuda, comm: nccl}\n").resolve());
  // The families that mask packed documents in their kernels, by their deck spelling.
  EXPECT_NO_THROW(deck("attention: {kernels: sm80-documents}\nrun: {device: cuda}\n").resolve());
  EXPECT_EQ(resolve_error("attention: {kernels: sm90-documents}\n"),
            "deck t.yaml line 1: attention.kernels sm90-documents picks the cuda device's flash kernels; "
            "run.device kokkos has one attention kernel (leave attention.kernels at auto)");
  // The sm90 forward with the one-pass backward, by its deck spelling.
  EXPECT_NO_THROW(deck("attention: {kernels: sm90-onepass}\nrun: {device: cuda}\n").resolve());
  EXPECT_EQ(resolve_error("attention: {kernels: sm90-onepass}\n"),
            "deck t.yaml line 1: attention.kernels sm90-onepass picks the cuda device's flash kernels; "
            "run.device kokkos has one attention kernel (leave attention.kernels at auto)");
  EXPECT_NO_THROW(deck("sequence: {length: 10, documents: [4, 6]}\nattention: {block_k: 128}\n").resolve());
  // The GPU's layer kernel sets: tuned is the cuda device's alone; standard is every device's.
  EXPECT_EQ(resolve_error("run: {layer_kernels: tuned}\n"),
            "deck t.yaml line 1: run.layer_kernels tuned picks the cuda device's layer kernels; run.device "
            "kokkos has one set (leave run.layer_kernels at standard)");
  EXPECT_EQ(deck("run: {layer_kernels: standard}\n").resolve().run.layer_kernels, LayerKernels::standard);
  EXPECT_EQ(deck("run: {device: cuda, layer_kernels: tuned}\n").resolve().run.layer_kernels,
            LayerKernels::tuned);
  EXPECT_EQ(resolve_error("run: {device: cuda, layer_kernels: fused}\n"),
            "deck t.yaml line 1: run.layer_kernels must be one of standard, tuned; got 'fused'");
}

// Issue 16 item 5: a backend option set for a backend that does not read it is an error
// naming the key, the backend and the backends that do read it.
TEST(DeckErrors, KeysThatDoNotApplyToTheBackend) {
  EXPECT_EQ(
      resolve_error("attention:\n  backend: ring\n  window_size: 2\n"),
      "deck t.yaml line 3: attention.window_size does not apply to attention.backend ring (it applies to "
      "double_ring)");
  EXPECT_EQ(
      resolve_error("attention:\n  backend: usp\n  intra: ulysses\n"),
      "deck t.yaml line 3: attention.intra does not apply to attention.backend usp (it applies to burst)");
  EXPECT_EQ(
      resolve_error("attention:\n  backend: ring\n  ulysses_degree: 3\n"),
      "deck t.yaml line 3: attention.ulysses_degree does not apply to attention.backend ring (it applies to "
      "ulysses, usp, double_ring, burst)");
  EXPECT_EQ(resolve_error("attention:\n  ring_type: zigzag\n"),  // the default backend, local
            "deck t.yaml line 2: attention.ring_type does not apply to attention.backend local (it applies "
            "to ring, "
            "usp, double_ring, burst)");
  EXPECT_EQ(
      input_error_of([] {
        Deck d = deck("attention:\n  backend: allgather\n");
        d.set("attention.bwd_comm=kv");
        d.expand();
      }),
      "--set attention.bwd_comm=kv: attention.bwd_comm does not apply to attention.backend allgather (it "
      "applies to burst)");
  // The default value changes nothing, so it is no error; keys every backend reads never are.
  EXPECT_NO_THROW(deck("attention:\n  backend: ring\n  ulysses_degree: 1\n  window_size: 0\n").resolve());
  EXPECT_NO_THROW(deck("attention:\n  backend: local\n  causal: false\n  block_q: 64\n").resolve());
  EXPECT_NO_THROW(deck("attention:\n  backend: burst\n  ring_type: stripe\n  intra: ulysses\n").resolve());
}

// In a sweep over backends each point is checked with its own backend: a zipped key may
// hold its default where the point's backend does not take it, but not another value.
TEST(DeckErrors, BackendKeysAreCheckedPerPoint) {
  const auto points = deck(R"(
attention:
  backend: [ring, usp, double_ring]
  ulysses_degree: [1, 2, 2]
  window_size: [0, 0, 2]
sweep:
  zip: [attention.backend, attention.ulysses_degree, attention.window_size]
)")
                          .expand();
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[2].config.attention.options.integer("attention.window_size"), 2);
  EXPECT_EQ(resolve_error(R"(
attention:
  backend: [ring, usp]
  ulysses_degree: [2, 2]
sweep:
  zip: [attention.backend, attention.ulysses_degree]
)"),
            "deck t.yaml line 4 (point attention.backend=ring attention.ulysses_degree=2): "
            "attention.ulysses_degree "
            "does not apply to attention.backend ring (it applies to ulysses, usp, double_ring, burst)");
  // Unzipped, the scalar key meets every backend of the sweep.
  EXPECT_EQ(resolve_error("attention:\n  backend: [usp, allgather]\n  ring_type: zigzag\n"),
            "deck t.yaml line 3 (point attention.backend=allgather): attention.ring_type does not apply to "
            "attention.backend allgather (it applies to ring, usp, double_ring, burst)");
}

// The deck's view of the backends is the registry's (config/backend_catalog.hpp).
TEST(DeckBackends, TheDeckTakesNamesAndOptionsFromTheRegistry) {
  const auto& registry = backend_registry();
  const auto& catalog = backend_catalog();
  ASSERT_EQ(catalog.size(), registry.size());
  for (std::size_t i = 0; i < registry.size(); ++i) {
    const BackendInfo& b = registry[i];
    EXPECT_EQ(catalog[i].name, b.name);
    ASSERT_EQ(catalog[i].keys.size(), b.keys.size()) << b.name;
    for (std::size_t k = 0; k < b.keys.size(); ++k) EXPECT_EQ(catalog[i].keys[k].key, b.keys[k].key);
    EXPECT_FALSE(b.summary.empty()) << b.name;
    EXPECT_TRUE(b.degrees && b.buffer_bytes && b.validate && b.create)
        << b.name << " leaves a fact undeclared";
    for (const auto& key : b.keys) {
      const deck_detail::KeySpec* spec = deck_detail::find_key(key.key);
      ASSERT_NE(spec, nullptr) << b.name << " declares " << key.key << ", which the schema lacks";
      EXPECT_EQ(spec->section, "attention") << key.key;
    }
    EXPECT_NO_THROW(deck("attention:\n  backend: " + b.name + "\n").resolve()) << b.name;
  }
}

TEST(DeckErrors, MachineProfiles) {
  const std::string missing = resolve_error("machine:\n  profile: h100\n");
  EXPECT_EQ(missing.rfind(
                "deck t.yaml line 2: machine profile 'h100' not found (available: a100-80gb, a100-80gb-hdr, "
                "a800-80gb, generic-cpu, h100-80gb, h100-sxm-ndr, h200-141gb, h800-80gb, rtx-4090d, "
                "rtx-4090d-pcie4, rtx-4090d-pcie4-nop2p; "
                "searched: ",
                0),
            0u)
      << missing;
  EXPECT_EQ(resolve_error("machine:\n  profile: ../secrets\n"),
            "deck t.yaml line 2: machine.profile must be 'measure' or a profile name (letters, digits, '-', "
            "'_', '.'), "
            "got '../secrets'");
  // A name the system cannot look up says why, not a filesystem exception's text.
  const std::string name(300, 'p');
  EXPECT_EQ(resolve_error("machine:\n  profile: " + name + "\n"),
            "deck t.yaml line 2: machine profile '" + name + "': File name too long");
  EXPECT_EQ(resolve_error("run:\n  dtype: bf16\n"),
            "deck t.yaml: machine profile 'generic-cpu' has no peak_tflops for bf16; set machine.peak_tflops "
            "or use "
            "machine.profile: measure");
  EXPECT_EQ(
      resolve_error("machine:\n  profile: measure\n  peak_tflops: 5\n"),
      "deck t.yaml line 2: machine.peak_tflops is given, so machine.profile: measure has nothing to measure; "
      "drop one of them");
}

TEST(DeckErrors, BadYamlAndStructure) {
  EXPECT_EQ(resolve_error("model:\n  layers: [1, 2\n").rfind("deck t.yaml line 3: invalid YAML: ", 0), 0u);
  EXPECT_EQ(resolve_error("model:\n  layers: 1\n   heads: 2\n").rfind("deck t.yaml line ", 0), 0u);
  EXPECT_EQ(resolve_error("- model\n"),
            "deck t.yaml line 1: a deck is a mapping of sections (model:, sequence:, ...)");
  EXPECT_EQ(resolve_error("model: {}\n---\nrun: {}\n"),
            "deck t.yaml: holds 2 YAML documents ('---'); a deck is one");
  EXPECT_EQ(resolve_error("model:\n  layers: 2\n  layers: 3\n"),
            "deck t.yaml line 3: model.layers is given twice (lines 2 and 3)");
  EXPECT_EQ(resolve_error("model: {}\nrun: {}\nmodel: {}\n"),
            "deck t.yaml line 3: model is given twice (lines 1 and 3)");
  // Inside a value too: yaml-cpp keeps both, and the first would win.
  EXPECT_EQ(
      resolve_error("sequence:\n  length: 8\n  documents:\n    uniform: [1, 2]\n    seed: 1\n    seed: 2\n"),
      "deck t.yaml line 6: sequence.documents.seed is given twice (lines 5 and 6)");
  EXPECT_EQ(
      input_error_of([] { deck("").set("sequence.documents={rows: [[4]], rows: [[2, 2]]}"); }),
      "--set sequence.documents={rows: [[4]], rows: [[2, 2]]} line 1: rows is given twice (lines 1 and 1)");
  EXPECT_EQ(resolve_error("sequence:\n  length: []\n"),
            "deck t.yaml line 2: sequence.length has an empty sweep list");
  EXPECT_EQ(resolve_error("sequence:\n  length: [[1, 2]]\n"),
            "deck t.yaml line 2: sequence.length must be a single value, got a nested list");
  // The reason the file cannot be read, from the system.
  EXPECT_EQ(input_error_of([] { Deck::from_file("/nonexistent/deck.yaml"); }),
            "deck /nonexistent/deck.yaml: cannot read the file: No such file or directory");
  const std::string too_long = "/tmp/" + std::string(PATH_MAX, 'd') + ".yaml";
  EXPECT_EQ(input_error_of([&] { Deck::from_file(too_long); }),
            "deck " + too_long + ": cannot read the file: File name too long");
}

TEST(DeckErrors, SpecialFilesAreRefusedBeforeTheyAreOpened) {
  // A FIFO would block the read for ever: refused by its type, never opened.
  const fs::path dir = fs::temp_directory_path() / ("minictx_deck_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string fifo = (dir / "deck.yaml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(input_error_of([&] { Deck::from_file(fifo); }),
            "deck " + fifo + ": is a FIFO, not a regular file");
  EXPECT_EQ(input_error_of([&] { Deck::from_file(dir.string()); }),
            "deck " + dir.string() + ": is a directory, not a regular file");
  EXPECT_EQ(input_error_of([] { Deck::from_file("/dev/null"); }),
            "deck /dev/null: is a character device, not a regular file");
  fs::remove_all(dir);
}

TEST(DeckErrors, WholeRunKeysCannotBeSwept) {
  // The comm, the device, the topology and the results file are set up once per run.
  for (const char* key : {"topology.ranks_per_node=[1,2]", "run.device=[kokkos,cuda]", "run.comm=[mpi,nccl]",
                          "output.file=[a.h5,b.h5]", "output.overwrite=[true,false]"}) {
    Deck d = deck("");
    d.set(key);
    const std::string name = std::string(key).substr(0, std::string(key).find('='));
    EXPECT_EQ(input_error_of([&] { d.expand(); }),
              "--set " + std::string(key) + ": " + name +
                  " applies to the whole run and cannot be swept; run one "
                  "job per value");
  }
  Deck one = deck("topology:\n  ranks_per_node: [2]\n");  // a list of one value sweeps nothing
  EXPECT_EQ(one.expand().size(), 1u);
}

TEST(DeckSet, OverridesTakePrecedence) {
  Deck d = deck("model:\n  preset: tiny\n  layers: 2\n");
  d.set("model.layers=4");
  d.set("run.iters=9");
  d.set("model.layers=5");  // the last --set wins
  d.set("output.file=");    // an empty value is the empty string
  const RunConfig c = d.resolve();
  EXPECT_EQ(c.model.layers, 5);
  EXPECT_EQ(c.model.d_model, 256);
  EXPECT_EQ(c.run.iters, 9);
  EXPECT_EQ(c.output.file, "");

  Deck s = deck("model:\n  preset: tiny\n");
  s.set("sequence.length=[1024, 2048]");
  const auto points = s.expand();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].config.sequence.length, 2048);
}

TEST(DeckSet, Errors) {
  Deck d = deck("");
  EXPECT_EQ(input_error_of([&] { d.set("model.layerz=4"); }),
            "--set model.layerz=4: unknown key 'model.layerz' (did you mean 'model.layers'?)");
  EXPECT_EQ(input_error_of([&] { d.set("model.layers=four"); }),
            "--set model.layers=four: model.layers must be an integer, got 'four'");
  EXPECT_EQ(input_error_of([&] { d.set("model.layers"); }),
            "--set model.layers: expected section.key=value, e.g. model.layers=4");
  EXPECT_EQ(input_error_of([&] {
              d.set("model.layers=[1,");
            }).rfind("--set model.layers=[1,: the value is not valid YAML (", 0),
            0u);
  EXPECT_EQ(input_error_of([&] { d.set("model.layers={a: 1}"); }),
            "--set model.layers={a: 1}: the value must be a single value or a list such as [1,2]");
  EXPECT_EQ(input_error_of([&] { d.set("sweep.zip=[model.layerz]"); }),
            "--set sweep.zip=[model.layerz]: sweep.zip names an unknown key 'model.layerz' (did you mean "
            "'model.layers'?)");
  // Errors found at expansion name the --set that caused them.
  d.set("model.kv_heads=3");
  EXPECT_EQ(input_error_of([&] { d.resolve(); }),
            "--set model.kv_heads=3: model.heads (8) must be a multiple of model.kv_heads (3) for "
            "grouped-query attention");
}

TEST(DeckSweep, CartesianProductInDeckOrder) {
  const auto points = deck(R"(
sequence:
  length: [1024, 2048, 4096]
attention:
  backend: ring
  ring_type: [basic, zigzag]
machine:
  profile: measure
)")
                          .expand();
  ASSERT_EQ(points.size(), 6u);
  const std::vector<std::string> labels = {
      "sequence.length=1024 attention.ring_type=basic", "sequence.length=1024 attention.ring_type=zigzag",
      "sequence.length=2048 attention.ring_type=basic", "sequence.length=2048 attention.ring_type=zigzag",
      "sequence.length=4096 attention.ring_type=basic", "sequence.length=4096 attention.ring_type=zigzag"};
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].label, labels[i]);
    EXPECT_EQ(points[i].varied.size(), 2u);
    EXPECT_EQ(points[i].config.attention.backend, "ring");
  }
  EXPECT_EQ(points[3].config.sequence.length, 2048);
  EXPECT_EQ(points[3].config.attention.options.choice("attention.ring_type"), "zigzag");
  EXPECT_EQ(points[3].varied.at("sequence.length"), "2048");
  EXPECT_EQ(points[3].varied.at("attention.ring_type"), "zigzag");

  // A single point has no label; a one-item list is a single point too.
  const auto one = deck("sequence:\n  length: [512]\n").expand();
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].label, "sequence.length=512");
  EXPECT_EQ(deck("").expand()[0].label, "");
  EXPECT_TRUE(deck("").expand()[0].varied.empty());
}

TEST(DeckSweep, ZipVariesKeysTogether) {
  const auto points = deck(R"(
sequence:
  length: [1024, 2048, 4096]
  batch: [4, 2, 1]
attention:
  backend: ring
  ring_type: [basic, zigzag]
sweep:
  zip: [sequence.batch, sequence.length]
)")
                          .expand();
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].label, "sequence.length=1024 sequence.batch=4 attention.ring_type=basic");
  EXPECT_EQ(points[1].label, "sequence.length=1024 sequence.batch=4 attention.ring_type=zigzag");
  EXPECT_EQ(points[2].label, "sequence.length=2048 sequence.batch=2 attention.ring_type=basic");
  EXPECT_EQ(points[5].label, "sequence.length=4096 sequence.batch=1 attention.ring_type=zigzag");
  for (const auto& p : points) EXPECT_EQ(p.config.sequence.length * p.config.sequence.batch, 4096);

  EXPECT_EQ(
      resolve_error("sequence:\n  length: [1, 2, 3]\n  batch: [1, 2]\nsweep:\n  zip: [sequence.length, "
                    "sequence.batch]\n"),
      "deck t.yaml line 5: sweep.zip lists must have equal lengths, but sequence.length has 3 values and "
      "sequence.batch has 2");
  EXPECT_EQ(resolve_error("sequence:\n  length: [1, 2]\nsweep:\n  zip: [sequence.length, sequence.batch]\n"),
            "deck t.yaml line 4: sweep.zip names 'sequence.batch', which is not a list in this deck");
  EXPECT_EQ(resolve_error("sweep:\n  zip: [sequence.lenght]\n"),
            "deck t.yaml line 2: sweep.zip names an unknown key 'sequence.lenght' (did you mean "
            "'sequence.length'?)");
  EXPECT_EQ(
      resolve_error("sweep:\n  zip: sequence.length\n"),
      "deck t.yaml line 2: sweep.zip must be a list of keys, e.g. [sequence.length, attention.backend]");
}

TEST(DeckSweep, EveryPointIsValidatedAndNamed) {
  EXPECT_EQ(resolve_error("model:\n  kv_heads: 4\n  heads: [8, 6]\n"),
            "deck t.yaml line 2 (point model.heads=6): model.heads (6) must be a multiple of model.kv_heads "
            "(4) for "
            "grouped-query attention");
  // A swept dtype meets a profile without that dtype.
  EXPECT_EQ(
      resolve_error("run:\n  dtype: [fp32, bf16]\nmachine:\n  profile: generic-cpu\n"),
      "deck t.yaml line 4 (point run.dtype=bf16): machine profile 'generic-cpu' has no peak_tflops for bf16; "
      "set machine.peak_tflops or use machine.profile: measure");
  EXPECT_EQ(
      resolve_error("sequence:\n  length: [1, 2]\n  batch: [1, 2, 3]\n"),
      "deck t.yaml: sweeps sequence.length, sequence.batch (6 points), but one configuration is needed here");
  const std::string big = input_error_of([] {
    deck(
        "sequence: {length: [1,2,3,4,5,6,7,8,9,10], batch: [1,2,3,4,5,6,7,8,9,10]}\n"
        "run: {iters: [1,2,3,4,5,6,7,8,9,10], warmup: [0,1,2,3,4,5,6,7,8,9]}\n"
        "attention: {block_q: [1,2]}\n")
        .expand();
  });
  EXPECT_EQ(big, "deck t.yaml: the sweep has more than 10000 points; split it into several decks");
}

TEST(DeckRoundTrip, ResolvedYamlReadsBackToTheSameConfig) {
  const auto points = deck(R"(
model:
  preset: llama-3-8b
  layers: [2, 4]
  rms_eps: 1e-6
sequence:
  length: [4096, 8192]
run:
  dtype: bf16
  seed: 42
machine:
  profile: [h100-80gb, measure]
output:
  file: "results/sweep.h5"
)")
                          .expand();
  ASSERT_EQ(points.size(), 8u);
  for (const auto& p : points) {
    SCOPED_TRACE(p.label);
    const RunConfig again = Deck::from_string(p.resolved_yaml, "resolved").resolve();
    expect_same(again, p.config);
    // Every key but sweep.zip is written out.
    for (const auto& k : deck_keys()) {
      if (k == "sweep.zip") continue;
      EXPECT_NE(p.resolved_yaml.find(k.substr(k.find('.') + 1) + ":"), std::string::npos) << k;
    }
  }
  EXPECT_EQ(points[0].config.machine.name, "H100-SXM5-80GB");
  EXPECT_EQ(points[0].config.machine.peak_tflops, 989);
  EXPECT_EQ(points[1].config.machine.name, "measured");
  EXPECT_EQ(points[1].config.machine.peak_tflops, 0);
}

TEST(DeckRoundTrip, ToYamlKeepsTheDeckAndTheOverrides) {
  Deck d = deck(R"(
sequence:
  length: [1024, 2048]
attention:
  ring_type: [basic, zigzag, stripe]
  backend: ring
sweep:
  zip: []
)");
  d.set("attention.ring_type=[zigzag, stripe]");
  d.set("model.preset=tiny");
  d.set("sequence.batch=[1, 2]");
  d.set("sweep.zip=[sequence.length, sequence.batch]");
  const std::string text = d.to_yaml();
  EXPECT_EQ(text.rfind("# minictx deck t.yaml\n# --set attention.ring_type=[zigzag, stripe]\n", 0), 0u)
      << text;

  const auto original = d.expand();
  const auto again = Deck::from_string(text, "again").expand();
  ASSERT_EQ(original.size(), 4u);
  ASSERT_EQ(again.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    EXPECT_EQ(again[i].label, original[i].label);
    EXPECT_EQ(again[i].resolved_yaml, original[i].resolved_yaml);
  }
  EXPECT_EQ(original[0].label, "sequence.length=1024 sequence.batch=1 attention.ring_type=zigzag");
}

TEST(DeckBuiltin, QuickstartIsTheShippedFile) {
  const fs::path file = repo / "inputs" / "quickstart.yaml";
  EXPECT_EQ(std::string(deck_detail::quickstart_text()), read_text(file));

  const Deck builtin = Deck::builtin_quickstart();
  EXPECT_EQ(builtin.name(), "builtin:quickstart");
  const RunConfig c = builtin.resolve();
  expect_same(c, Deck::from_file(file.string()).resolve());
  EXPECT_EQ(c.model.preset, "tiny");
  EXPECT_EQ(c.model.layers, 2);
  EXPECT_EQ(c.sequence.length, 1000);
  EXPECT_EQ(c.sequence.batch, 1);
  EXPECT_EQ(c.attention.backend, "local");
  EXPECT_TRUE(c.attention.causal);
  EXPECT_EQ(c.run.mode, Mode::model);
  EXPECT_EQ(c.run.warmup, 1);
  EXPECT_EQ(c.run.iters, 3);
  EXPECT_EQ(c.run.seed, 1234u);
  EXPECT_EQ(c.machine.profile, "measure");
  EXPECT_EQ(c.machine.name, "measured");
  EXPECT_EQ(c.machine.peak_tflops, 0);
  EXPECT_EQ(c.output.file, "");
}

TEST(DeckMachines, ShippedProfilesAllLoad) {
  const std::map<std::string, std::pair<std::string, double>> bf16 = {
      {"a100-80gb", {"A100-SXM4-80GB", 312}},
      {"a800-80gb", {"A800-SXM4-80GB", 312}},
      {"h100-80gb", {"H100-SXM5-80GB", 989}},
      {"h800-80gb", {"H800-SXM5-80GB", 989}},
      {"rtx-4090d", {"RTX-4090D", 147.1}},
      // The profiles of `minictx project` serve the run too (their projection: section is skipped).
      {"a100-80gb-hdr", {"A100-SXM4-80GB", 312}},
      {"h100-sxm-ndr", {"H100-SXM5-80GB", 989}},
      {"rtx-4090d-pcie4", {"RTX-4090D", 147.1}},
      {"rtx-4090d-pcie4-nop2p", {"RTX-4090D", 147.1}},
      {"h200-141gb", {"H200-SXM-141GB", 989}},
  };
  for (const auto& [profile, expected] : bf16) {
    const RunConfig c = deck("run: {dtype: bf16}\nmachine: {profile: " + profile + "}\n").resolve();
    EXPECT_EQ(c.machine.name, expected.first);
    EXPECT_EQ(c.machine.peak_tflops, expected.second);
  }
  EXPECT_EQ(deck("machine: {profile: a100-80gb}").resolve().machine.peak_tflops, 19.5);
  EXPECT_EQ(deck("run: {dtype: fp16}\nmachine: {profile: h100-80gb}").resolve().machine.peak_tflops, 989);
  EXPECT_EQ(deck("machine: {profile: generic-cpu}").resolve().machine.peak_tflops, 0.05);
  std::size_t files = 0;
  for (const auto& f : fs::directory_iterator(repo / "inputs" / "machines")) {
    ++files;
    EXPECT_NO_THROW(deck("machine: {profile: " + f.path().stem().string() + "}").resolve()) << f.path();
  }
  EXPECT_EQ(files, 11u);
}

TEST(DeckMachines, SearchOrder) {
  TempDir tmp;
  tmp.write("decks/machines/site-gpu.yaml", "name: Site GPU\npeak_tflops: {fp32: 10}\n");
  tmp.write("decks/d.yaml", "machine:\n  profile: site-gpu\n");
  tmp.write("decks/a.yaml", "machine:\n  profile: a100-80gb\n");
  tmp.write("data/machines/site-gpu.yaml", "name: Data GPU\npeak_tflops: {fp32: 20}\n");
  tmp.write("bad/machines/broken.yaml", "name: Broken\npeak_tflops: {fp32: 0}\n");
  tmp.write("bad/d.yaml", "machine:\n  profile: broken\n");
  tmp.write("bad/e.yaml", "machine:\n  profile: extra\n");
  tmp.write("bad/machines/extra.yaml", "name: X\nspeed: 3\n");
  const std::string d = (tmp.path / "decks" / "d.yaml").string();

  // <deck dir>/machines, and the source tree behind it for the shipped profiles.
  EXPECT_EQ(Deck::from_file(d).resolve().machine.name, "Site GPU");
  EXPECT_EQ(Deck::from_file((tmp.path / "decks" / "a.yaml").string()).resolve().machine.name,
            "A100-SXM4-80GB");
  // A deck given as text has no directory of its own.
  EXPECT_NE(resolve_error("machine:\n  profile: site-gpu\n").find("not found"), std::string::npos);

  // $MINICTX_DATA_DIR/machines comes first.
  setenv("MINICTX_DATA_DIR", (tmp.path / "data").c_str(), 1);
  const RunConfig c = Deck::from_file(d).resolve();
  unsetenv("MINICTX_DATA_DIR");
  EXPECT_EQ(c.machine.name, "Data GPU");
  EXPECT_EQ(c.machine.peak_tflops, 20);

  const auto dirs = machine_profile_dirs(tmp.path / "decks");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], fs::weakly_canonical(tmp.path / "decks" / "machines"));
  EXPECT_EQ(dirs[1], fs::weakly_canonical(repo / "inputs" / "machines"));

  const std::string broken =
      input_error_of([&] { Deck::from_file((tmp.path / "bad" / "d.yaml").string()).resolve(); });
  EXPECT_NE(broken.find("broken.yaml line 2: peak_tflops.fp32 must be greater than 0, got 0"),
            std::string::npos)
      << broken;
  // A key given twice: yaml-cpp would read the first; refused with both lines.
  tmp.write("bad/machines/twice.yaml", "name: T\npeak_tflops:\n  fp32: 1\n  fp32: 80\n");
  tmp.write("bad/t.yaml", "machine:\n  profile: twice\n");
  const std::string twice =
      input_error_of([&] { Deck::from_file((tmp.path / "bad" / "t.yaml").string()).resolve(); });
  EXPECT_NE(twice.find("twice.yaml line 4: peak_tflops.fp32 is given twice (lines 3 and 4)"),
            std::string::npos)
      << twice;
  const std::string extra =
      input_error_of([&] { Deck::from_file((tmp.path / "bad" / "e.yaml").string()).resolve(); });
  EXPECT_NE(
      extra.find("extra.yaml line 2: unknown key 'speed' (a profile has name, peak_tflops and projection)"),
      std::string::npos)
      << extra;
}

// Adding a backend (docs/architecture.md, "Adding a backend") is its folder, one registration line and
// its docs: a backend the docs miss, or a backend folder that is not registered, fails here.
TEST(DeckDocs, EveryBackendIsRegisteredAndDocumented) {
  const std::string guide = read_text(repo / "docs" / "user-guide.md");
  const std::string inputs = read_text(repo / "inputs" / "README.md");
  const auto backend_key_row = inputs.find("| `backend` |");
  ASSERT_NE(backend_key_row, std::string::npos) << "inputs/README.md has no row for attention.backend";
  const std::string key_row =
      inputs.substr(backend_key_row, inputs.find('\n', backend_key_row) - backend_key_row);
  for (const auto& b : backend_registry()) {
    EXPECT_NE(guide.find("\n| `" + b.name + "` |"), std::string::npos)
        << "docs/user-guide.md's backend table has no row for " << b.name;
    EXPECT_NE(key_row.find("`" + b.name + "`"), std::string::npos)
        << "inputs/README.md's attention.backend row does not name " << b.name;
  }
  std::size_t folders = 0;
  for (const auto& entry : fs::directory_iterator(repo / "backends")) {
    if (!entry.is_directory() || entry.path().filename() == "engine") continue;
    ++folders;
    const std::string name = entry.path().filename().string();
    const auto& r = backend_registry();
    EXPECT_TRUE(std::any_of(r.begin(), r.end(), [&](const BackendInfo& b) { return b.name == name; }))
        << "backends/" << name << "/ is not registered in backends/registry.cpp";
  }
  EXPECT_EQ(folders, backend_registry().size());
}

// Adding a backend with a key of its own (docs/architecture.md, "Adding a backend") is its
// folder, the registry, its tests and its docs: every key a backend declares in its
// BackendInfo is in the schema with its choices, limits and default, documented in
// inputs/README.md (its row and its backend's row of the options table), sweepable,
// validated, written in the resolved deck, and refused for a backend that does not declare it.
TEST(DeckDocs, EveryBackendKeyIsInTheSchemaDocumentedSweepableAndValidated) {
  const std::string readme = read_text(repo / "inputs" / "README.md");
  const auto heading = readme.find("### `attention`");
  ASSERT_NE(heading, std::string::npos);
  const std::string section = readme.substr(heading, readme.find("\n### ", heading + 1) - heading);
  std::size_t declared = 0;
  for (const auto& b : backend_registry()) {
    const auto options_row = section.find("`" + b.name + "`", section.find("| backend | its options |"));
    ASSERT_NE(options_row, std::string::npos) << "inputs/README.md's options table has no row for " << b.name;
    const std::string row = section.substr(options_row, section.find('\n', options_row) - options_row);
    if (b.keys.empty()) {
      EXPECT_NE(row.find("none"), std::string::npos) << row;
    }
    for (const BackendKey& k : b.keys) {
      ++declared;
      ASSERT_EQ(k.key.rfind("attention.", 0), 0u) << k.key;
      const std::string leaf = k.key.substr(k.key.find('.') + 1);
      EXPECT_FALSE(k.doc.empty()) << k.key;
      EXPECT_NE(section.find("| `" + leaf + "` |"), std::string::npos)
          << "inputs/README.md has no row for " << k.key;
      EXPECT_NE(row.find("`" + leaf + "`"), std::string::npos)
          << "the options row of " << b.name << " misses " << leaf;
      const deck_detail::KeySpec* spec = deck_detail::find_key(k.key);
      ASSERT_NE(spec, nullptr) << k.key << " is not in the schema";
      EXPECT_EQ(spec->choices, k.choices) << k.key;
      const RunConfig plain = deck("attention: {backend: " + b.name + "}\n").resolve();
      EXPECT_EQ(spec->read(plain), k.default_value) << k.key;

      // Two values that pass the deck's checks, the second not the default; and one refused.
      const bool choice = !k.choices.empty();
      const std::string low = choice ? k.choices[0] : std::to_string(k.min);
      const std::string high = choice ? k.choices[1] : std::to_string(k.min + 1);
      const std::string other = deck_detail::format_value(k.default_value) == high ? low : high;
      const auto points =
          deck("attention: {backend: " + b.name + ", " + leaf + ": [" + low + ", " + high + "]}\n").expand();
      ASSERT_EQ(points.size(), 2u) << k.key;
      EXPECT_EQ(points[1].label, k.key + "=" + high);
      EXPECT_EQ(deck_detail::format_value(spec->read(points[1].config)), high) << k.key;
      EXPECT_NE(points[1].resolved_yaml.find("  " + leaf + ": " + high + "\n"), std::string::npos)
          << points[1].resolved_yaml;
      const std::string bad = choice ? "nope" : std::to_string(k.min - 1);
      EXPECT_NE(resolve_error("attention: {backend: " + b.name + ", " + leaf + ": " + bad + "}\n")
                    .find(choice ? "must be one of" : "must be at least"),
                std::string::npos)
          << k.key;
      EXPECT_NE(resolve_error("attention: {" + leaf + ": " + other + "}\n")
                    .find(k.key + " does not apply to attention.backend local"),
                std::string::npos)
          << k.key;
    }
  }
  EXPECT_GE(declared, backend_keys().size());
  EXPECT_FALSE(backend_keys().empty());
}

TEST(DeckDocs, ReadmeDescribesEveryKeyAndPreset) {
  const std::string readme = read_text(repo / "inputs" / "README.md");
  ASSERT_FALSE(readme.empty());
  // Each key has a table row "| `leaf` |" under its section's heading.
  for (const auto& k : deck_keys()) {
    const std::string section = k.substr(0, k.find('.'));
    const std::string leaf = k.substr(k.find('.') + 1);
    const auto heading = readme.find("### `" + section + "`");
    ASSERT_NE(heading, std::string::npos) << section;
    const auto next = readme.find("\n### ", heading + 1);
    EXPECT_NE(readme.substr(heading, next - heading).find("| `" + leaf + "` |"), std::string::npos) << k;
  }
  for (const auto& p : model_presets()) EXPECT_NE(readme.find("`" + p + "`"), std::string::npos) << p;

  // The example deck at the top is a valid sweep.
  const auto start = readme.find("```yaml\n") + 8;
  const auto example =
      Deck::from_string(readme.substr(start, readme.find("```", start) - start), "README").expand();
  ASSERT_EQ(example.size(), 3u);
  EXPECT_EQ(example[2].label, "sequence.length=65536");
  EXPECT_EQ(example[2].config.model.layers, 4);
  EXPECT_EQ(example[2].config.machine.peak_tflops, 989);
}

TEST(DeckDiff, NamesTheFirstDifferingKeyOfTwoResolvedDecks) {
  const std::vector<SweepPoint> a = deck("sequence:\n  length: [256, 512]\n").expand();
  const std::vector<SweepPoint> b = deck("sequence:\n  length: [256, 1024]\n").expand();
  EXPECT_FALSE(first_difference(a[0].resolved_yaml, b[0].resolved_yaml, {}));
  const auto d = first_difference(a[1].resolved_yaml, b[1].resolved_yaml, {});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "sequence.length");
  EXPECT_EQ(d->old_value, "512");
  EXPECT_EQ(d->new_value, "1024");
  // Deck order: model comes before sequence, so a change there is named first.
  const std::vector<SweepPoint> c = deck("model:\n  layers: 3\nsequence:\n  length: 1024\n").expand();
  EXPECT_EQ(first_difference(a[1].resolved_yaml, c[0].resolved_yaml, {})->key, "model.layers");
}

TEST(DeckDiff, IgnoredSectionsAndAbsentKeys) {
  const std::string old_deck = "run:\n  iters: 3\noutput:\n  file: a.h5\n  gone: 1\n";
  const std::string new_deck = "run:\n  iters: 3\n  seed: 7\noutput:\n  file: b.h5\n";
  const auto added = first_difference(old_deck, new_deck, {"output"});
  ASSERT_TRUE(added);
  EXPECT_EQ(added->key, "run.seed");
  EXPECT_EQ(added->old_value, "(absent)");
  EXPECT_FALSE(first_difference(old_deck, "run:\n  iters: 3\n", {"output"}));
  const auto removed = first_difference(old_deck, "run:\n  iters: 3\noutput:\n  file: a.h5\n", {});
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->key, "output.gone");
  EXPECT_EQ(removed->new_value, "(absent)");
  EXPECT_THROW(first_difference("[1, 2]", new_deck, {}), Error);
}

TEST(Benchmark, VerificationRoleTakesTheClassScaleAndVerifies) {
  const std::string cls =
      "benchmark: {class: c, verify_length: 512, verify_layers: 1}\nmodel: {preset: tiny, layers: 4}\n"
      "sequence: {length: 8192}\n";
  const RunConfig measured = deck(cls).resolve();
  EXPECT_EQ(measured.sequence.length, 8192);
  EXPECT_EQ(measured.model.layers, 4);
  EXPECT_FALSE(measured.run.verify);
  Deck v = deck(cls);
  v.set("benchmark.role=verification");
  const RunConfig verification = v.resolve();
  EXPECT_EQ(verification.sequence.length, 512);
  EXPECT_EQ(verification.model.layers, 1);
  EXPECT_TRUE(verification.run.verify);
  EXPECT_NE(resolve_error("benchmark: {role: verification}\n").find("needs a class deck"), std::string::npos);
  EXPECT_NE(resolve_error("benchmark: {class: c, role: verification}\n").find("benchmark.verify_length"),
            std::string::npos);
  EXPECT_NE(resolve_error("benchmark: {role: verify}\n").find("measurement"), std::string::npos);
}

TEST(Benchmark, RunRulesFixTheProblemAndFreeTheImplementation) {
  for (const char* fixed :
       {"model.layers", "model.d_model", "model.preset", "sequence.length", "sequence.batch",
        "attention.causal", "run.dtype", "run.grad_reduce_dtype", "run.mode", "run.fwd_only",
        "run.input_scale", "benchmark.class", "benchmark.verify_length", "some.future_key"})
    EXPECT_FALSE(run_rule(fixed).allowed) << fixed;
  for (const char* free :
       {"attention.backend", "attention.ring_type", "attention.ulysses_degree", "attention.block_q",
        "run.comm", "run.device", "run.layer_kernels", "run.checkpointing", "run.loss_scale", "run.iters",
        "topology.ranks_per_node", "topology.world_size", "machine.profile", "output.file"})
    EXPECT_TRUE(run_rule(free).allowed) << free;
  EXPECT_TRUE(verification_may_differ("sequence.length"));
  EXPECT_TRUE(verification_may_differ("model.layers"));
  EXPECT_FALSE(verification_may_differ("attention.backend"));
  EXPECT_FALSE(verification_may_differ("run.dtype"));
  EXPECT_FALSE(verification_may_differ("model.heads"));
}

TEST(DeckDiff, AllDifferencesInOrder) {
  const auto d = all_differences("a: {x: 1, y: 2}\nb: {z: 3}\n", "a: {x: 1, y: 5}\nb: {z: 4, w: 0}\n", {});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].key, "a.y");
  EXPECT_EQ(d[1].key, "b.z");
  EXPECT_EQ(d[2].key, "b.w");
  EXPECT_EQ(d[2].old_value, "(absent)");
}

// sequence.documents is list-valued: a list of lengths is one packing, a list of packings
// a sweep; its errors name the key and both numbers.
TEST(DeckDocuments, FormsSweepsAndRoundTrips) {
  const RunConfig one = deck("sequence: {length: 10, documents: [3, 1, 6]}").resolve();
  EXPECT_EQ(one.sequence.documents.lengths, (std::vector<std::vector<int64_t>>{{3, 1, 6}}));
  EXPECT_FALSE(one.sequence.documents.per_row);
  EXPECT_EQ(to_text(one.sequence.documents), "[3, 1, 6]");
  Deck set = deck("sequence: {length: 10}");
  set.set("sequence.documents=[3,1,6]");
  ASSERT_EQ(set.expand().size(), 1u);
  EXPECT_EQ(set.resolve().sequence.documents.lengths, one.sequence.documents.lengths);

  const auto sweep =
      deck("sequence: {length: 10, documents: [[3, 7], none, {uniform: [2, 5], seed: 9}]}").expand();
  ASSERT_EQ(sweep.size(), 3u);
  EXPECT_EQ(sweep[0].label, "sequence.documents=[3, 7]");
  EXPECT_TRUE(sweep[1].config.sequence.documents.none());
  EXPECT_EQ(to_text(sweep[2].config.sequence.documents), "{uniform: [2, 5], seed: 9}");

  const RunConfig rows =
      deck("sequence: {length: 10, batch: 2, documents: {rows: [[3, 7], [10]]}}").resolve();
  EXPECT_TRUE(rows.sequence.documents.per_row);
  EXPECT_EQ(to_text(rows.sequence.documents), "{rows: [[3, 7], [10]]}");
  EXPECT_TRUE(deck("sequence: {length: 10}").resolve().sequence.documents.none());

  for (const auto& p : {one, rows, sweep[2].config}) {
    const auto point = deck("sequence: {length: 10, batch: " + std::to_string(p.sequence.batch) +
                            ", documents: " + to_text(p.sequence.documents) + "}")
                           .expand()[0];
    // A resolved deck is sections of scalars (config/deck_diff.hpp): the packing is quoted.
    EXPECT_NE(point.resolved_yaml.find("documents: \"" + to_text(p.sequence.documents) + "\""),
              std::string::npos)
        << point.resolved_yaml;
    expect_same(Deck::from_string(point.resolved_yaml, "resolved").resolve(), point.config);
  }
  const auto diff = first_difference(sweep[0].resolved_yaml, sweep[2].resolved_yaml, {});
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(diff->key, "sequence.documents");
  EXPECT_EQ(diff->old_value, "[3, 7]");
}

TEST(DeckDocuments, ErrorsNameTheKeyAndBothNumbers) {
  EXPECT_EQ(resolve_error("sequence: {length: 301, documents: [100, 200]}"),
            "deck t.yaml line 1: sequence.documents lengths sum to 300 tokens, but sequence.length is 301");
  EXPECT_EQ(resolve_error("sequence: {length: 5, batch: 2, documents: {rows: [[5], [2, 2]]}}"),
            "deck t.yaml line 1: sequence.documents row 1 lengths sum to 4 tokens, but sequence.length is 5");
  EXPECT_EQ(resolve_error("sequence: {length: 5, documents: {rows: [[5], [5]]}}"),
            "deck t.yaml line 1: sequence.documents gives 2 rows of lengths, but sequence.batch is 1 (rows: "
            "takes one length list per batch row)");
  // A sweep names its point.
  EXPECT_NE(input_error_of([] {
              deck("sequence: {length: 5, documents: [[5], [4]]}").expand();
            }).find("(point sequence.documents=[4]): sequence.documents lengths sum to 4 tokens"),
            std::string::npos);
  for (const char* bad : {"[3, 0, 2]", "[3, x]", "[]", "{uniform: [5, 2], seed: 1}", "{uniform: [1, 2]}",
                          "{rows: [5]}", "{lengths: [5]}", "five"}) {
    const std::string msg = resolve_error(std::string("sequence: {length: 5, documents: ") + bad + "}");
    EXPECT_EQ(msg.rfind("deck t.yaml line 1: sequence.documents must be none, a list of document lengths", 0),
              0u)
        << bad << ": " << msg;
  }
  // The sum is exact: lengths that wrap a 64-bit sum to the length are refused.
  EXPECT_EQ(
      resolve_error("sequence: {length: 256, documents: [9223372036854775807, 9223372036854775807, 258]}"),
      "deck t.yaml line 1: sequence.documents lengths sum to more than 9223372036854775807 tokens, but "
      "sequence.length is 256");
  // One integer rule for every key and every length: a '+' as YAML allows.
  EXPECT_EQ(to_text(deck("sequence: {length: +256, documents: [+128, 128]}").resolve().sequence.documents),
            "[128, 128]");
  EXPECT_EQ(deck("sequence: {length: 8, documents: {uniform: [+2, 3], seed: +5}}")
                .resolve()
                .sequence.documents.seed,
            5u);
  // Generated lengths are listed: their count (batch times length / min) is bounded.
  EXPECT_EQ(
      resolve_error("sequence: {length: 100000000, batch: 4, documents: {uniform: [1, 9], seed: 1}}"),
      "deck t.yaml line 1: sequence.documents {uniform: [1, 9], seed: 1} may draw up to 400000000 "
      "documents (sequence.batch times sequence.length / min); at most 67108864 are supported: raise the "
      "minimum length");
  EXPECT_NE(resolve_error(
                "sequence: {length: 9223372036854775807, batch: 2, documents: {uniform: [1, 9], seed: 1}}")
                .find("may draw up to more than 9223372036854775807 documents"),
            std::string::npos);
  // Every device runs packed documents.
  EXPECT_EQ(deck("sequence: {length: 5, batch: 2, documents: {rows: [[5], [2, 3]]}}\nrun: {device: cuda}")
                .resolve()
                .sequence.documents.lengths.size(),
            2u);
}
