#include "app/count_option.hpp"

#include <charconv>
#include <climits>

namespace minictx {

CLI::Validator whole_number_from(int least) {
  const std::string range = "from " + std::to_string(least) + " to " + std::to_string(INT_MAX);
  return CLI::Validator(
      [least, range](std::string& text) {
        long long v = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || p != end || v < least || v > INT_MAX)
          return "must be a whole number " + range + ", got " + text;
        return std::string();
      },
      "INT " + range.substr(5));
}

}  // namespace minictx
