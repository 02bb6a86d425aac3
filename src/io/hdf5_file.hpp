#pragma once
// A thin RAII layer over the HDF5 C API: handles close themselves, every call
// is checked, and errors name the file and the object. Only what distzo's
// formats need: root-level datasets and attributes of a few scalar types.

#include <hdf5.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/storage_dtype.hpp"
#include "core/unlinked_on_signal.hpp"

namespace distzo::runtime {
class Communicator;
class MpiCommunicator;
}  // namespace distzo::runtime

namespace distzo::io {

/// Owns one hid_t and closes it with the matching H5*close.
class Hdf5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Hdf5Handle() = default;
  Hdf5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  Hdf5Handle(Hdf5Handle&& other) noexcept { swap(other); }
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept {
    swap(other);
    return *this;
  }
  ~Hdf5Handle() {
    if (id_ >= 0 && closer_) closer_(id_);
  }
  hid_t get() const { return id_; }
  /// Gives up ownership: the caller closes the id.
  hid_t release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  void swap(Hdf5Handle& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(closer_, other.closer_);
  }
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

/// Shape and element type of one dataset.
struct DatasetInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  // "float32", "float64", "int32", "int64", "float16" (IEEE binary16),
  // "bfloat16" (HDF5 float: sign bit 15, exponent 8 bits at 7 with bias 127,
  // mantissa 7 bits at 0; docs/formats.md), or "other"
  std::string dtype;
};

/// The θ storage a tensor dataset holds: float32 fp32, float16 fp16,
/// bfloat16 bf16; none for any other type.
std::optional<StorageDtype> tensor_dtype(const DatasetInfo& info);

/// The HDF5 type of a 2-byte θ element (little-endian, as distzo writes it):
/// IEEE binary16, which h5py reads as numpy float16, or bfloat16 (1 sign, 8
/// exponent bits with bias 127, 7 mantissa bits), a float type h5py reads as
/// float32. Built from H5T_IEEE_F32LE as h5py builds its half type (HDF5 1.10
/// has no predefined 16-bit float).
Hdf5Handle half_float_type(StorageDtype dtype);

class Hdf5File {
 public:
  enum class Mode { read, create };
  Hdf5File(const std::string& path, Mode mode);
  /// Creates `path` collectively over the ranks of `comm` with the MPI-IO
  /// driver (parallel HDF5, which takes the MPI communicator itself; the
  /// file's own collectives go through `comm`, which must outlive the file).
  /// Every call on the file is then made by every rank in the same order
  /// with the same arguments — attributes, dataset creation, whole-dataset
  /// writes (rank 0's data is written) — except the data of
  /// write_float_range, which is each rank's own. Throws distzo::Error if
  /// HDF5 was built without MPI.
  Hdf5File(const std::string& path, const runtime::MpiCommunicator& comm);
  /// Whether this HDF5 can create a file over MPI-IO.
  static bool parallel_available();

  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }

  bool has_attribute(const std::string& name) const;
  std::int64_t read_int_attribute(const std::string& name) const;
  double read_double_attribute(const std::string& name) const;
  std::string read_string_attribute(const std::string& name) const;
  /// The variable-length string attribute `name` of `object` ("" = the root
  /// group), as the checked child read it when the file was opened.
  const std::string& variable_string(const std::string& object, const std::string& name) const;
  void write_int_attribute(const std::string& name, std::int64_t value);
  void write_double_attribute(const std::string& name, double value);
  void write_string_attribute(const std::string& name, const std::string& value);
  /// Checks the root attributes against the `attributes_checksum` that
  /// close() records in a file distzo wrote (FNV-1a 64 over every root
  /// attribute's name and value, in name order): damaged metadata (a flipped
  /// step, a garbled deck) is then an error naming the file, not a wrong
  /// value. Nothing when absent (other writers, distzo before December 2026).
  void verify_attributes() const;

  /// Names may contain '/' ("distzo/seed_log/g"): groups are created on write.
  bool has_dataset(const std::string& name) const;
  /// Root-level datasets in name order (datasets inside groups are not listed).
  std::vector<DatasetInfo> list_datasets() const;
  DatasetInfo dataset_info(const std::string& name) const;

  /// Reads a whole dataset, converting to the requested type (HDF5 converts
  /// between numeric types; the caller checks shapes). A dataset with a
  /// `checksum` attribute (every one distzo writes) must match it.
  /// `element_sum`, when given, receives the data's checksum as read: for a
  /// float32 tensor its element sum S (core/digest.hpp), computed once with
  /// the checksum check.
  std::vector<float> read_floats(const std::string& name,
                                 std::uint64_t* element_sum = nullptr) const;
  /// The 16-bit words of a float16 or bfloat16 dataset as stored (no
  /// conversion), checked against its checksum like read_floats; `dtype`
  /// receives which format it is, `element_sum` its element sum S (of the
  /// words, tagged with the format: core/digest.hpp).
  std::vector<std::uint16_t> read_words(const std::string& name, StorageDtype* dtype,
                                        std::uint64_t* element_sum = nullptr) const;
  std::vector<double> read_doubles(const std::string& name) const;
  std::vector<std::int32_t> read_ints(const std::string& name) const;
  std::vector<std::int64_t> read_int64s(const std::string& name) const;

  void write_floats(const std::string& name, const std::vector<std::int64_t>& shape,
                    const float* data);
  /// A float16 (dtype fp16) or bfloat16 (bf16) dataset of the words `data`.
  void write_words(const std::string& name, const std::vector<std::int64_t>& shape,
                   StorageDtype dtype, const std::uint16_t* data);
  void write_doubles(const std::string& name, const std::vector<std::int64_t>& shape,
                     const double* data);
  void write_ints(const std::string& name, const std::vector<std::int64_t>& shape,
                  const std::int32_t* data);
  void write_int64s(const std::string& name, const std::vector<std::int64_t>& shape,
                    const std::int64_t* data);

  /// A tensor dataset of `shape` (rank 1 or 2) in `dtype` (float32, float16
  /// or bfloat16), created without data.
  void create_tensor(const std::string& name, const std::vector<std::int64_t>& shape,
                     StorageDtype dtype);
  /// Elements [first, first + count) of the dataset in row-major order, from
  /// `data`: float32 values (write_float_range) or the words of the
  /// dataset's 2-byte format (write_word_range). In a parallel file this is
  /// collective: every rank calls it for the dataset, with count 0 to write
  /// nothing.
  void write_float_range(const std::string& name, std::uint64_t first, std::size_t count,
                         const float* data);
  void write_word_range(const std::string& name, std::uint64_t first, std::size_t count,
                        StorageDtype dtype, const std::uint16_t* data);
  /// Elements [first, first + count) of the dataset in row-major order.
  void read_float_range(const std::string& name, std::uint64_t first, std::size_t count,
                        float* out) const;
  /// The same as stored words, of a float16 or bfloat16 dataset.
  void read_word_range(const std::string& name, std::uint64_t first, std::size_t count,
                       std::uint16_t* out) const;

  /// Closes the file, reporting failure (a full disk shows here: the data
  /// is flushed on close). Datasets written in ranges get their checksum
  /// here (summed over the ranks of a parallel file: collective). The
  /// destructor closes silently.
  void close();

  /// Leaves the file without closing it: a rank that failed alone while
  /// writing a parallel file must not enter the collective close the others
  /// are not in (the job hung there); the process ends right after.
  void abandon() { file_.release(); }

 private:
  /// Returns the checksum of the words read into `out` if `want_sum`.
  std::uint64_t read_into(const std::string& name, hid_t mem_type, void* out, std::size_t count,
                          bool want_sum = false) const;
  void write_from(const std::string& name, const std::vector<std::int64_t>& shape, hid_t file_type,
                  hid_t mem_type, const void* data, std::uint64_t checksum);
  void write_range(const std::string& name, std::uint64_t first, std::size_t count, hid_t mem_type,
                   const void* data, std::uint64_t checksum);
  void read_range(const std::string& name, std::uint64_t first, std::size_t count, hid_t mem_type,
                  void* out) const;

  void write_range_checksums();
  /// Opening for reading: the file's structure walked in a forked child
  /// first; throws distzo::InputError naming the file when it is damaged.
  void check_structure();
  std::string root_attributes_checksum() const;

  std::string path_;
  Hdf5Handle file_;
  bool parallel_ = false;
  bool writing_ = false;  // created by this process: close() records the checksums
  // object "\n" attribute -> value: the variable-length strings, read by
  // check_structure's child.
  std::map<std::string, std::string> variable_strings_;
  int rank_ = 0;                                 // in the communicator of a parallel file
  const runtime::Communicator* comm_ = nullptr;  // of a parallel file (not owned)
  // Datasets written by write_float_range: this rank's part of each checksum.
  std::map<std::string, std::uint64_t> range_sums_;
};

