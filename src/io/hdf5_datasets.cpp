// Creating and writing datasets (whole, or in ranges: each rank of a
// parallel file its own), reading ranges, the checksums of datasets written
// in ranges, and the atomic commit of a file written under a temporary name.

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io/hdf5_internal.hpp"
#include "runtime/communicator.hpp"

namespace distzo::io {

namespace {

/// The dataset creation properties distzo writes with: no timestamps (the
/// same tensors give the same bytes) and, in a parallel file, no fill pass.
Hdf5Handle dataset_properties(const std::string& path, bool parallel) {
  auto dcpl = check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, path + ": property list");
  H5Pset_obj_track_times(dcpl.get(), 0);
  if (parallel) H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  return dcpl;
}

/// Creates the groups above dataset `name` ("distzo/seed_log" of
/// "distzo/seed_log/g") that do not exist yet, without timestamps like the
/// datasets (HDF5's own intermediate groups would record the time).
void create_parent_groups(hid_t file, const std::string& path, const std::string& name) {
  auto gcpl = check(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, path + ": property list");
  H5Pset_obj_track_times(gcpl.get(), 0);
  for (std::size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    const std::string group = name.substr(0, slash);
    if (H5Lexists(file, group.c_str(), H5P_DEFAULT) > 0) continue;
    check(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose,
          path + ": cannot create group " + group);
  }
}

Hdf5Handle create_dataset(hid_t file, const std::string& path, const std::string& name,
                          const std::vector<std::int64_t>& shape, hid_t file_type, bool parallel) {
  create_parent_groups(file, path, name);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  auto space =
      check(dims.empty() ? H5Screate(H5S_SCALAR)
                         : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
            H5Sclose, path + ": dataspace for " + name);
  auto dcpl = dataset_properties(path, parallel);
  return check(
      H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      H5Dclose, path + ": cannot create dataset " + name);
}

/// Selects elements [first, first + count) of a rank-1 or rank-2 dataspace
/// in row-major order: at most a partial row, whole rows, a partial row.
void select_range(hid_t space, const std::string& what, std::uint64_t first, std::size_t count) {
  const int rank = H5Sget_simple_extent_ndims(space);
  DISTZO_REQUIRE(rank == 1 || rank == 2, what << ": ranges of rank-" << rank << " datasets");
  hsize_t dims[2] = {1, 1};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  const hsize_t cols = rank == 1 ? dims[0] : dims[1];
  DISTZO_REQUIRE(first + count <= (rank == 1 ? dims[0] : dims[0] * dims[1]),
                 what << ": elements [" << first << ", " << first + count << ") out of range");
  if (count == 0) {
    H5Sselect_none(space);
    return;
  }
  if (rank == 1) {
    const hsize_t start = first, n = count;
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &n, nullptr);
    return;
  }
  H5Sselect_none(space);
  const hsize_t a = first, b = first + count;
  const auto add = [&](hsize_t row, hsize_t col, hsize_t rows, hsize_t width) {
    if (rows == 0 || width == 0) return;
    const hsize_t start[2] = {row, col}, n[2] = {rows, width};
    H5Sselect_hyperslab(space, H5S_SELECT_OR, start, nullptr, n, nullptr);
  };
  const hsize_t r0 = a / cols, c0 = a % cols, r1 = b / cols, c1 = b % cols;
  if (r0 == r1) return add(r0, c0, 1, c1 - c0);
  const hsize_t full_from = c0 == 0 ? r0 : r0 + 1;
  if (c0 != 0) add(r0, c0, 1, cols - c0);
  add(full_from, 0, r1 - full_from, cols);
  add(r1, 0, 1, c1);
}

/// Collective transfer in a parallel file (every rank writes its part of a
/// dataset in one MPI-IO operation); the default otherwise.
Hdf5Handle transfer_properties(const std::string& path, bool parallel) {
  auto dxpl = check(H5Pcreate(H5P_DATASET_XFER), H5Pclose, path + ": transfer properties");
#ifdef H5_HAVE_PARALLEL
  if (parallel) H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
#else
  (void)parallel;
#endif
  return dxpl;
}

}  // namespace

namespace {
std::size_t elements_of(const std::vector<std::int64_t>& shape) {
  std::size_t elements = 1;
  for (std::int64_t d : shape) elements *= static_cast<std::size_t>(d);
  return elements;
}
}  // namespace

