#include "io/legacy_tail.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace minictx {
namespace {

constexpr char kMagic[] = "MCTXPT01";
constexpr size_t kMagicBytes = sizeof kMagic - 1;
constexpr size_t kFrameBytes = kMagicBytes + 8 + 8;  // magic, length, checksum
constexpr size_t kMaxDepth = 8;                      // a point nests 4 deep

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t get_u64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint64_t(static_cast<unsigned char>(in[i]));
  return v;
}

// A plain (unquoted) scalar as minictx's YAML emitter wrote numbers; anything else is text.
json plain_scalar(const std::string& s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return "NaN";
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf") return "Infinity";
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return "-Infinity";
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return s;
  errno = 0;
  char* end = nullptr;
  if (s.find_first_of(".eE") == std::string::npos) {
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (*end == '\0' && errno == 0) return int64_t(i);
  }
  const double d = std::strtod(s.c_str(), &end);
  return *end == '\0' ? json(d) : json(s);
}

// Builds the JSON of one YAML document from the parser's events, refusing what a point
// record never holds before it can cost anything: anchors, aliases, tags, deep nesting.
class ToJson : public YAML::EventHandler {
 public:
  explicit ToJson(json& result) : result_(result) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override {
    no_anchor(anchor);
    add(nullptr, "~");
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { fail("it holds a YAML alias"); }
  void OnAnchor(const YAML::Mark&, const std::string&) override { fail("it holds a YAML anchor"); }
  void OnScalar(const YAML::Mark&, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    no_anchor(anchor);
    if (tag != "!" && tag != "?") fail("it holds a YAML tag");
    add(tag == "!" ? json(value) : plain_scalar(value), value);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(anchor, json::array());
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(anchor, json::object());
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    json value;
    std::string key;
    bool have_key = false;
  };
  json& result_;
  std::vector<Open> stack_;

  static void no_anchor(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) fail("it holds a YAML anchor");
  }
  void open(YAML::anchor_t anchor, json empty) {
    no_anchor(anchor);
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key)
      fail("it has a key that is not a scalar");
    if (stack_.size() == kMaxDepth) fail("it is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    stack_.push_back({std::move(empty), "", false});
  }
  void close() {
    json value = std::move(stack_.back().value);
    stack_.pop_back();
    add(std::move(value), "");
  }
  // `text` is what a mapping key reads as.
  void add(json value, const std::string& text) {
    if (stack_.empty()) {
      result_ = std::move(value);
      return;
    }
    Open& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else if (!top.have_key) {
      top.key = text;
      top.have_key = true;
    } else {
      top.value[top.key] = std::move(value);
      top.have_key = false;
    }
  }
};

json yaml_json(const std::string& payload) {
  std::istringstream in(payload);
  json result;
  ToJson handler(result);
  try {
    YAML::Parser parser(in);
    if (!parser.HandleNextDocument(handler)) fail("it is empty");
  } catch (const YAML::Exception& e) {
    fail(std::string("it is not YAML: ") + e.what());
  }
  return result;
}

}  // namespace

LegacyTail read_legacy_tail(const std::string& path, uint64_t start) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '" + path + "' to read its tail: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  LegacyTail tail;
  for (uint64_t at = start, n = 1; at < size && size - at >= kFrameBytes; ++n) {
    const std::string where = "the record at byte " + std::to_string(at);
    char head[kMagicBytes + 8];
    in.seekg(std::streamoff(at));
    if (!in.read(head, sizeof head)) fail("cannot read the tail of '" + path + "'");
    if (std::memcmp(head, kMagic, kMagicBytes) != 0) {
      tail.unreadable.push_back("appended points unreadable from " + where + " (it does not begin with " +
                                kMagic + ")");
      break;
    }
    const uint64_t length = get_u64(head + kMagicBytes);
    if (length > size - at - kFrameBytes) break;  // cut short: never reported written
    std::string payload(length, '\0');
    char sum[8];
    if (!in.read(payload.data(), std::streamsize(length)) || !in.read(sum, sizeof sum))
      fail("cannot read the tail of '" + path + "'");
    if (get_u64(sum) != fnv1a64(payload)) {
      tail.unreadable.push_back("appended points unreadable from " + where + " (it fails its checksum)");
      break;
    }
    try {
      tail.points.push_back(yaml_json(payload));
    } catch (const Error& e) {
      tail.unreadable.push_back("appended point " + std::to_string(n) + " unreadable: " + e.what());
    }
    at += kFrameBytes + length;
  }
  return tail;
}

}  // namespace minictx
