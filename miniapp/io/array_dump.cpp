#include "io/array_dump.hpp"

#include <utility>

#include "core/error.hpp"
#include "io/hdf5_util.hpp"
#include "io/output_file.hpp"

namespace minictx {
namespace {

// The group a dataset path names ("grads/layer0" for "grads/layer0/wq"), created on the
// way so h5py sees the arrays nested.
h5::Handle parent_group(hid_t file, const std::string& path) {
  std::vector<h5::Handle> chain;
  chain.push_back(h5::open_group(file, "/"));
  size_t begin = 0;
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', begin)) {
    const std::string name = path.substr(begin, slash - begin);
    const hid_t parent = chain.back().get();
    chain.push_back(H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0 ? h5::open_group(parent, name)
                                                                     : h5::create_group(parent, name));
    begin = slash + 1;
  }
  return std::move(chain.back());
}

}  // namespace

void write_array_dump(const std::string& path, const std::vector<DumpArray>& arrays,
                      const DumpAttributes& attributes) {
  std::string image;
  try {
    const h5::QuietErrors quiet;
    image = h5::file_image([&](hid_t file) {
      for (const auto& a : arrays) {
        const h5::Handle group = parent_group(file, a.name);
        const std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
        h5::write_doubles(group.get(), a.name.substr(a.name.rfind('/') + 1), a.data, dims);
      }
      for (const auto& [key, value] : attributes.text) h5::write_attribute(file, key, value);
      for (const auto& [key, value] : attributes.numbers) h5::write_attribute(file, key, value);
    });
  } catch (const Error& e) {
    throw Error("--dump " + path + ": " + e.what());
  }
  write_output_file(path, "--dump", false, image,
                    "--dump " + path + ": file exists; remove it or choose another name");
}

}  // namespace minictx
