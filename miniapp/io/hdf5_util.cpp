#include "io/hdf5_util.hpp"

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/single_line.hpp"

namespace minictx::h5 {

Handle::~Handle() {
  if (id_ >= 0) closer_(id_);
}

void Handle::close(const std::string& what) {
  const hid_t id = id_;
  id_ = -1;
  if (id >= 0 && closer_(id) < 0) fail("close " + what);
}

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &saved_func_, &saved_data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, saved_func_, saved_data_); }

void fail(const std::string& what) {
  // The innermost entry (walking upward) is where HDF5 found the problem, e.g. "file
  // signature not found" or the errno text; the outer ones only repeat the call chain.
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* err, void* out) -> herr_t {
        if (n == 0 && err->desc) *static_cast<std::string*>(out) = err->desc;
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  // Both may quote a damaged file's object names: one line whatever they hold.
  throw Error(single_line("cannot " + what + (detail.empty() ? "" : " (HDF5: " + detail + ")")));
}

namespace {

hid_t check(hid_t id, const std::string& what) {
  if (id < 0) fail(what);
  return id;
}

void check_status(herr_t status, const std::string& what) {
  if (status < 0) fail(what);
}

// Results files are never opened by two processes at once (a writer only ever writes its
// own ".partial"), so HDF5's file locks buy nothing; keep them where the file system has
// them, but do not fail where it has none (Lustre and NFS mounts often lack flock).
// A strong close degree makes closing the file close every object in it, so the bytes
// are all written when close returns.
Handle file_access_list() {
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), "create a file access list"), H5Pclose);
  check_status(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "set the file close degree");
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  check_status(H5Pset_file_locking(fapl.get(), true, true), "set file locking");
#endif
  return fapl;
}

Handle string_type() {
  Handle type(check(H5Tcopy(H5T_C_S1), "copy the string type"), H5Tclose);
  check_status(H5Tset_size(type.get(), H5T_VARIABLE), "make a variable-length string type");
  check_status(H5Tset_cset(type.get(), H5T_CSET_UTF8), "set UTF-8 on the string type");
  return type;
}

Handle scalar_space() { return Handle(check(H5Screate(H5S_SCALAR), "create a scalar dataspace"), H5Sclose); }

Handle simple_space(const std::vector<hsize_t>& dims) {
  return Handle(
      check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "create a dataspace"),
      H5Sclose);
}

Handle open_attribute(hid_t obj, const std::string& name) {
  return Handle(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'"), H5Aclose);
}

void write_scalar_attribute(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type,
                            const void* value) {
  Handle space = scalar_space();
  Handle attr(check(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    "create attribute '" + name + "'"),
              H5Aclose);
  check_status(H5Awrite(attr.get(), mem_type, value), "write attribute '" + name + "'");
}

void read_scalar_attribute(hid_t obj, const std::string& name, hid_t mem_type, void* value) {
  Handle attr = open_attribute(obj, name);
  Handle space(check(H5Aget_space(attr.get()), "get the space of attribute '" + name + "'"), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    minictx::fail("attribute '" + name + "' is not a scalar");
  check_status(H5Aread(attr.get(), mem_type, value), "read attribute '" + name + "'");
}

Handle create_dataset(hid_t loc, const std::string& name, hid_t file_type, const std::vector<hsize_t>& dims) {
  Handle space = simple_space(dims);
  return Handle(
      check(H5Dcreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            "create dataset '" + name + "'"),
      H5Dclose);
}

// Reads a whole dataset of `count` elements; an empty vector's data() may be null, which
// H5Dread rejects, so nothing is read then.
void read_dataset(const Handle& dset, const std::string& name, hid_t mem_type, void* out, size_t count) {
  if (count > 0)
    check_status(H5Dread(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out),
                 "read dataset '" + name + "'");
}

hssize_t element_count(const Handle& dset, const std::string& name, std::vector<hsize_t>* dims) {
  Handle space(check(H5Dget_space(dset.get()), "get the space of dataset '" + name + "'"), H5Sclose);
  if (dims) {
    const int rank = H5Sget_simple_extent_ndims(space.get());
    check(rank, "get the rank of dataset '" + name + "'");
    dims->assign(static_cast<size_t>(rank), 0);
    check_status(H5Sget_simple_extent_dims(space.get(), dims->data(), nullptr),
                 "get the shape of dataset '" + name + "'");
  }
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail("count the elements of dataset '" + name + "'");
  // Every element takes at least a byte of the file (nothing is compressed): a larger
  // extent is damage, and reading it would allocate without bound.
  Handle file(check(H5Iget_file_id(dset.get()), "get the file of dataset '" + name + "'"), H5Fclose);
  hsize_t file_bytes = 0;
  check_status(H5Fget_filesize(file.get(), &file_bytes), "get the file size");
  if (hsize_t(n) > file_bytes)
    minictx::fail("dataset '" + name + "' claims " + std::to_string(n) + " elements, more than its file's " +
                  std::to_string(file_bytes) + " bytes");
  return n;
}

}  // namespace

std::string file_image(const std::function<void(hid_t file)>& fill) {
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), "create a file access list"), H5Pclose);
  check_status(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "set the file close degree");
  check_status(H5Pset_fapl_core(fapl.get(), 1 << 20, /*backing_store=*/false), "use the in-memory driver");
  Handle file(check(H5Fcreate("in-memory", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), "create file in memory"),
              H5Fclose);
  fill(file.get());
  check_status(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "flush the file in memory");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size < 0) fail("get the file image");
  std::string image(size_t(size), '\0');
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != size) fail("get the file image");
  file.close("file in memory");
  return image;
}

