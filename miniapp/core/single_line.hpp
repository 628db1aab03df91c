#pragma once
#include <string>

namespace minictx {

// `text` as one line a terminal shows as it is: every character that breaks a line or
// moves the cursor (ASCII control characters, DEL, and Unicode's NEL, LINE SEPARATOR and
// PARAGRAPH SEPARATOR in UTF-8) becomes a space. For messages that quote what a damaged
// or hostile file holds (an object's name), so that a diagnostic stays one line.
std::string single_line(std::string text);

}  // namespace minictx
