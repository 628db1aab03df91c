// The floors (docs/architecture.md, "Layers and interfaces") in the rules the include
// path cannot hold: which of the backends' files name which, and that only the device
// layer names a device kind or includes a device's own files. The include path holds the
// rest (tests/cmake/floors.cmake).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/registry.hpp"

namespace fs = std::filesystem;
using namespace minictx;

namespace {

const fs::path repo = fs::path(__FILE__).parent_path() / ".." / "..";

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The paths under backends/ that `file` includes.
std::vector<std::string> backend_includes(const fs::path& file) {
  std::vector<std::string> found;
  std::istringstream text(read_text(file));
  const std::string prefix = "#include \"backends/";
  for (std::string line; std::getline(text, line);)
    if (line.rfind(prefix, 0) == 0)
      found.push_back(line.substr(prefix.size(), line.find('"', prefix.size()) - prefix.size()));
  return found;
}

}  // namespace

// Adding a backend touches its folder and the registry only (docs/architecture.md, "Adding
// a backend"): a backend reads the interface, the shared engine and its own folder; the
// engine reads no backend; nothing in miniapp/ or backends/ but the registry includes a
// backend's folder. The build refuses such an include (floors_upward_include); this names
// every one at once.
TEST(BackendFolders, IncludeOnlyTheEngineTheInterfaceAndTheirOwn) {
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(repo / "backends")) {
    if (!entry.is_regular_file()) continue;
    const fs::path relative = fs::relative(entry.path(), repo / "backends");
    const std::string folder = relative.has_parent_path() ? relative.begin()->string() : "";
    ++files;
    for (const auto& include : backend_includes(entry.path())) {
      const bool allowed = include == "backend.hpp" || include.rfind("engine/", 0) == 0 ||
                           (!folder.empty() && include.rfind(folder + "/", 0) == 0) ||
                           relative == "registry.cpp";
      EXPECT_TRUE(allowed) << "backends/" << relative.string() << " includes backends/" << include;
    }
  }
  EXPECT_GT(files, backend_registry().size());
  for (const auto& entry : fs::recursive_directory_iterator(repo / "miniapp")) {
    if (!entry.is_regular_file()) continue;
    for (const auto& include : backend_includes(entry.path()))
      EXPECT_TRUE(include == "backend.hpp" || include == "registry.hpp" || include.rfind("engine/", 0) == 0)
          << entry.path().lexically_relative(repo).string() << " includes backends/" << include;
  }
}

// A device kind is asked what it can do, never named, outside device/ (docs/architecture.md,
// "Layers and interfaces"): no `DeviceKind::` in miniapp/, backends/ or verify/ but under
// miniapp/device/, and no include of a device's own files but there (the GPU comms too).
TEST(DeviceLayer, NoKindBranchOrCudaIncludeOutsideIt) {
  const std::string kind = std::string("DeviceKind") + "::";  // so this file does not match itself
  const std::string cuda_include = "#include \"device/cuda/";
  std::size_t files = 0;
  for (const char* top : {"miniapp", "backends", "verify"})
    for (const auto& entry : fs::recursive_directory_iterator(repo / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh"))
        continue;
      const std::string relative = entry.path().lexically_relative(repo).generic_string();
      const bool device = relative.rfind("miniapp/device/", 0) == 0;
      if (device) continue;
      ++files;
      std::istringstream text(read_text(entry.path()));
      int n = 0;
      for (std::string line; std::getline(text, line);) {
        ++n;
        EXPECT_EQ(line.find(kind), std::string::npos)
            << relative << ":" << n << " names a device kind: " << line;
        EXPECT_TRUE(line.rfind(cuda_include, 0) != 0)
            << relative << ":" << n << " includes a device's own file: " << line;
      }
    }
  EXPECT_GT(files, 100u);
}
