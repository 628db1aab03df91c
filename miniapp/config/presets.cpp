// Built-in content: the model presets and the quickstart deck.
#include "config/deck_schema.hpp"
#include "core/error.hpp"

namespace minictx {

std::vector<std::string> model_presets() {
  return {"custom", "tiny", "llama-7b", "llama-13b", "llama-3-8b", "gpt-oss-20b-like", "deepseek-v3-like"};
}

}  // namespace minictx

namespace minictx::deck_detail {

// Shapes from the published configs (Llama 2 7B/13B, Llama 3 8B; the attention of
// gpt-oss-20b and DeepSeek-V3, inputs/README.md, "Model presets"); "tiny" is the
// quickstart's, small enough for a few seconds on one core.
ModelShape preset_shape(const std::string& name) {
  ModelShape m;
  m.preset = name;
  auto shape = [&m](int layers, int d_model, int heads, int kv_heads, int head_dim, int ffn_hidden) {
    m.layers = layers;
    m.d_model = d_model;
    m.heads = heads;
    m.kv_heads = kv_heads;
    m.head_dim = head_dim;
    m.ffn_hidden = ffn_hidden;
  };
  if (name == "tiny") {
    shape(2, 256, 8, 4, 32, 688);
  } else if (name == "llama-7b") {
    shape(32, 4096, 32, 32, 128, 11008);
  } else if (name == "llama-13b") {
    shape(40, 5120, 40, 40, 128, 13824);
  } else if (name == "llama-3-8b") {
    shape(32, 4096, 32, 8, 128, 14336);
    m.rope_theta = 500000.0;
    m.vocab = 128256;
  } else if (name == "gpt-oss-20b-like") {
    // Its FFN dense, as wide as the 4 experts a token takes (4 × 2880).
    shape(24, 2880, 64, 8, 64, 11520);
    m.rope_theta = 150000.0;
    m.vocab = 201088;
  } else if (name == "deepseek-v3-like") {
    // MLA's attention after the up-projections: 128 heads of query/key dim 192 (128 + 64
    // rotary) and value dim 128, every head its own K/V; the FFN dense, as wide as the 8
    // routed and 1 shared experts a token takes (9 × 2048).
    shape(61, 7168, 128, 128, 192, 18432);
    m.head_dim_v = 128;
    m.rms_eps = 1e-6;
    m.vocab = 129280;
  } else if (name != "custom") {
    fail("no model preset '" + name + "'");  // the schema admits only model_presets()
  }
  return m;
}

// Kept byte-identical to inputs/quickstart.yaml (test_deck checks), so the program runs
// its quickstart even where the inputs/ folder was not installed.
const char* quickstart_text() {
  return R"yaml(# minictx quickstart: a two-layer model on one rank, a few seconds on one CPU core.
# Every key is described in inputs/README.md; keys left out take their defaults.

# The layer stack: the "tiny" preset (d_model 256, 8 heads, 4 KV heads, head_dim 32).
model:
  preset: tiny
  layers: 2

# Global tokens per sequence, and sequences per step.
sequence:
  length: 1000
  batch: 1

# Attention on a single rank, with a causal mask.
attention:
  backend: local
  causal: true

# Full training steps of the layer stack: one warm-up step, then three timed ones.
run:
  mode: model
  warmup: 1
  iters: 3
  seed: 1234

# A CPU has no datasheet peak worth quoting: calibrate it with a GEMM at run time.
machine:
  profile: measure

# Empty: outputs/minictx-<date>-<time>.h5.
output:
  file: ""
)yaml";
}

}  // namespace minictx::deck_detail
