// ReferenceCache: points with one problem share one fp64 reference, whatever their
// backend and options; another problem gets its own; a result is dropped after its last
// expected point.
#include <gtest/gtest.h>

#include "driver/verification.hpp"
#include "installed_backends.hpp"

namespace minictx {
namespace {

RunConfig attention_point(int64_t length) {
  RunConfig c;
  c.run.mode = Mode::attention;
  c.sequence.length = length;
  return c;
}

TEST(ReferenceCache, PointsOfOneProblemShareItsReference) {
  RunConfig a = attention_point(16);
  RunConfig b = a;  // the same problem computed another way
  b.attention.backend = "ring";
  b.attention.options.set("attention.ring_type", std::string("zigzag"));
  b.attention.block_q = 8;
  ReferenceCache cache;
  cache.expect(a);
  cache.expect(b);
  const auto first = cache.take(a);
  const auto second = cache.take(b);
  EXPECT_EQ(first.get(), second.get());
  reference::Problem p;
  p.seq_len = 16;
  p.heads = a.model.heads;
  p.kv_heads = a.model.kv_heads;
  p.head_dim = a.model.head_dim;
  p.seed = a.run.seed;
  const auto direct = reference::attention(p);
  EXPECT_EQ(first->attention.o, direct.o);
  EXPECT_EQ(first->attention.dk, direct.dk);
  // Both expected points had it: a third request computes it again.
  EXPECT_NE(cache.take(a).get(), first.get());
}

TEST(ReferenceCache, AnotherProblemHasItsOwn) {
  ReferenceCache cache;
  for (auto change :
       {+[](RunConfig& c) { c.sequence.length = 17; }, +[](RunConfig& c) { c.attention.causal = false; },
        +[](RunConfig& c) { c.model.kv_heads = c.model.heads; }, +[](RunConfig& c) { c.run.seed = 7; },
        +[](RunConfig& c) { c.run.mode = Mode::model; }, +[](RunConfig& c) { c.run.input_scale = 64; },
        // attention mode's inputs are stored in the run's dtype: a 16-bit run's problem
        +[](RunConfig& c) { c.run.dtype = DType::bf16; }}) {
    RunConfig a = attention_point(16), b = a;
    change(b);
    cache.expect(a);
    cache.expect(b);
    EXPECT_NE(cache.take(a).get(), cache.take(b).get());
  }
}

TEST(ReferenceCache, ModelPointsOfEveryDtypeShareOne) {
  RunConfig a = attention_point(16);
  a.run.mode = Mode::model;
  RunConfig b = a;
  b.run.dtype = DType::bf16;
  ReferenceCache cache;
  cache.expect(a);
  cache.expect(b);
  EXPECT_EQ(cache.take(a).get(), cache.take(b).get());
}

}  // namespace
}  // namespace minictx
