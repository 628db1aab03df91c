// The labels a results point carries: attention-mode points describe the attention that
// ran and nothing of a layer stack that did not.
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

}  // namespace
}  // namespace minictx
