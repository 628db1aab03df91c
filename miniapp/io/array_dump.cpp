#include "io/array_dump.hpp"

#include <hdf5.h>

#include <filesystem>

#include "core/error.hpp"

namespace minictx {
namespace {

// Creates the groups on a dataset's path so h5py sees "grads/layer0/wq" as nested.
hid_t link_creation_with_parents() {
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  return lcpl;
}

}  // namespace

void write_array_dump(const std::string& path, const std::vector<DumpArray>& arrays, const std::string& description) {
  if (std::filesystem::exists(path)) input_error("--dump " + path + ": file exists; remove it or choose another name");
  const std::string tmp = path + ".partial";
  const hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) fail("cannot create " + tmp);
  const hid_t lcpl = link_creation_with_parents();
  bool ok = true;
  for (const auto& a : arrays) {
    std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
    const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    const hid_t set = H5Dcreate2(file, a.name.c_str(), H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && set >= 0 && H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()) >= 0;
    if (set >= 0) H5Dclose(set);
    H5Sclose(space);
  }
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, description.size() + 1);
  const hid_t attr = H5Acreate2(file, "description", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
  ok = ok && H5Awrite(attr, str, description.c_str()) >= 0;
  H5Aclose(attr);
  H5Tclose(str);
  H5Sclose(scalar);
  H5Pclose(lcpl);
  H5Fclose(file);
  if (!ok) fail("writing " + tmp + " failed");
  std::filesystem::rename(tmp, path);
}

}  // namespace minictx
