#include "config/backend_catalog.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace minictx {
namespace {

std::vector<BackendDeckFacts>& catalog() {
  static std::vector<BackendDeckFacts> backends;
  return backends;
}

}  // namespace

void install_backend_catalog(std::vector<BackendDeckFacts> backends) { catalog() = std::move(backends); }

const std::vector<BackendDeckFacts>& backend_catalog() {
  require(!catalog().empty(),
          "no attention backend is installed in the deck (call install_deck_backends first)");
  return catalog();
}

const BackendDeckFacts& backend_facts(const std::string& name) {
  for (const auto& b : backend_catalog())
    if (b.name == name) return b;
  require(false, "attention.backend '" + name + "' passed the deck's check but is not registered");
  return catalog().front();
}

bool takes_option(const BackendDeckFacts& backend, const std::string& key) {
  return std::find(backend.options.begin(), backend.options.end(), key) != backend.options.end();
}

bool is_backend_option(const std::string& key) {
  const auto& all = backend_catalog();
  return std::any_of(all.begin(), all.end(), [&](const BackendDeckFacts& b) { return takes_option(b, key); });
}

}  // namespace minictx
