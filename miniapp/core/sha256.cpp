#include "core/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.hpp"

namespace minictx {
namespace {

// One SHA-256 computation; Error if libcrypto refuses a step (it only does when out of memory).
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) fail("SHA-256: cannot start");
  }
  void add(const void* data, size_t size) {
    if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) fail("SHA-256: cannot hash");
  }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &size) != 1) fail("SHA-256: cannot finish");
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < size; ++i) {
      out += digits[digest[i] >> 4];
      out += digits[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.add(bytes.data(), bytes.size());
  return h.hex();
}

std::string sha256_file_hex(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) fail("cannot read '" + path + "' to hash it: " + std::strerror(errno));
  Sha256 h;
  std::array<char, 1 << 16> block{};
  size_t n = 0;
  while ((n = std::fread(block.data(), 1, block.size(), file.get())) > 0) h.add(block.data(), n);
  if (std::ferror(file.get())) fail("cannot read '" + path + "' to hash it");
  return h.hex();
}

}  // namespace minictx
