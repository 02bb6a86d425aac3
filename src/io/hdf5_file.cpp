#include "io/hdf5_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/digest.hpp"
#include "core/error.hpp"
#include "core/file_system.hpp"
#include "io/hdf5_internal.hpp"
#include "kernels/digest.hpp"
#include "runtime/mpi_communicator.hpp"

namespace distzo::io {

namespace {

/// HDF5 prints its own error stack to stderr by default; distzo reports errors
/// itself, with the file and object named, so the stack is silenced once.
void silence_hdf5_error_stack() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

/// The 2-byte θ format of a float type, if it is one: IEEE binary16's or
/// bfloat16's fields and bias, implied mantissa bit.
std::optional<StorageDtype> half_format(hid_t type) {
  if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != 2) return std::nullopt;
  std::size_t sign = 0, exponent = 0, exponent_bits = 0, mantissa = 0, mantissa_bits = 0;
  if (H5Tget_fields(type, &sign, &exponent, &exponent_bits, &mantissa, &mantissa_bits) < 0 ||
      H5Tget_norm(type) != H5T_NORM_IMPLIED || H5Tget_precision(type) != 16 ||
      H5Tget_offset(type) != 0 || sign != 15 || mantissa != 0)
    return std::nullopt;
  const std::size_t bias = H5Tget_ebias(type);
  if (exponent == 10 && exponent_bits == 5 && mantissa_bits == 10 && bias == 15)
    return StorageDtype::fp16;
  if (exponent == 7 && exponent_bits == 8 && mantissa_bits == 7 && bias == 127)
    return StorageDtype::bf16;
  return std::nullopt;
}

std::string dtype_name(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT && size == 2) {
    const std::optional<StorageDtype> half = half_format(type);
    return !half ? "other" : *half == StorageDtype::fp16 ? "float16" : "bfloat16";
  }
  if (cls == H5T_FLOAT) return size == 4 ? "float32" : size == 8 ? "float64" : "other";
  if (cls == H5T_INTEGER) return size == 4 ? "int32" : size == 8 ? "int64" : "other";
  return "other";
}

/// The root attribute close() writes over the others (verify_attributes).
constexpr const char* kAttributesChecksum = "attributes_checksum";

/// Set when a file failed to close (hdf5_close_failed).
bool close_failed = false;

/// The closer of every file handle: a failed close (a write that ran out of
/// space, flushed on close) is remembered, whoever closes.
herr_t close_file(hid_t id) {
  const herr_t status = H5Fclose(id);
  if (status < 0) close_failed = true;
  return status;
}

/// An attribute distzo reads holds one value: a scalar (or a one-element
/// array, as numpy writers may make). Reading more into one value would
/// overrun it.
void require_one_value(hid_t attr, const std::string& path, const std::string& name) {
  auto space = check(H5Aget_space(attr), H5Sclose, path + ": dataspace of attribute " + name);
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  DISTZO_INPUT_REQUIRE(points == 1, path << ": attribute '" << name << "' holds " << points
                                         << " values; distzo expects a single value there");
}

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

/// How distzo creates files: in the HDF5 1.8 format (readable by HDF5 1.8
/// and later, h5py included), whose object headers and indexes carry
/// checksums that HDF5 verifies on every read, so damaged metadata is an
/// error rather than garbage; it also stores attributes over 64 KiB (a long
/// deck's text as a fixed-length string).
Hdf5Handle create_access_properties(const std::string& path) {
  auto fapl = check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path + ": file access properties");
  DISTZO_REQUIRE(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18) >= 0,
                 path << ": cannot select the HDF5 1.8 file format");
  return fapl;
}

/// No timestamp on the root group (the 1.8 format would record its creation
/// time): equal content gives byte-identical files.
Hdf5Handle create_file_properties(const std::string& path) {
  auto fcpl = check(H5Pcreate(H5P_FILE_CREATE), H5Pclose, path + ": file creation properties");
  H5Pset_obj_track_times(fcpl.get(), 0);
  return fcpl;
}

}  // namespace

