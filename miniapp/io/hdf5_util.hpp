#pragma once
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// Thin RAII layer over the HDF5 C API: every handle closes itself, every failing call
// throws minictx::Error with one line (what we tried, plus HDF5's innermost message).
// Serial HDF5: one rank only. Strings are variable-length UTF-8 throughout.
namespace minictx::h5 {

// Owns one hid_t and the function that closes it.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();

  hid_t get() const { return id_; }
  // Closes now and throws if HDF5 reports a failure (for a file, the final flush).
  void close(const std::string& what);

 private:
  hid_t id_;
  Closer closer_;
};

// Turns off HDF5's automatic printing of its error stack for its lifetime, so failures
// reach the user as our one-line errors instead of a screenful on stderr.
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t saved_func_ = nullptr;
  void* saved_data_ = nullptr;
};

// Throws Error("cannot <what> (HDF5: <innermost message>)") and clears the HDF5 stack.
[[noreturn]] void fail(const std::string& what);

// The bytes of a file built in memory with `fill`, for plain POSIX I/O to write
// (io/output_file.hpp): a full disk or an I/O error is then one Error naming the file and
// errno, and never a half-closed HDF5 file, which HDF5 1.10 cannot close again and crashes
// on when it tidies up at exit.
std::string file_image(const std::function<void(hid_t file)>& fill);
Handle open_file_readonly(const std::string& path);
Handle create_group(hid_t loc, const std::string& name);
Handle open_group(hid_t loc, const std::string& name);
Handle open_dataset(hid_t loc, const std::string& name);

// Names of the links in a group / attributes on an object, in name order.
std::vector<std::string> link_names(hid_t group);
// True if `name` in `loc` is a group, false if it is a dataset; Error for anything else.
bool is_group(hid_t loc, const std::string& name);
H5T_class_t dataset_class(hid_t loc, const std::string& name);
std::vector<std::string> attribute_names(hid_t obj);
bool has_attribute(hid_t obj, const std::string& name);
H5T_class_t attribute_class(hid_t obj, const std::string& name);

// Scalar attributes.
void write_attribute(hid_t obj, const std::string& name, const std::string& value);
void write_attribute(hid_t obj, const std::string& name, double value);
void write_attribute(hid_t obj, const std::string& name, int64_t value);
std::string read_string_attribute(hid_t obj, const std::string& name);
double read_double_attribute(hid_t obj, const std::string& name);
int64_t read_int_attribute(hid_t obj, const std::string& name);

// Datasets; `dims` gives the shape, whose product must equal values.size() (zero-length
// dimensions are allowed, so empty vectors are written as empty datasets).
void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values,
                   const std::vector<hsize_t>& dims);
void write_int8s(hid_t loc, const std::string& name, const std::vector<int8_t>& values);
void write_int32s(hid_t loc, const std::string& name, const std::vector<int32_t>& values);
void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values);
std::vector<double> read_doubles(hid_t loc, const std::string& name, std::vector<hsize_t>* dims = nullptr);
std::vector<int8_t> read_int8s(hid_t loc, const std::string& name);
// Any integer dataset.
std::vector<int64_t> read_int64s(hid_t loc, const std::string& name, std::vector<hsize_t>* dims = nullptr);
std::vector<std::string> read_strings(hid_t loc, const std::string& name);

}  // namespace minictx::h5