Handle open_file_readonly(const std::string& path) {
  Handle fapl = file_access_list();
  return Handle(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), "open file"), H5Fclose);
}

Handle create_group(hid_t loc, const std::string& name) {
  return Handle(check(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      "create group '" + name + "'"),
                H5Gclose);
}

Handle open_group(hid_t loc, const std::string& name) {
  return Handle(check(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), "open group '" + name + "'"), H5Gclose);
}

Handle open_dataset(hid_t loc, const std::string& name) {
  return Handle(check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'"), H5Dclose);
}

std::vector<std::string> link_names(hid_t group) {
  // One pass: asking for the i-th name by index sorts the group's links on every call.
  std::vector<std::string> names;
  hsize_t idx = 0;
  check_status(H5Literate(
                   group, H5_INDEX_NAME, H5_ITER_INC, &idx,
                   [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
                     static_cast<std::vector<std::string>*>(out)->emplace_back(name);
                     return 0;
                   },
                   &names),
               "list the links of a group");
  return names;
}

std::vector<std::string> attribute_names(hid_t obj) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  check_status(H5Aiterate2(
                   obj, H5_INDEX_NAME, H5_ITER_INC, &idx,
                   [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
                     static_cast<std::vector<std::string>*>(out)->emplace_back(name);
                     return 0;
                   },
                   &names),
               "list attributes");
  return names;
}

bool is_group(hid_t loc, const std::string& name) {
  Handle object(check(H5Oopen(loc, name.c_str(), H5P_DEFAULT), "open '" + name + "'"), H5Oclose);
  const H5I_type_t type = H5Iget_type(object.get());
  if (type != H5I_GROUP && type != H5I_DATASET)
    minictx::fail("'" + name + "' is neither a group nor a dataset");
  return type == H5I_GROUP;
}

H5T_class_t dataset_class(hid_t loc, const std::string& name) {
  Handle dset = open_dataset(loc, name);
  Handle type(check(H5Dget_type(dset.get()), "get the type of dataset '" + name + "'"), H5Tclose);
  return H5Tget_class(type.get());
}

bool has_attribute(hid_t obj, const std::string& name) {
  const htri_t exists = H5Aexists(obj, name.c_str());
  if (exists < 0) fail("look up attribute '" + name + "'");
  return exists > 0;
}

H5T_class_t attribute_class(hid_t obj, const std::string& name) {
  Handle attr = open_attribute(obj, name);
  Handle type(check(H5Aget_type(attr.get()), "get the type of attribute '" + name + "'"), H5Tclose);
  return H5Tget_class(type.get());
}

void write_attribute(hid_t obj, const std::string& name, const std::string& value) {
  Handle type = string_type();
  const char* chars = value.c_str();
  write_scalar_attribute(obj, name, type.get(), type.get(), &chars);
}