Hdf5Handle check(hid_t id, Hdf5Handle::Closer closer, const std::string& what) {
  DISTZO_REQUIRE(id >= 0, what);
  return Hdf5Handle(id, closer);
}

Hdf5Handle native_half_type(StorageDtype dtype) {
  Hdf5Handle type = half_float_type(dtype);
  H5Tset_order(type.get(), H5Tget_order(H5T_NATIVE_USHORT));
  return type;
}

std::string write_cause(const std::string& path) {
  const int error = errno;
  const std::string dir = directory_of(path);
  const double free = free_bytes(dir);  // negative: unknown
  if (error == ENOSPC || (free >= 0 && free < 1024.0 * 1024.0))
    return ": disk full (" + std::to_string(static_cast<long long>(free)) + " bytes free on " +
           dir + ")";
  if (error == EDQUOT) return ": disk quota exceeded on " + dir;
  if (error == EFBIG) return ": file too large (the process's file size limit, ulimit -f)";
  if (error != 0) return std::string(": ") + std::strerror(error);
  return "";
}

Hdf5File::Hdf5File(const std::string& path, Mode mode) : path_(path) {
  silence_hdf5_error_stack();
  errno = 0;
  if (mode == Mode::read) {
    DISTZO_INPUT_REQUIRE(access(path.c_str(), R_OK) == 0,
                         "cannot read '" << path << "': " << std::strerror(errno));
    // HDF5 would wait forever on a FIFO (or read a device to its end): only
    // regular files (or links to them) hold models, datasets and checkpoints.
    DISTZO_INPUT_REQUIRE(is_regular_file(path),
                         "'" << path << "' is " << file_kind(path) << ", not a regular file: "
                             << "distzo reads models, datasets and checkpoints from regular files");
    const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    DISTZO_INPUT_REQUIRE(id >= 0, "'" << path
                                      << "' does not open as HDF5 (not an HDF5 file, or "
                                         "truncated or damaged)");
    file_ = Hdf5Handle(id, close_file);
    check_structure();
  } else {
    auto fapl = create_access_properties(path);
    auto fcpl = create_file_properties(path);
    const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
    DISTZO_INPUT_REQUIRE(id >= 0, "cannot create HDF5 file '" << path << "'" << write_cause(path));
    file_ = Hdf5Handle(id, close_file);
    writing_ = true;
  }
}

Hdf5File::Hdf5File(const std::string& path, const runtime::MpiCommunicator& comm)
    : path_(path), parallel_(true), writing_(true) {
  silence_hdf5_error_stack();
  DISTZO_REQUIRE(parallel_available(),
                 "cannot write '" << path << "' in parallel: this HDF5 was built without MPI");
#ifdef H5_HAVE_PARALLEL
  rank_ = comm.rank();
  comm_ = &comm;
  auto fapl = create_access_properties(path);
  H5Pset_fapl_mpio(fapl.get(), comm.comm(), MPI_INFO_NULL);
  auto fcpl = create_file_properties(path);
  file_ = check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), close_file,
                "cannot create HDF5 file '" + path + "' (MPI-IO)");
#else
  (void)comm;
#endif
}

bool Hdf5File::parallel_available() {
#ifdef H5_HAVE_PARALLEL
  return true;
#else
  return false;
#endif
}

bool hdf5_close_failed() { return close_failed; }

void Hdf5File::close() {
  if (file_.get() < 0) return;
  write_range_checksums();
  if (writing_) write_string_attribute(kAttributesChecksum, root_attributes_checksum());
  const hid_t id = file_.release();
  errno = 0;
  if (close_file(id) >= 0) return;
  // The id cannot be closed again (HDF5 1.10 crashes); see hdf5_close_failed.
  DISTZO_INPUT_FAIL("cannot finish writing '" << path_ << "' (its data is flushed on close)"
                                              << write_cause(path_));
}

