#pragma once
// What the deck needs to know of the attention backends. config/ sits below backends/,
// so the backends layer installs its registry here (install_deck_backends in
// backends/backend.hpp) before any deck is read; the deck then takes the names and
// options from the registry instead of a list of its own.
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace minictx {

struct BackendDeckFacts {
  std::string name;  // attention.backend
  // The backend-specific attention keys this backend reads ("attention.ring_type"); keys
  // every backend reads (causal, block_q, block_k) are listed by none.
  std::vector<std::string> options;
  // Whether it exchanges heads over attention.ulysses_degree ranks, so that degree must
  // divide model.heads (checked per point, naming the deck line).
  bool (*splits_heads)(const AttentionConfig&) = nullptr;
};

void install_backend_catalog(std::vector<BackendDeckFacts> backends);
const std::vector<BackendDeckFacts>& backend_catalog();          // in registration order
const BackendDeckFacts& backend_facts(const std::string& name);  // a registered name

// A deck key that some backend declares as an option (so it is not read by every backend).
bool is_backend_option(const std::string& key);
bool takes_option(const BackendDeckFacts& backend, const std::string& key);

}  // namespace minictx
