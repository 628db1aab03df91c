#include "io/results_journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace minictx {
namespace {

constexpr size_t kPrefixBytes = 20;  // {"crc32":"xxxxxxxx",
constexpr int kMaxDepth = 8;         // a point nests 4 deep (ring_timeline/outer/column/value)

std::string read_whole(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open its journal " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("its journal " + path + " is not a regular file");
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("cannot read its journal " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    bytes.append(buf, size_t(n));
  }
  ::close(fd);
  return bytes;
}

// The checksum a line states in its prefix; Error if the line does not begin with one.
uint32_t stated_crc32(const std::string& line) {
  const std::string head = "{\"crc32\":\"";
  const std::string hex = line.size() > kPrefixBytes ? line.substr(head.size(), 8) : "";
  if (line.compare(0, head.size(), head) != 0 || hex.size() != 8 ||
      hex.find_first_not_of("0123456789abcdef") != std::string::npos || line.compare(18, 2, "\",") != 0)
    fail("it does not begin with {\"crc32\":\"<8 hex digits>\",");
  return uint32_t(std::stoul(hex, nullptr, 16));
}

// The record's point; `foreign` when it is a whole record of another writer's journal.
// Error saying why the line is not a record.
json point_of(const std::string& line, const std::string& journal_id, bool& foreign) {
  if (line.size() > kMaxJournalRecordBytes)
    fail("it has " + std::to_string(line.size()) + " bytes, more than a record may (" +
         std::to_string(kMaxJournalRecordBytes) + ")");
  if (stated_crc32(line) != crc32(line.data() + kPrefixBytes, line.size() - kPrefixBytes))
    fail("it fails its checksum");
  const json record = parse_json(line, kMaxDepth);
  const auto id = record.find("journal_id");
  const auto point = record.find("point");
  if (id == record.end() || point == record.end()) fail("it has no journal_id or no point");
  foreign = *id != journal_id;
  return *point;
}

}  // namespace

uint32_t crc32(const char* bytes, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ static_cast<unsigned char>(bytes[i])) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string journal_path(const std::string& results_path) { return results_path + ".journal"; }

std::string journal_record(const std::string& journal_id, const json& point) {
  const std::string rest =
      "\"journal_id\":" + json_line(journal_id) + ",\"point\":" + json_line(point) + "}\n";
  char prefix[kPrefixBytes + 1];
  std::snprintf(prefix, sizeof prefix, "{\"crc32\":\"%08x\",", crc32(rest.data(), rest.size()));
  return prefix + rest;
}

JournalPoints read_journal(const std::string& path, const std::string& journal_id) {
  JournalPoints out;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return out;
  const std::string bytes = read_whole(path);
  size_t number = 0;
  for (size_t begin = 0; begin < bytes.size();) {
    const size_t newline = bytes.find('\n', begin);
    if (newline == std::string::npos) break;  // cut short: never reported recorded
    ++number;
    const std::string line = bytes.substr(begin, newline + 1 - begin);
    begin = newline + 1;
    try {
      bool foreign = false;
      json point = point_of(line, journal_id, foreign);
      if (!foreign) out.points.push_back(std::move(point));
    } catch (const Error& e) {
      out.unreadable.push_back("journal record " + std::to_string(number) + " unreadable: " + e.what());
    }
  }
  return out;
}

}  // namespace minictx