void require_free_space(const std::string& path, double bytes, const std::string& what) {
  const std::string dir = directory_of(path);
  const double free = free_bytes(dir);  // negative: unknown, let the write tell
  DISTZO_INPUT_REQUIRE(free < 0 || free >= bytes,
                       "cannot write " << what << " '" << path << "': disk full (it needs about "
                                       << static_cast<long long>(bytes) << " bytes, "
                                       << static_cast<long long>(free) << " are free on " << dir
                                       << ")");
}

bool Hdf5File::has_attribute(const std::string& name) const {
  return H5Aexists(id(), name.c_str()) > 0;
}

std::int64_t Hdf5File::read_int_attribute(const std::string& name) const {
  DISTZO_INPUT_REQUIRE(has_attribute(name), path_ << ": missing attribute '" << name << "'");
  auto attr =
      check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, path_ + ": attribute " + name);
  auto type = check(H5Aget_type(attr.get()), H5Tclose, path_ + ": attribute type " + name);
  DISTZO_INPUT_REQUIRE(H5Tget_class(type.get()) == H5T_INTEGER,
                       path_ << ": attribute '" << name << "' should be an integer");
  require_one_value(attr.get(), path_, name);
  std::int64_t value = 0;
  DISTZO_REQUIRE(H5Aread(attr.get(), H5T_NATIVE_INT64, &value) >= 0,
                 path_ << ": cannot read attribute '" << name << "'");
  return value;
}

double Hdf5File::read_double_attribute(const std::string& name) const {
  DISTZO_INPUT_REQUIRE(has_attribute(name), path_ << ": missing attribute '" << name << "'");
  auto attr =
      check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, path_ + ": attribute " + name);
  auto type = check(H5Aget_type(attr.get()), H5Tclose, path_ + ": attribute type " + name);
  const H5T_class_t cls = H5Tget_class(type.get());
  DISTZO_INPUT_REQUIRE(cls == H5T_FLOAT || cls == H5T_INTEGER,
                       path_ << ": attribute '" << name << "' should be a number");
  require_one_value(attr.get(), path_, name);
  double value = 0;
  DISTZO_REQUIRE(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0,
                 path_ << ": cannot read attribute '" << name << "' as a number");
  return value;
}

const std::string& Hdf5File::variable_string(const std::string& object,
                                             const std::string& name) const {
  const auto it = variable_strings_.find(object + "\n" + name);
  DISTZO_INPUT_REQUIRE(it != variable_strings_.end(),
                       path_ << ": attribute '" << name << "'"
                             << (object.empty() ? std::string() : " of '" + object + "'")
                             << " could not be read");
  return it->second;
}

namespace {

/// Of the file (its root group: `object_name` "") or of one of its datasets.
std::string read_string_attribute_of(const Hdf5File& file, hid_t object,
                                     const std::string& object_name, const std::string& name) {
  const std::string& path = file.path();
  DISTZO_REQUIRE(H5Aexists(object, name.c_str()) > 0,
                 path << ": missing attribute '" << name << "'");
  auto attr =
      check(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, path + ": attribute " + name);
  auto type = check(H5Aget_type(attr.get()), H5Tclose, path + ": attribute type " + name);
  DISTZO_INPUT_REQUIRE(H5Tget_class(type.get()) == H5T_STRING,
                       path << ": attribute '" << name << "' should be a string");
  require_one_value(attr.get(), path, name);
  // h5py writes variable-length UTF-8 strings (as distzo did before it wrote
  // fixed-length ones); they live in a global heap that HDF5 trusts.
  if (H5Tis_variable_str(type.get()) > 0) return file.variable_string(object_name, name);
  std::string value(H5Tget_size(type.get()), '\0');
  DISTZO_REQUIRE(H5Aread(attr.get(), type.get(), value.data()) >= 0,
                 path << ": cannot read attribute '" << name << "'");
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}
}  // namespace

