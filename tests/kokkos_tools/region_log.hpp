#pragma once
// What a Kokkos Tools connector sees of a run's regions and sections, and whether it makes
// sense: every region closed by a pop in the order they opened (a pop closes the innermost
// open one, none is left open at the end), every section stopped after it started and
// started again only after it stopped. The recorder library feeds it from Kokkos' callbacks;
// test_region_log feeds it made-up sequences.
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace minictx_tools {

class RegionLog {
 public:
  void push(const std::string& name) {
    ++opened_[{open_.empty() ? std::string("(top)") : open_.back(), name}];
    open_.push_back(name);
  }
  void pop() {
    if (open_.empty())
      fail("a region closed while none was open");
    else
      open_.pop_back();
  }
  void create_section(const std::string& name, uint32_t id) { sections_[id] = name; }
  void start_section(uint32_t id) {
    if (!sections_.count(id)) return fail("section " + std::to_string(id) + " started before it was created");
    if (!running_.insert(id).second) return fail("section " + sections_[id] + " started while it ran");
    ++started_[sections_[id]];
  }
  void stop_section(uint32_t id) {
    if (running_.erase(id) == 0) fail("section " + name_of(id) + " stopped while it did not run");
  }

  // The report: "regions balanced" or "error: <the first fault>", then one line per
  // (parent, region) pair: "region PARENT > NAME COUNT", and per section "section NAME COUNT".
  std::string report() const {
    std::string error = error_;
    if (error.empty() && !open_.empty()) error = "region " + open_.back() + " left open at the end";
    if (error.empty() && !running_.empty()) error = "section " + name_of(*running_.begin()) + " left running";
    std::ostringstream out;
    out << (error.empty() ? "regions balanced" : "error: " + error) << "\n";
    for (const auto& [pair, count] : opened_)
      out << "region " << pair.first << " > " << pair.second << " " << count << "\n";
    for (const auto& [name, count] : started_) out << "section " << name << " " << count << "\n";
    return out.str();
  }

 private:
  void fail(const std::string& why) {
    if (error_.empty()) error_ = why;
  }
  std::string name_of(uint32_t id) const {
    const auto it = sections_.find(id);
    return it == sections_.end() ? std::to_string(id) : it->second;
  }

  std::vector<std::string> open_;
  std::map<std::pair<std::string, std::string>, long> opened_;
  std::map<uint32_t, std::string> sections_;
  std::set<uint32_t> running_;
  std::map<std::string, long> started_;
  std::string error_;
};

}  // namespace minictx_tools
