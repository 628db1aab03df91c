#include "io/results_tail.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace minictx {
namespace {

constexpr char kMagic[] = "MCTXPT01";
constexpr size_t kMagicBytes = sizeof kMagic - 1;
constexpr size_t kFrameBytes = kMagicBytes + 8 + 8;  // magic, length, checksum

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint64_t(static_cast<unsigned char>(in[i]));
  return v;
}

}  // namespace

std::string tail_record(const std::string& payload) {
  std::string out(kMagic, kMagicBytes);
  out.reserve(kFrameBytes + payload.size());
  put_u64(out, payload.size());
  out += payload;
  put_u64(out, fnv1a64(payload));
  return out;
}

TailRecords read_tail(const std::string& path, uint64_t start) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '" + path + "' to read its tail: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  TailRecords tail;
  uint64_t at = start;
  while (at < size) {
    const std::string where = "the record at byte " + std::to_string(at);
    char head[kMagicBytes + 8];
    if (size - at < kFrameBytes) {
      tail.cut_short = true;
      break;
    }
    in.seekg(std::streamoff(at));
    if (!in.read(head, sizeof head)) fail("cannot read the tail of '" + path + "'");
    if (std::memcmp(head, kMagic, kMagicBytes) != 0) {
      tail.damage = where + " does not begin with " + kMagic;
      break;
    }
    const uint64_t length = get_u64(head + kMagicBytes);
    if (length > size - at - kFrameBytes) {
      tail.cut_short = true;
      break;
    }
    std::string payload(length, '\0');
    char sum[8];
    if (!in.read(payload.data(), std::streamsize(length)) || !in.read(sum, sizeof sum))
      fail("cannot read the tail of '" + path + "'");
    if (get_u64(sum) != fnv1a64(payload)) {
      tail.damage = where + " fails its checksum";
      break;
    }
    tail.payloads.push_back(std::move(payload));
    at += kFrameBytes + length;
  }
  return tail;
}

}  // namespace minictx