void write_attribute(hid_t obj, const std::string& name, double value) {
  write_scalar_attribute(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_attribute(hid_t obj, const std::string& name, int64_t value) {
  write_scalar_attribute(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

std::string read_string_attribute(hid_t obj, const std::string& name) {
  {
    Handle attr = open_attribute(obj, name);
    Handle type(check(H5Aget_type(attr.get()), "get the type of attribute '" + name + "'"), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) <= 0)
      minictx::fail("attribute '" + name + "' is not a variable-length string");
  }
  Handle type = string_type();
  char* chars = nullptr;
  read_scalar_attribute(obj, name, type.get(), &chars);
  std::string value = chars ? chars : "";
  H5free_memory(chars);
  return value;
}

double read_double_attribute(hid_t obj, const std::string& name) {
  double value = 0;
  read_scalar_attribute(obj, name, H5T_NATIVE_DOUBLE, &value);
  return value;
}

int64_t read_int_attribute(hid_t obj, const std::string& name) {
  int64_t value = 0;
  read_scalar_attribute(obj, name, H5T_NATIVE_INT64, &value);
  return value;
}

void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values,
                   const std::vector<hsize_t>& dims) {
  hsize_t count = 1;
  for (hsize_t d : dims) count *= d;
  if (count != values.size())
    minictx::fail("dataset '" + name + "': shape does not match its " + std::to_string(values.size()) +
                  " values");
  Handle dset = create_dataset(loc, name, H5T_IEEE_F64LE, dims);
  if (!values.empty())
    check_status(H5Dwrite(dset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 "write dataset '" + name + "'");
}

void write_int8s(hid_t loc, const std::string& name, const std::vector<int8_t>& values) {
  Handle dset = create_dataset(loc, name, H5T_STD_I8LE, {values.size()});
  if (!values.empty())
    check_status(H5Dwrite(dset.get(), H5T_NATIVE_INT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 "write dataset '" + name + "'");
}

void write_int32s(hid_t loc, const std::string& name, const std::vector<int32_t>& values) {
  Handle dset = create_dataset(loc, name, H5T_STD_I32LE, {values.size()});
  if (!values.empty())
    check_status(H5Dwrite(dset.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 "write dataset '" + name + "'");
}

void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  Handle type = string_type();
  Handle dset = create_dataset(loc, name, type.get(), {values.size()});
  std::vector<const char*> chars;
  chars.reserve(values.size());
  for (const std::string& v : values) chars.push_back(v.c_str());
  if (!chars.empty())
    check_status(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, chars.data()),
                 "write dataset '" + name + "'");
}

std::vector<double> read_doubles(hid_t loc, const std::string& name, std::vector<hsize_t>* dims) {
  Handle dset = open_dataset(loc, name);
  std::vector<double> values(static_cast<size_t>(element_count(dset, name, dims)));
  read_dataset(dset, name, H5T_NATIVE_DOUBLE, values.data(), values.size());
  return values;
}

std::vector<int8_t> read_int8s(hid_t loc, const std::string& name) {
  Handle dset = open_dataset(loc, name);
  std::vector<int8_t> values(static_cast<size_t>(element_count(dset, name, nullptr)));
  read_dataset(dset, name, H5T_NATIVE_INT8, values.data(), values.size());
  return values;
}

std::vector<int64_t> read_int64s(hid_t loc, const std::string& name, std::vector<hsize_t>* dims) {
  Handle dset = open_dataset(loc, name);
  std::vector<int64_t> values(static_cast<size_t>(element_count(dset, name, dims)));
  read_dataset(dset, name, H5T_NATIVE_INT64, values.data(), values.size());
  return values;
}

std::vector<std::string> read_strings(hid_t loc, const std::string& name) {
  Handle dset = open_dataset(loc, name);
  {
    Handle file_type(check(H5Dget_type(dset.get()), "get the type of dataset '" + name + "'"), H5Tclose);
    if (H5Tget_class(file_type.get()) != H5T_STRING || H5Tis_variable_str(file_type.get()) <= 0)
      minictx::fail("dataset '" + name + "' is not of variable-length strings");
  }
  Handle type = string_type();
  std::vector<char*> chars(static_cast<size_t>(element_count(dset, name, nullptr)), nullptr);
  read_dataset(dset, name, type.get(), chars.data(), chars.size());
  std::vector<std::string> values;
  for (char* c : chars) {
    values.emplace_back(c ? c : "");
    H5free_memory(c);
  }
  return values;
}

}  // namespace minictx::h5