std::string Hdf5File::read_string_attribute(const std::string& name) const {
  return read_string_attribute_of(*this, id(), "", name);
}

std::uint64_t dataset_checksum(const void* data, std::size_t words, std::uint64_t first) {
  // The digest's element-sum kernel reads 32-bit words; it never looks at
  // them as numbers (bits only), so any 32-bit word serves.
  return kernels::host_tensor_element_sum(Kokkos::DefaultHostExecutionSpace(),
                                          StoredElements(static_cast<const real*>(data)), words,
                                          first);
}

std::uint64_t words_checksum(StorageDtype dtype, const std::uint16_t* data, std::size_t count,
                             std::uint64_t first) {
  return kernels::host_tensor_element_sum(Kokkos::DefaultHostExecutionSpace(),
                                          StoredElements(dtype, data), count, first);
}

Hdf5Handle half_float_type(StorageDtype dtype) {
  DISTZO_REQUIRE(dtype != StorageDtype::fp32, "half_float_type: float32 is not a 2-byte type");
  // As h5py makes its float16: a copy of IEEE binary32 with the fields
  // (sign, exponent position and size, mantissa position and size) moved,
  // 2 bytes, 16 bits of precision, and the exponent bias set.
  Hdf5Handle type = check(H5Tcopy(H5T_IEEE_F32LE), H5Tclose, "half_float_type: H5Tcopy");
  const bool half = dtype == StorageDtype::fp16;
  const hid_t t = type.get();
  DISTZO_REQUIRE(H5Tset_fields(t, 15, half ? 10 : 7, half ? 5 : 8, 0, half ? 10 : 7) >= 0 &&
                     H5Tset_size(t, 2) >= 0 && H5Tset_precision(t, 16) >= 0 &&
                     H5Tset_ebias(t, half ? 15 : 127) >= 0,
                 "half_float_type: cannot build the " << to_string(dtype) << " type");
  return type;
}

std::optional<StorageDtype> tensor_dtype(const DatasetInfo& info) {
  if (info.dtype == "float32") return StorageDtype::fp32;
  if (info.dtype == "float16") return StorageDtype::fp16;
  if (info.dtype == "bfloat16") return StorageDtype::bf16;
  return std::nullopt;
}

namespace {

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

/// FNV-1a 64 of `bytes`, continuing from `hash`.
std::uint64_t fnv1a(std::uint64_t hash, const void* bytes, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 0x100000001b3ULL;
  return hash;
}

template <class T>
void write_scalar_attribute(hid_t file, const std::string& path, const std::string& name,
                            hid_t type, const T* value) {
  if (H5Aexists(file, name.c_str()) > 0) H5Adelete(file, name.c_str());
  auto space = check(H5Screate(H5S_SCALAR), H5Sclose, path + ": dataspace");
  auto attr = check(H5Acreate2(file, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    H5Aclose, path + ": cannot create attribute " + name);
  errno = 0;
  DISTZO_INPUT_REQUIRE(H5Awrite(attr.get(), type, value) >= 0,
                       path << ": cannot write attribute '" << name << "'" << write_cause(path));
}
}  // namespace

void Hdf5File::write_int_attribute(const std::string& name, std::int64_t value) {
  write_scalar_attribute(id(), path_, name, H5T_NATIVE_INT64, &value);
}

void Hdf5File::write_double_attribute(const std::string& name, double value) {
  write_scalar_attribute(id(), path_, name, H5T_NATIVE_DOUBLE, &value);
}

void write_string_attribute_to(hid_t object, const std::string& path, const std::string& name,
                               const std::string& value) {
  // Fixed-length UTF-8, null-padded, as h5py writes numpy bytes (h5py reads
  // it as bytes, h5dump as text). Not variable-length: those strings live in
  // a global heap that HDF5 reads unchecked (Hdf5File::variable_string).
  // One byte at least: HDF5 has no 0-byte string type.
  auto type = check(H5Tcopy(H5T_C_S1), H5Tclose, path + ": string type");
  DISTZO_REQUIRE(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)) >= 0 &&
                     H5Tset_strpad(type.get(), H5T_STR_NULLPAD) >= 0 &&
                     H5Tset_cset(type.get(), H5T_CSET_UTF8) >= 0,
                 path << ": cannot make the string type of attribute '" << name << "'");
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  write_scalar_attribute(object, path, name, type.get(), padded.data());
}

