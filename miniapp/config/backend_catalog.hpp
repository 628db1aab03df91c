#pragma once
// What the deck needs to know of the attention backends. config/ sits below backends/,
// so the backends layer installs its registry here (install_deck_backends in
// backends/backend.hpp) before any deck is read; the deck then takes the names and the
// backends' own keys from the registry instead of a list of its own.
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace minictx {

// A deck key of a backend's own ("attention.window_size"), declared in its BackendInfo.
// The deck's schema, its checks and sweeps, the resolved deck in the results, `minictx
// list` and the docs test read it from here; the backend reads its value through
// AttentionConfig::options.
struct BackendKey {
  std::string key;                   // "attention.window_size"
  std::vector<std::string> choices;  // a choice among these spellings; empty: an integer
  long long min = 0;                 // an integer's least value (its greatest: INT_MAX)
  DeckScalar default_value;          // an integer, or one of the choices
  std::string doc;                   // one line: what it sets (minictx list)
};
// A choice key whose default is its first choice.
BackendKey choice_key(std::string key, std::vector<std::string> choices, std::string doc);
BackendKey integer_key(std::string key, long long min, long long default_value, std::string doc);
// "choice: basic, zigzag, stripe (default basic)" or "integer >= 0 (default 0)".
std::string key_type_text(const BackendKey& key);

struct BackendDeckFacts {
  std::string name;  // attention.backend
  // The backend-specific attention keys this backend reads; keys every backend reads
  // (causal, block_q, block_k, kernels, partials) are declared by none. Several backends
  // may declare one key (attention.ring_type); their declarations must be the same.
  std::vector<BackendKey> keys;
  // Whether it exchanges heads over attention.ulysses_degree ranks, so that degree must
  // divide model.heads (checked per point, naming the deck line).
  bool (*splits_heads)(const AttentionConfig&) = nullptr;
};

// Fails (a program error) when two backends declare one key differently.
void install_backend_catalog(std::vector<BackendDeckFacts> backends);
const std::vector<BackendDeckFacts>& backend_catalog();          // in registration order
const BackendDeckFacts& backend_facts(const std::string& name);  // a registered name

// Every backend-declared key once, in the order of first declaration.
std::vector<BackendKey> backend_keys();
const BackendKey* backend_key(const std::string& key);  // nullptr: no backend declares it

// A deck key that some backend declares as its own (so it is not read by every backend).
bool is_backend_option(const std::string& key);
bool takes_option(const BackendDeckFacts& backend, const std::string& key);

}  // namespace minictx
