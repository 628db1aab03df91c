#include "app/resume_check.hpp"

#include <sstream>

#include "bench/labels.hpp"
#include "config/deck_diff.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

const char* const kBuildKeys[] = {"version", "git_sha", "compiler", "cxx_flags", "build_type"};
const char* const kWorldKeys[] = {"world_size", "ranks_per_node"};

std::string text_of(const Provenance& p, const std::string& key) {
  if (const auto t = p.text.find(key); t != p.text.end()) return t->second;
  if (const auto n = p.numbers.find(key); n != p.numbers.end()) {
    std::ostringstream s;
    s << n->second;
    return s.str();
  }
  return "(absent)";
}

}  // namespace

void check_resume(const std::string& path, const ResultsFile& old, const Provenance& now,
                  const std::vector<SweepPoint>& points) {
  const std::string cannot = "--resume " + path + ": ";
  const std::string advice = "; resume with the same deck, build and ranks, or write to another file";
  auto differs = [&](const std::string& what, const std::string& was, const std::string& is) {
    input_error(cannot + what + " was " + was + " in that run, " + is + " in this one" + advice);
  };
  if (text_of(old.provenance, "projected") == "true")
    input_error(cannot +
                "it is a projection (written by minictx project), not a run's results; a run "
                "cannot continue it: write to another file");
  for (const char* key : kBuildKeys)
    if (text_of(old.provenance, key) != text_of(now, key))
      differs(std::string("the build's ") + key, text_of(old.provenance, key), text_of(now, key));
  for (const char* key : kWorldKeys)
    if (text_of(old.provenance, key) != text_of(now, key))
      differs(key, text_of(old.provenance, key), text_of(now, key));
  for (const PointResult& stored : old.points) {
    size_t i = 0;
    while (i < points.size() && point_name(i) != stored.name) ++i;
    if (i == points.size())
      input_error(cannot + "the file holds " + stored.name + ", but this deck has " +
                  std::to_string(points.size()) + " point(s)" + advice);
    std::optional<KeyDifference> d;
    try {
      d = first_difference(stored.deck, points[i].resolved_yaml, {"output"});
    } catch (const Error& e) {
      input_error(cannot + stored.name + ": " + e.what());
    }
    if (d) differs(stored.name + "'s " + d->key, d->old_value, d->new_value);
  }
}

}  // namespace minictx
