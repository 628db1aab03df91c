#pragma once
#include <string>

namespace minictx {

// The value of an enum spelled `text` as its to_string spells it; false (out untouched) if
// none is. The enum's values are 0..enum_size(E{})-1; to_string and enum_size are found
// next to the enum.
template <class E>
bool parse_enum(const std::string& text, E& out) {
  for (int i = 0; i < enum_size(E{}); ++i)
    if (text == to_string(E(i))) {
      out = E(i);
      return true;
    }
  return false;
}

}  // namespace minictx
