#pragma once
// SHA-256 from OpenSSL's libcrypto, as lowercase hex: the digests of results points, of
// the binary that wrote them and of the decks it read (outputs/README.md, "Digests").
#include <string>
#include <string_view>

namespace minictx {

std::string sha256_hex(std::string_view bytes);

// The digest of a file's contents, read in blocks; Error naming the file when it cannot
// be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace minictx