void Hdf5File::write_string_attribute(const std::string& name, const std::string& value) {
  write_string_attribute_to(id(), path_, name, value);
}

std::string Hdf5File::root_attributes_checksum() const {
  std::vector<std::string> names;  // in name order
  H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attribute_name, &names);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const std::string& name : names) {
    if (name == kAttributesChecksum) continue;
    hash = fnv1a(hash, name.c_str(), name.size() + 1);
    auto attr =
        check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, path_ + ": attribute " + name);
    auto type = check(H5Aget_type(attr.get()), H5Tclose, path_ + ": attribute type " + name);
    // The value as distzo reads it: an integer, a double's bits, a string.
    switch (H5Tget_class(type.get())) {
      case H5T_INTEGER: {
        const std::int64_t v = read_int_attribute(name);
        hash = fnv1a(hash, &v, sizeof v);
        break;
      }
      case H5T_FLOAT: {
        const double v = read_double_attribute(name);
        hash = fnv1a(hash, &v, sizeof v);
        break;
      }
      case H5T_STRING: {
        const std::string v = read_string_attribute(name);
        hash = fnv1a(hash, v.c_str(), v.size() + 1);
        break;
      }
      default:
        DISTZO_INPUT_FAIL(path_ << ": attribute '" << name
                                << "' is of a type distzo does not write (damaged?)");
    }
  }
  return hex16(hash);
}

void Hdf5File::verify_attributes() const {
  if (!has_attribute(kAttributesChecksum)) return;
  const std::string recorded = read_string_attribute(kAttributesChecksum);
  const std::string found = root_attributes_checksum();
  DISTZO_INPUT_REQUIRE(found == recorded,
                       path_ << ": its attributes do not match their checksum (recorded "
                             << recorded << ", they give " << found
                             << "): the file changed after it was written (corrupt bytes)");
}

bool Hdf5File::has_dataset(const std::string& name) const {
  if (H5Lexists(id(), name.c_str(), H5P_DEFAULT) <= 0) return false;
  // H5Oopen + H5Iget_type works on HDF5 1.10 (Debian 12) and 1.12+ alike.
  const hid_t object = H5Oopen(id(), name.c_str(), H5P_DEFAULT);
  if (object < 0) return false;
  const bool is_dataset = H5Iget_type(object) == H5I_DATASET;
  H5Oclose(object);
  return is_dataset;
}

DatasetInfo Hdf5File::dataset_info(const std::string& name) const {
  DISTZO_INPUT_REQUIRE(has_dataset(name), path_ << ": missing dataset '" << name << "'");
  auto dset =
      check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, path_ + ": dataset " + name);
  auto space = check(H5Dget_space(dset.get()), H5Sclose, path_ + ": dataspace of " + name);
  auto type = check(H5Dget_type(dset.get()), H5Tclose, path_ + ": type of " + name);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank > 0 ? rank : 0));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  DatasetInfo info;
  info.name = name;
  for (hsize_t d : dims) info.shape.push_back(static_cast<std::int64_t>(d));
  info.dtype = dtype_name(type.get());
  return info;
}

std::vector<DatasetInfo> Hdf5File::list_datasets() const {
  std::vector<std::string> names;
  H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names);
  std::vector<DatasetInfo> out;
  for (const auto& n : names)
    if (has_dataset(n)) out.push_back(dataset_info(n));
  return out;
}

