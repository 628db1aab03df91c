#include "core/fault_seam.hpp"

#include <cstdlib>
#include <sstream>

#include "core/error.hpp"

namespace minictx::fault_seam {
namespace {

struct State {
  bool armed = false;  // this rank is the one that fails
  Stage stage = Stage::gpu;
  int point = 0;
  int current_point = 0;
  int rank = 0;
};

State& state() {
  static State s;
  return s;
}

bool parse_stage(const std::string& word, Stage& stage) {
  static const std::pair<const char*, Stage> names[] = {
      {"gpu", Stage::gpu},     {"comm", Stage::comm},           {"shift", Stage::shift},
      {"stall", Stage::stall}, {"zero_loss", Stage::zero_loss}, {"wrong_label", Stage::wrong_label}};
  for (const auto& [name, s] : names)
    if (word == name) {
      stage = s;
      return true;
    }
  return false;
}

}  // namespace

void arm(int world_rank) {
  State& s = state();
  s = State{};
  s.rank = world_rank;
  const char* value = std::getenv("MINICTX_INJECT_FAULT");
  if (value == nullptr || *value == '\0') return;
  std::istringstream in(value);
  std::string rank, stage, point;
  std::getline(in, rank, ':');
  std::getline(in, stage, ':');
  std::getline(in, point);
  Stage parsed = Stage::gpu;
  const auto whole_number = [](const std::string& t) {
    return !t.empty() && t.size() < 10 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!whole_number(rank) || !parse_stage(stage, parsed) || !(point.empty() || whole_number(point)))
    input_error(
        "MINICTX_INJECT_FAULT='" + std::string(value) +
        "' is not RANK:STAGE[:POINT] (STAGE gpu, comm, shift, stall, zero_loss or wrong_label; POINT a sweep "
        "index)");
  s.armed = std::stoi(rank) == world_rank;
  s.stage = parsed;
  s.point = point.empty() ? 0 : std::stoi(point);
}

void set_point(int index) { state().current_point = index; }

bool fires(Stage stage) {
  const State& s = state();
  if (!s.armed || s.stage != stage) return false;
  return (stage != Stage::shift && stage != Stage::stall) || s.current_point == s.point;
}

std::string injected(const std::string& what) { return what + " (injected by MINICTX_INJECT_FAULT)"; }

void fail_here(const std::string& what) {
  fail("rank " + std::to_string(state().rank) + ": " + injected(what));
}

}  // namespace minictx::fault_seam
