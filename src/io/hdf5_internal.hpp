#pragma once
// What the HDF5 layer's files share (hdf5_file.cpp: opening, attributes,
// reads; hdf5_structure.cpp: the checked structure walk; hdf5_datasets.cpp:
// creating and writing datasets, ranges, the atomic commit). Not for other
// layers: they use io/hdf5_file.hpp.

#include <string>

#include "io/hdf5_file.hpp"

namespace distzo::io {

/// The attribute that holds a dataset's checksum (docs/formats.md).
inline constexpr const char* kChecksum = "checksum";

/// `id` owned with `closer`; throws distzo::Error `what` when HDF5 failed (id < 0).
Hdf5Handle check(hid_t id, Hdf5Handle::Closer closer, const std::string& what);

/// half_float_type in the byte order of this machine, for memory buffers.
Hdf5Handle native_half_type(StorageDtype dtype);

/// Why a write failed, from errno right after the failing call: the cases a
/// user can act on, named (", disk full: 0 bytes free on /out").
std::string write_cause(const std::string& path);

/// A fixed-length UTF-8 string attribute on the file (its root group) or on
/// one of its datasets.
void write_string_attribute_to(hid_t object, const std::string& path, const std::string& name,
                               const std::string& value);

}  // namespace distzo::io
