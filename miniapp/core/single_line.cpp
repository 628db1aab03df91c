#include "core/single_line.hpp"

namespace minictx {

std::string single_line(std::string text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = [&](size_t k) {
      return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
    };
    if (c < 0x20 || c == 0x7f) {
      out += ' ';
    } else if (c == 0xc2 && next(1) == 0x85) {  // U+0085 NEL
      out += ' ';
      i += 1;
    } else if (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) {  // U+2028, U+2029
      out += ' ';
      i += 2;
    } else {
      out += char(c);
    }
  }
  return out;
}

}  // namespace minictx