/// The checksum of a dataset (docs/formats.md, "Checksums"): its elements in
/// row-major order as little-endian 32-bit words (one per float32 or int32,
/// two per float64 or int64, low word first), summed as the parameter
/// digest sums a tensor's elements, S = Σ_k element_term(k, word_k) mod 2^64
/// (core/digest.hpp); for float32 it is the tensor's element sum S. `words`
/// words at `data` that are words [first, first + words) of the dataset: the
/// sums of disjoint ranges add up to the whole.
std::uint64_t dataset_checksum(const void* data, std::size_t words, std::uint64_t first = 0);
/// The checksum of a float16 or bfloat16 dataset (`dtype`): one term per
/// element, its 16-bit word tagged with the format (digest::stored_word), so
/// that it is the tensor's element sum S as for float32. `count` words at
/// `data` that are elements [first, first + count).
std::uint64_t words_checksum(StorageDtype dtype, const std::uint16_t* data, std::size_t count,
                             std::uint64_t first = 0);

/// Writes a file atomically: `write` fills a temporary file beside `path`,
/// which is renamed over `path` only if `write` returns normally. A crash or an
/// exception leaves any previous file at `path` untouched; a signal that ends
/// the process at once removes the temporary file too (unlink_registered_files).
template <class WriteFn>
void write_atomically(const std::string& path, WriteFn&& write);

std::string temporary_path_for(const std::string& path);

/// Throws distzo::Error, saying "disk full" and naming `what`, unless the
/// file system that will hold `path` has `bytes` free: checked before a
/// large write, because HDF5 cannot recover from a write that runs out of
/// space (see hdf5_close_failed).
void require_free_space(const std::string& path, double bytes, const std::string& what);

/// True after a file failed to close: HDF5 1.10 keeps the broken file in
/// its tables and crashes when it shuts down (at MPI_Finalize), so the
/// process must end without shutting HDF5 down (main does).
bool hdf5_close_failed();
void commit_temporary(const std::string& temporary, const std::string& path);
void discard_temporary(const std::string& temporary);

template <class WriteFn>
void write_atomically(const std::string& path, WriteFn&& write) {
  const std::string tmp = temporary_path_for(path);
  const UnlinkedOnSignal in_flight(tmp);  // registered before the file exists
  try {
    {
      Hdf5File file(tmp, Hdf5File::Mode::create);
      write(file);
      file.close();  // flushed; a full disk fails here, before the rename
    }
    commit_temporary(tmp, path);
  } catch (...) {
    discard_temporary(tmp);
    throw;
  }
}

}  // namespace distzo::io