namespace {
/// Elements of a dataset, refusing shapes whose product overflows.
std::size_t element_count(const std::string& path, const DatasetInfo& info) {
  std::size_t n = 1;
  for (auto d : info.shape)
    DISTZO_INPUT_REQUIRE(!__builtin_mul_overflow(n, static_cast<std::size_t>(d), &n),
                         path << ": dataset '" << info.name
                              << "' has a shape whose element count "
                                 "overflows 64 bits");
  return n;
}
}  // namespace

std::uint64_t Hdf5File::read_into(const std::string& name, hid_t mem_type, void* out,
                                  std::size_t count, bool want_sum) const {
  const DatasetInfo info = dataset_info(name);
  const std::size_t n = element_count(path_, info);
  {  // HDF5 would round floats to integers silently (integers to floats are exact enough)
    auto dset =
        check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, path_ + ": dataset " + name);
    auto type = check(H5Dget_type(dset.get()), H5Tclose, path_ + ": type of " + name);
    const H5T_class_t stored = H5Tget_class(type.get()), wanted = H5Tget_class(mem_type);
    DISTZO_INPUT_REQUIRE((stored == H5T_INTEGER || stored == H5T_FLOAT) &&
                             !(stored == H5T_FLOAT && wanted == H5T_INTEGER),
                         path_ << ": dataset '" << name << "' is " << info.dtype << ", expected "
                               << (wanted == H5T_FLOAT ? "numbers" : "integers"));
  }
  DISTZO_INPUT_REQUIRE(n == count, path_ << ": dataset '" << name << "' has " << n
                                         << " elements, expected " << count);
  auto dset =
      check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, path_ + ": dataset " + name);
  DISTZO_REQUIRE(H5Dread(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0,
                 path_ << ": cannot read dataset '" << name << "' (" << info.dtype << ")");
  const std::size_t out_words = n * H5Tget_size(mem_type) / 4;
  if (H5Aexists(dset.get(), kChecksum) <= 0)  // written by another tool
    return want_sum ? dataset_checksum(out, out_words) : 0;
  // The checksum is over the stored words: read them as stored when the
  // caller asked for another type.
  auto stored = check(H5Dget_type(dset.get()), H5Tclose, path_ + ": type of " + name);
  const std::size_t word_bytes = H5Tget_size(stored.get());
  if (const std::optional<StorageDtype> half = half_format(stored.get())) {
    // A 2-byte tensor read as another type: its checksum is over its words.
    std::vector<std::uint16_t> raw(n);
    auto native = native_half_type(*half);
    DISTZO_REQUIRE(
        H5Dread(dset.get(), native.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) >= 0,
        path_ << ": cannot read dataset '" << name << "' (" << info.dtype << ")");
    const std::uint64_t sum = words_checksum(*half, raw.data(), n);
    const std::string recorded = read_string_attribute_of(*this, dset.get(), name, kChecksum);
    DISTZO_INPUT_REQUIRE(hex16(sum) == recorded,
                         path_ << ": dataset '" << name
                               << "' does not match its checksum (recorded " << recorded
                               << ", its data gives " << hex16(sum)
                               << "): the file changed after it was written (corrupt bytes)");
    return want_sum ? dataset_checksum(out, out_words) : 0;
  }
  DISTZO_INPUT_REQUIRE(word_bytes == 4 || word_bytes == 8,
                       path_ << ": dataset '" << name << "' has a checksum but " << word_bytes
                             << "-byte elements (checksums cover 4- and 8-byte ones)");
  std::vector<std::uint32_t> raw;
  const void* words = out;
  if (H5Tequal(stored.get(), mem_type) <= 0) {
    auto native = check(H5Tget_native_type(stored.get(), H5T_DIR_ASCEND), H5Tclose,
                        path_ + ": native type of " + name);
    raw.resize(n * word_bytes / 4);
    DISTZO_REQUIRE(
        H5Dread(dset.get(), native.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) >= 0,
        path_ << ": cannot read dataset '" << name << "' (" << info.dtype << ")");
    words = raw.data();
  }
  const std::string recorded = read_string_attribute_of(*this, dset.get(), name, kChecksum);
  const std::uint64_t sum = dataset_checksum(words, n * word_bytes / 4);
  const std::string found = hex16(sum);
  DISTZO_INPUT_REQUIRE(found == recorded,
                       path_ << ": dataset '" << name << "' does not match its checksum (recorded "
                             << recorded << ", its data gives " << found
                             << "): the file changed after it was written (corrupt bytes)");
  if (!want_sum) return 0;
  return words == out ? sum : dataset_checksum(out, out_words);
}

