#pragma once
// The input deck: a YAML file of sections (model, sequence, attention, run, machine,
// topology, benchmark, output, sweep), command-line overrides, and the sweep points it expands
// to. Every error is an InputError with one line that starts with where it is.
// The reference for users is inputs/README.md.
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "config/run_config.hpp"

namespace minictx {

// One key as written in the deck or by --set, already type-checked.
struct DeckEntry {
  std::string key;                 // dotted name, e.g. "model.layers"
  std::vector<DeckScalar> values;  // one value, or the sweep list (sweep.zip: the key names)
  bool is_list = false;            // written as a YAML list: a sweep (or sweep.zip)
  std::string where;               // "deck quick.yaml line 7" or "--set model.layers=4"
};

struct SweepPoint {
  RunConfig config;
  std::string label;  // "sequence.length=4096 attention.ring_type=zigzag"; "" for a single point
  std::map<std::string, std::string> varied;  // the swept keys and this point's values
  std::string resolved_yaml;                  // every key with its value, defaults included
};

class Deck {
 public:
  static Deck from_file(const std::string& path);
  static Deck from_string(const std::string& yaml, const std::string& name);
  static Deck builtin_quickstart();  // the text of inputs/quickstart.yaml, compiled in

  // "section.key=value"; the value is a YAML scalar or flow list. Replaces the deck's
  // value in place (keeping its position in the sweep order) or adds the key.
  void set(const std::string& key_equals_value);

  std::vector<SweepPoint> expand() const;  // validate and resolve every point
  RunConfig resolve() const;               // the single point; InputError if the deck sweeps
  std::string name() const { return name_; }
  std::string to_yaml() const;  // the deck as given plus overrides, for provenance

 private:
  std::string name_;                    // file path as given, or "builtin:quickstart"
  std::filesystem::path dir_;           // absolute directory of the deck file; empty for strings
  std::vector<DeckEntry> entries_;      // in deck order, which is the sweep order
  std::vector<std::string> overrides_;  // the --set arguments, in order
};

// Every valid dotted key, in schema order.
std::vector<std::string> deck_keys();

// Names accepted by model.preset ("custom" = no preset).
std::vector<std::string> model_presets();

// Directories searched for machine profiles NAME.yaml, in order (only existing ones):
// $MINICTX_DATA_DIR/machines, <deck dir>/machines, <deck dir>/../machines,
// <deck dir>/../inputs/machines,
// the source tree's inputs/machines. deck_dir may be empty (a deck given as a string).
std::vector<std::filesystem::path> machine_profile_dirs(const std::filesystem::path& deck_dir);
// The profile names in `dirs`, comma-separated ("none" if there are none).
std::string list_machine_profiles(const std::vector<std::filesystem::path>& dirs);
// Whether `file` is a regular file; absent is false. InputError "WHERE: REASON" when the
// system cannot look it up (a name too long, a folder without access).
bool profile_file_exists(const std::filesystem::path& file, const std::string& where);

}  // namespace minictx
