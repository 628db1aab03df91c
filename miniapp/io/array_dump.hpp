#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minictx {

// A named global array for `minictx verify --dump`.
struct DumpArray {
  std::string name;  // dataset path inside the file, e.g. "inputs/x" or "grads/layer0/wq"
  std::vector<int64_t> shape;
  std::vector<double> data;
};

// Writes every array as a float64 dataset (refuses to replace an existing file).
void write_array_dump(const std::string& path, const std::vector<DumpArray>& arrays,
                      const std::string& description);

}  // namespace minictx
