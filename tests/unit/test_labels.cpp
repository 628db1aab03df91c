// The labels a results point carries: attention-mode points describe the attention that
// ran and nothing of a layer stack that did not; a backend whose paper names its
// configurations gives the points that name.
#include <gtest/gtest.h>

#include "bench/labels.hpp"
#include "installed_backends.hpp"
#include "io/results_schema.hpp"

namespace minictx {
namespace {

namespace lk = schema::label_key;

RunConfig config_in(Mode mode) {
  RunConfig c;
  c.run.mode = mode;
  c.model.preset = "llama-7b";
  c.model.layers = 4;
  c.model.heads = 32;
  c.model.kv_heads = 8;
  c.model.head_dim = 128;
  return c;
}

TEST(Labels, ModelModePointsCarryTheLayerStack) {
  const auto labels = point_labels(config_in(Mode::model), Topology{});
  for (const char* key : lk::model_mode_only) EXPECT_EQ(labels.count(key), 1U) << key;
  EXPECT_EQ(labels.at(lk::model), "llama-7b");
  EXPECT_EQ(labels.at(lk::layers), "4");
}

TEST(Labels, AttentionModePointsCarryTheAttentionShapeAndNoLayerStack) {
  const auto labels = point_labels(config_in(Mode::attention), Topology{});
  for (const char* key : lk::model_mode_only) EXPECT_EQ(labels.count(key), 0U) << key;
  EXPECT_EQ(labels.at(lk::mode), "attention");
  EXPECT_EQ(labels.at(lk::heads), "32");
  EXPECT_EQ(labels.at(lk::kv_heads), "8");
  EXPECT_EQ(labels.at(lk::head_dim), "128");
}

// BurstAttention's figures name variants (A)-(D) by the intra-node scheme and the
// checkpointing; the report's burst column set and the plots read this label.
TEST(Labels, BurstPointsCarryThePapersVariantName) {
  const auto variant = [](Mode mode, const std::string& intra, Checkpointing ckpt) {
    RunConfig c = config_in(mode);
    c.attention.backend = "burst";
    c.attention.options.set("attention.intra", intra);
    c.run.checkpointing = ckpt;
    return point_labels(c, Topology{}).at(lk::variant);
  };
  EXPECT_EQ(variant(Mode::model, "ring", Checkpointing::full),
            "(A) BurstAttention w. DoubleRing w/o Selective Checkpointing");
  EXPECT_EQ(variant(Mode::model, "ulysses", Checkpointing::full),
            "(B) BurstAttention w. Ulysses(intra node) w/o Selective Checkpointing");
  EXPECT_EQ(variant(Mode::model, "ring", Checkpointing::selective), "(C) BurstAttention w. DoubleRing");
  EXPECT_EQ(variant(Mode::model, "ulysses", Checkpointing::selective),
            "(D) BurstAttention w. Ulysses(intra node)");
  EXPECT_EQ(variant(Mode::model, "ring", Checkpointing::selective_half),
            "BurstAttention w. DoubleRing w. seq-wise Selective Checkpointing");
  EXPECT_EQ(variant(Mode::model, "ring", Checkpointing::none),
            "BurstAttention w. DoubleRing (checkpointing: none)");
  // Attention mode runs no layer to recompute.
  EXPECT_EQ(variant(Mode::attention, "ring", Checkpointing::full), "BurstAttention w. DoubleRing");
  EXPECT_EQ(point_labels(config_in(Mode::model), Topology{}).count(lk::variant), 0U);  // the ring names none
}

}  // namespace
}  // namespace minictx
