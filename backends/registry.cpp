// The one list of backends: a new backend adds its *_backend_info() here, and nothing
// else outside its folder names it (docs/architecture.md, "Adding a backend").
#include "backends/allgather/allgather_backend.hpp"
#include "backends/backend.hpp"
#include "backends/burst/burst_backend.hpp"
#include "backends/double_ring/double_ring_backend.hpp"
#include "backends/local/local_backend.hpp"
#include "backends/ring/ring_backend.hpp"
#include "backends/ulysses/ulysses_backend.hpp"
#include "backends/usp/usp_backend.hpp"
#include "config/backend_catalog.hpp"
#include "core/error.hpp"

namespace minictx {

const std::vector<BackendInfo>& backend_registry() {
  static const std::vector<BackendInfo> registry = {
      local_backend_info(),     ring_backend_info(),        ulysses_backend_info(), usp_backend_info(),
      allgather_backend_info(), double_ring_backend_info(), burst_backend_info()};
  return registry;
}

const BackendInfo& find_backend(const std::string& name) {
  std::string known;
  for (const auto& b : backend_registry()) {
    if (b.name == name) return b;
    known += (known.empty() ? "" : ", ") + b.name;
  }
  input_error("attention.backend '" + name + "' is not available in this build (available: " + known + ")");
}

void install_deck_backends() {
  std::vector<BackendDeckFacts> facts;
  for (const auto& b : backend_registry()) facts.push_back({b.name, b.keys, b.splits_heads});
  install_backend_catalog(std::move(facts));
}

}  // namespace minictx