void Hdf5File::write_from(const std::string& name, const std::vector<std::int64_t>& shape,
                          hid_t file_type, hid_t mem_type, const void* data,
                          std::uint64_t checksum) {
  auto dset = create_dataset(id(), path_, name, shape, file_type, parallel_);
  // A parallel file: the dataset is made by all, its (small) data written by
  // rank 0; the checksum attribute is collective, with rank 0's value.
  if (parallel_) comm_->broadcast(&checksum, sizeof(checksum), 0);
  if (!parallel_ || rank_ == 0) {
    errno = 0;
    DISTZO_INPUT_REQUIRE(H5Dwrite(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
                         path_ << ": cannot write dataset '" << name << "'" << write_cause(path_));
  }
  write_string_attribute_to(dset.get(), path_, kChecksum, hex16(checksum));
}

void Hdf5File::write_range_checksums() {
  std::vector<std::uint64_t> sums;
  for (const auto& [name, sum] : range_sums_) sums.push_back(sum);
  // Every rank wrote (a possibly empty range of) every dataset: one map, one order.
  if (parallel_ && !sums.empty()) comm_->allreduce_sum(sums.data(), static_cast<int>(sums.size()));
  std::size_t i = 0;
  for (const auto& entry : range_sums_) {
    auto dset = check(H5Dopen2(id(), entry.first.c_str(), H5P_DEFAULT), H5Dclose,
                      path_ + ": dataset " + entry.first);
    write_string_attribute_to(dset.get(), path_, kChecksum, hex16(sums[i++]));
  }
  range_sums_.clear();
}

void Hdf5File::create_tensor(const std::string& name, const std::vector<std::int64_t>& shape,
                             StorageDtype dtype) {
  if (dtype == StorageDtype::fp32) {
    create_dataset(id(), path_, name, shape, H5T_IEEE_F32LE, parallel_);
    return;
  }
  const Hdf5Handle type = half_float_type(dtype);
  create_dataset(id(), path_, name, shape, type.get(), parallel_);
}

void Hdf5File::write_float_range(const std::string& name, std::uint64_t first, std::size_t count,
                                 const float* data) {
  write_range(name, first, count, H5T_NATIVE_FLOAT, data,
              count == 0 ? 0 : dataset_checksum(data, count, first));
}

void Hdf5File::write_word_range(const std::string& name, std::uint64_t first, std::size_t count,
                                StorageDtype dtype, const std::uint16_t* data) {
  const Hdf5Handle type = native_half_type(dtype);
  write_range(name, first, count, type.get(), data,
              count == 0 ? 0 : words_checksum(dtype, data, count, first));
}

void Hdf5File::write_range(const std::string& name, std::uint64_t first, std::size_t count,
                           hid_t mem_type, const void* data, std::uint64_t checksum) {
  range_sums_[name] += checksum;
  auto dset =
      check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, path_ + ": dataset " + name);
  auto file_space = check(H5Dget_space(dset.get()), H5Sclose, path_ + ": dataspace of " + name);
  select_range(file_space.get(), path_ + ": " + name, first, count);
  const hsize_t n = count > 0 ? count : 1;  // a rank with nothing to write selects none
  auto memory_space = check(H5Screate_simple(1, &n, nullptr), H5Sclose, path_ + ": memory space");
  if (count == 0) H5Sselect_none(memory_space.get());
  auto dxpl = transfer_properties(path_, parallel_);
  errno = 0;
  DISTZO_INPUT_REQUIRE(
      H5Dwrite(dset.get(), mem_type, memory_space.get(), file_space.get(), dxpl.get(), data) >= 0,
      path_ << ": cannot write elements [" << first << ", " << first + count << ") of '" << name
            << "'" << write_cause(path_));
}

void Hdf5File::read_float_range(const std::string& name, std::uint64_t first, std::size_t count,
                                float* out) const {
  read_range(name, first, count, H5T_NATIVE_FLOAT, out);
}

void Hdf5File::read_word_range(const std::string& name, std::uint64_t first, std::size_t count,
                               std::uint16_t* out) const {
  const DatasetInfo info = dataset_info(name);
  const std::optional<StorageDtype> half = tensor_dtype(info);
  DISTZO_INPUT_REQUIRE(
      half && *half != StorageDtype::fp32,
      path_ << ": dataset '" << name << "' is " << info.dtype << ", expected float16 or bfloat16");
  const Hdf5Handle type = native_half_type(*half);
  read_range(name, first, count, type.get(), out);
}

void Hdf5File::read_range(const std::string& name, std::uint64_t first, std::size_t count,
                          hid_t mem_type, void* out) const {
  auto dset =
      check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, path_ + ": dataset " + name);
  auto file_space = check(H5Dget_space(dset.get()), H5Sclose, path_ + ": dataspace of " + name);
  select_range(file_space.get(), path_ + ": " + name, first, count);
  const hsize_t n = count;
  auto memory_space = check(H5Screate_simple(1, &n, nullptr), H5Sclose, path_ + ": memory space");
  DISTZO_REQUIRE(
      H5Dread(dset.get(), mem_type, memory_space.get(), file_space.get(), H5P_DEFAULT, out) >= 0,
      path_ << ": cannot read elements [" << first << ", " << first + count << ") of '" << name
            << "'");
}

void Hdf5File::write_floats(const std::string& name, const std::vector<std::int64_t>& shape,
                            const float* data) {
  write_from(name, shape, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data,
             dataset_checksum(data, elements_of(shape)));
}

void Hdf5File::write_words(const std::string& name, const std::vector<std::int64_t>& shape,
                           StorageDtype dtype, const std::uint16_t* data) {
  const Hdf5Handle file_type = half_float_type(dtype), memory_type = native_half_type(dtype);
  write_from(name, shape, file_type.get(), memory_type.get(), data,
             words_checksum(dtype, data, elements_of(shape)));
}

void Hdf5File::write_doubles(const std::string& name, const std::vector<std::int64_t>& shape,
                             const double* data) {
  write_from(name, shape, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data,
             dataset_checksum(data, 2 * elements_of(shape)));
}

void Hdf5File::write_ints(const std::string& name, const std::vector<std::int64_t>& shape,
                          const std::int32_t* data) {
  write_from(name, shape, H5T_STD_I32LE, H5T_NATIVE_INT32, data,
             dataset_checksum(data, elements_of(shape)));
}

void Hdf5File::write_int64s(const std::string& name, const std::vector<std::int64_t>& shape,
                            const std::int64_t* data) {
  write_from(name, shape, H5T_STD_I64LE, H5T_NATIVE_INT64, data,
             dataset_checksum(data, 2 * elements_of(shape)));
}

std::string temporary_path_for(const std::string& path) {
  return path + ".tmp." + std::to_string(static_cast<long>(getpid()));
}

void commit_temporary(const std::string& temporary, const std::string& path) {
  DISTZO_REQUIRE(std::rename(temporary.c_str(), path.c_str()) == 0,
                 "cannot rename '" << temporary << "' to '" << path << "'");
}

void discard_temporary(const std::string& temporary) { std::remove(temporary.c_str()); }

}  // namespace distzo::io