std::vector<float> Hdf5File::read_floats(const std::string& name,
                                         std::uint64_t* element_sum) const {
  std::vector<float> v(element_count(path_, dataset_info(name)));
  const std::uint64_t sum = read_into(name, H5T_NATIVE_FLOAT, v.data(), v.size(), element_sum);
  if (element_sum) *element_sum = sum;
  return v;
}

std::vector<std::uint16_t> Hdf5File::read_words(const std::string& name, StorageDtype* dtype,
                                                std::uint64_t* element_sum) const {
  const DatasetInfo info = dataset_info(name);
  const std::optional<StorageDtype> half = tensor_dtype(info);
  DISTZO_INPUT_REQUIRE(
      half && *half != StorageDtype::fp32,
      path_ << ": dataset '" << name << "' is " << info.dtype << ", expected float16 or bfloat16");
  std::vector<std::uint16_t> words(element_count(path_, info));
  auto dset =
      check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, path_ + ": dataset " + name);
  auto native = native_half_type(*half);
  DISTZO_REQUIRE(
      H5Dread(dset.get(), native.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, words.data()) >= 0,
      path_ << ": cannot read dataset '" << name << "' (" << info.dtype << ")");
  const std::uint64_t sum = words_checksum(*half, words.data(), words.size());
  if (H5Aexists(dset.get(), kChecksum) > 0) {
    const std::string recorded = read_string_attribute_of(*this, dset.get(), name, kChecksum);
    DISTZO_INPUT_REQUIRE(hex16(sum) == recorded,
                         path_ << ": dataset '" << name
                               << "' does not match its checksum (recorded " << recorded
                               << ", its data gives " << hex16(sum)
                               << "): the file changed after it was written (corrupt bytes)");
  }
  if (dtype) *dtype = *half;
  if (element_sum) *element_sum = sum;
  return words;
}

std::vector<double> Hdf5File::read_doubles(const std::string& name) const {
  std::vector<double> v(element_count(path_, dataset_info(name)));
  read_into(name, H5T_NATIVE_DOUBLE, v.data(), v.size());
  return v;
}

std::vector<std::int32_t> Hdf5File::read_ints(const std::string& name) const {
  // HDF5 would clamp wider integers into int32 silently: read them whole,
  // then say which value does not fit.
  const std::vector<std::int64_t> wide = read_int64s(name);
  std::vector<std::int32_t> v(wide.size());
  for (std::size_t i = 0; i < wide.size(); ++i) {
    DISTZO_INPUT_REQUIRE(wide[i] >= INT32_MIN && wide[i] <= INT32_MAX,
                         path_ << ": dataset '" << name << "' element " << i << " is " << wide[i]
                               << ", outside the 32-bit integers distzo reads it as");
    v[i] = static_cast<std::int32_t>(wide[i]);
  }
  return v;
}

std::vector<std::int64_t> Hdf5File::read_int64s(const std::string& name) const {
  std::vector<std::int64_t> v(element_count(path_, dataset_info(name)));
  read_into(name, H5T_NATIVE_INT64, v.data(), v.size());
  return v;
}

}  // namespace distzo::io
