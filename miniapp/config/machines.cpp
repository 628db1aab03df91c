// Machine profiles: inputs/machines/NAME.yaml gives a device name and its datasheet
// peak TFLOPS per dtype, the denominator of MFU.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "config/deck_schema.hpp"
#include "config/yaml_keys.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;

namespace minictx {

std::vector<fs::path> machine_profile_dirs(const fs::path& deck_dir) {
  std::vector<fs::path> candidates;
  if (const char* data = std::getenv("MINICTX_DATA_DIR"); data && *data)
    candidates.push_back(fs::path(data) / "machines");
  if (!deck_dir.empty()) {
    candidates.push_back(deck_dir / "machines");
    candidates.push_back(deck_dir / ".." / "machines");  // inputs/benchmark/ beside inputs/machines/
    candidates.push_back(deck_dir / ".." / "inputs" / "machines");
  }
  // The source tree this file was compiled from: a build that was never installed. Its
  // absolute path from CMake: __FILE__ is relative to the build directory under ccache.
  candidates.push_back(fs::path(MINICTX_SOURCE_DIR) / "inputs" / "machines");
  // An installed build: the profiles `cmake --install` put beside the program.
  candidates.push_back(fs::path(MINICTX_INSTALLED_INPUTS_DIR) / "machines");

  std::vector<fs::path> dirs;
  std::set<fs::path> seen;
  for (const auto& c : candidates) {
    std::error_code ec;
    if (!fs::is_directory(c, ec)) continue;
    const fs::path canon = fs::weakly_canonical(c, ec);
    if (seen.insert(canon).second) dirs.push_back(canon);
  }
  return dirs;
}

bool profile_file_exists(const fs::path& file, const std::string& where) {
  std::error_code ec;
  const bool regular = fs::is_regular_file(file, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    input_error(where + ": " + ec.message());
  return regular;
}

std::string list_machine_profiles(const std::vector<fs::path>& dirs) {
  std::set<std::string> names;
  for (const auto& d : dirs)
    for (const auto& f : fs::directory_iterator(d))
      if (f.path().extension() == ".yaml") names.insert(f.path().stem().string());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace minictx

namespace minictx::deck_detail {
namespace {

MachineProfile read_profile(const fs::path& file) {
  const std::string where = "machine profile " + file.string();
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    input_error(where + (e.mark.is_null() ? "" : " line " + std::to_string(e.mark.line + 1)) +
                ": invalid YAML: " + e.msg);
  }
  auto at = [&](const YAML::Node& n) { return where + " line " + std::to_string(n.Mark().line + 1); };
  if (!root.IsMap()) input_error(where + ": expected 'name:' and 'peak_tflops:'");
  refuse_duplicate_keys(root, where);
  MachineProfile p;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key == "name" && kv.second.IsScalar() && !kv.second.Scalar().empty()) {
      p.name = kv.second.Scalar();
    } else if (key == "peak_tflops" && kv.second.IsMap()) {
      for (const auto& d : kv.second) {
        const std::string dtype = d.first.Scalar();
        if (dtype != "fp32" && dtype != "bf16" && dtype != "fp16")
          input_error(at(d.first) + ": peak_tflops has keys fp32, bf16, fp16; got '" + dtype + "'");
        // The deck's number rules, but a datasheet peak of 0 would read as "measure".
        KeySpec spec = *find_key("machine.peak_tflops");
        spec.key = "peak_tflops." + dtype;
        spec.min_exclusive = true;
        p.peak_tflops[dtype] = std::get<double>(parse_value(spec, d.second, at(d.first)));
      }
    } else if (key == "projection") {
      continue;  // links and efficiencies: read by `minictx project` (config/machine_profile.cpp)
    } else if (key == "name" || key == "peak_tflops") {
      input_error(at(kv.first) + ": '" + key + "' must be " +
                  (key == "name" ? "a non-empty string" : "a mapping of dtype to TFLOPS"));
    } else {
      input_error(at(kv.first) + ": unknown key '" + key +
                  "' (a profile has name, peak_tflops and projection)");
    }
  }
  if (p.name.empty()) input_error(where + ": 'name' is missing");
  return p;
}

bool is_profile_name(const std::string& s) {
  return !s.empty() && s[0] != '.' && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

void resolve_machine(RunConfig& cfg, const fs::path& deck_dir, const std::string& at,
                     std::map<std::string, MachineProfile>& cache) {
  MachineConfig& m = cfg.machine;
  if (m.measures_peak()) {
    if (m.peak_tflops > 0)
      input_error(at +
                  ": machine.peak_tflops is given, so machine.profile: measure has nothing to measure; drop "
                  "one of them");
    m.name = "measured";
    return;
  }
  if (!is_profile_name(m.profile))
    input_error(
        at + ": machine.profile must be 'measure' or a profile name (letters, digits, '-', '_', '.'), got '" +
        m.profile + "'");
  auto it = cache.find(m.profile);
  if (it == cache.end()) {
    const auto dirs = machine_profile_dirs(deck_dir);
    // The first directory holding NAME.yaml wins, so a site directory can add profiles
    // and still fall back on the shipped ones.
    auto found = std::find_if(dirs.begin(), dirs.end(), [&](const fs::path& d) {
      return profile_file_exists(d / (m.profile + ".yaml"), at + ": machine profile '" + m.profile + "'");
    });
    if (found == dirs.end()) {
      std::string searched;
      for (const auto& d : dirs) searched += (searched.empty() ? "" : ", ") + d.string();
      input_error(at + ": machine profile '" + m.profile +
                  "' not found (available: " + list_machine_profiles(dirs) +
                  "; searched: " + (searched.empty() ? "no profile directory exists" : searched) + ")");
    }
    it = cache.emplace(m.profile, read_profile(*found / (m.profile + ".yaml"))).first;
  }
  m.name = it->second.name;
  if (m.peak_tflops > 0) return;  // the deck's figure overrides the datasheet's
  const std::string dtype = to_string(cfg.run.dtype);
  const auto peak = it->second.peak_tflops.find(dtype);
  if (peak == it->second.peak_tflops.end())
    input_error(at + ": machine profile '" + m.profile + "' has no peak_tflops for " + dtype +
                "; set machine.peak_tflops or use machine.profile: measure");
  m.peak_tflops = peak->second;
}

}  // namespace minictx::deck_detail
