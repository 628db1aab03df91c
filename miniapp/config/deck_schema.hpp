#pragma once
// Internals of the deck shared by the config/ sources: the key table, value parsing,
// YAML output, presets, machine profiles and the sweep expansion. Not for other folders.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/deck.hpp"

namespace minictx::deck_detail {

enum class Kind { integer, real, boolean, choice, text, key_list, documents, window };

// One valid key: its type, its limits, and how it reads and writes a RunConfig.
struct KeySpec {
  std::string key;      // "model.layers"
  std::string section;  // "model"
  std::string leaf;     // "layers"
  Kind kind = Kind::text;
  long long min_int = 0, max_int = 0;
  double min_real = 0;
  bool min_exclusive = false;  // real: the value must be > min_real rather than >=
  bool even = false;           // integer: must be even
  std::string word;            // real: a word it takes besides numbers (run.loss_scale: dynamic)
  std::vector<std::string> choices;
  std::function<std::vector<std::string>()> choices_of;      // choices known only at run time
  std::function<void(RunConfig&, const DeckScalar&)> apply;  // empty for sweep.zip
  std::function<DeckScalar(const RunConfig&)> read;
};

const std::vector<KeySpec>& schema();
const std::vector<std::string>& section_names();
const KeySpec* find_key(const std::string& dotted);

// "unknown key 'x.y' (did you mean 'x.z'?)" or, with no close name, the section's keys.
std::string unknown_key_message(const std::string& dotted);
std::string unknown_section_message(const std::string& section);
std::size_t edit_distance(const std::string& a, const std::string& b);

// The deck's one rule for integers, for every key and every number inside a value: decimal
// digits after an optional sign ('+' as YAML allows). Returns where from_chars should
// start (past a '+'), or nullptr when `text` is not an integer.
const char* integer_digits(const std::string& text);
// Type- and range-checks one YAML value for spec; `where` starts the error line.
DeckScalar parse_value(const KeySpec& spec, const YAML::Node& node, const std::string& where);

// A value given as text (a --set value, a resolved deck's quoted form) read as YAML, a
// key given twice refused. InputError "WHERE: FORMS; the value is not valid YAML (...)".
YAML::Node load_value_text(const std::string& text, const std::string& where, const std::string& forms);

// sequence.documents' value (config/documents.hpp); InputError with `where` first.
DocumentPacking packing_from_yaml(const YAML::Node&, const std::string& where);
// attention.window's value (config/attention_window.hpp), likewise.
AttentionWindow window_from_yaml(const YAML::Node&, const std::string& where);

// Reads a key's value: a scalar, or a YAML list (a sweep; for sweep.zip the key names).
// item_where gives the location of one list item for its error line.
DeckEntry parse_entry(const KeySpec& spec, const YAML::Node& node, const std::string& where,
                      const std::function<std::string(const YAML::Node&)>& item_where);

// Canonical text: "4096", "1e-05", "true"; written as is into YAML (the emitter quotes
// only strings that need it) and into sweep labels.
std::string format_value(const DeckScalar& v);

ModelShape preset_shape(const std::string& name);  // name is one of model_presets()
const char* quickstart_text();

// Fills cfg.machine.name and, unless given, cfg.machine.peak_tflops for cfg.run.dtype.
// `at` locates errors about machine.profile. cache avoids re-reading a profile per point.
struct MachineProfile {
  std::string name;
  std::map<std::string, double> peak_tflops;  // by dtype spelling: fp32, bf16, fp16
};
void resolve_machine(RunConfig& cfg, const std::filesystem::path& deck_dir, const std::string& at,
                     std::map<std::string, MachineProfile>& cache);

std::vector<SweepPoint> expand_entries(const std::vector<DeckEntry>& entries, const std::string& deck_name,
                                       const std::filesystem::path& deck_dir);

}  // namespace minictx::deck_detail
