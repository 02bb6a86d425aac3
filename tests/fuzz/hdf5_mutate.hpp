#pragma once
// Structure-aware mutation of a well-formed HDF5 file through the HDF5
// library: the file stays readable by HDF5, and what changes is what distzo
// makes of it (docs/formats.md): attribute values at their edges or of the
// wrong type or rank, attributes and datasets deleted, datasets of another
// shape, type or layout, values set to NaN, Inf or out-of-range ids with the
// checksum dropped (files from other tools carry none) or left stale,
// tensors swapped through hard links, datasets turned into groups or
// dangling soft links, unknown datasets added.

#include <string>

#include "random.hpp"

namespace distzo::fuzz {

/// 1 or 2 such changes to the HDF5 file at `path`; returns what was done,
/// one line per change.
std::string mutate_hdf5_structure(const std::string& path, Random& rng);

}  // namespace distzo::fuzz
