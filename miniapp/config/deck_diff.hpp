#pragma once
// Comparing two resolved decks (SweepPoint::resolved_yaml): what makes two results
// points the same measurement.
#include <optional>
#include <string>
#include <vector>

namespace minictx {

struct KeyDifference {
  std::string key;        // "sequence.length"
  std::string old_value;  // "(absent)" when only the other deck has the key
  std::string new_value;
};

// The first key, in the new deck's order (then the old deck's keys it lacks), whose value
// differs; none when they agree. Sections named in `ignore` are not compared. Error when
// either text is not a resolved deck (a mapping of sections of scalars).
// Every key whose value differs, in that order.
std::vector<KeyDifference> all_differences(const std::string& old_yaml, const std::string& new_yaml,
                                           const std::vector<std::string>& ignore);

std::optional<KeyDifference> first_difference(const std::string& old_yaml, const std::string& new_yaml,
                                              const std::vector<std::string>& ignore);

}  // namespace minictx
