#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace minictx {

// A named global array for `minictx verify --dump`.
struct DumpArray {
  std::string name;  // dataset path inside the file, e.g. "inputs/x" or "grads/layer0/wq"
  std::vector<int64_t> shape;
  std::vector<double> data;
};

// Attributes on the file's root, so the file describes itself (the resolved deck, the
// model's conventions, its shape).
struct DumpAttributes {
  std::map<std::string, std::string> text;
  std::map<std::string, double> numbers;
};

// Writes every array as a float64 dataset of its shape (refuses to replace an existing file).
void write_array_dump(const std::string& path, const std::vector<DumpArray>& arrays,
                      const DumpAttributes& attributes);

}  // namespace minictx
