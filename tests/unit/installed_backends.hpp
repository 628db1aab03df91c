#pragma once
// The backends' own deck keys, and so their defaults, come from the registry as in the
// program: a test that reads a RunConfig's backend keys includes this to install it first.
#include <gtest/gtest.h>

#include "backends/backend.hpp"
#include "backends/registry.hpp"

namespace minictx {

struct InstalledBackends : ::testing::Environment {
  void SetUp() override { install_deck_backends(); }
};
inline const auto* const installed_backends = ::testing::AddGlobalTestEnvironment(new InstalledBackends);

}  // namespace minictx
