#pragma once
// Mutations of the files distzo reads. Each returns what it did, one line per
// change, for the reproducer's `mutation` file: enough to see at a glance
// which bytes or which deck line a crash came from.

#include <string>

#include "random.hpp"

namespace distzo::fuzz {

/// 1 to 3 byte-level changes to an HDF5 file's bytes: bit and byte flips,
/// boundary integers written over length and offset fields, zeroed ranges,
/// truncation, ranges copied, inserted or deleted. Offsets lean toward the
/// superblock and first object headers at the start, the global heap
/// (variable-length attribute strings) at the end, and the metadata
/// signatures (TREE, HEAP, SNOD, GCOL, OHDR, ...) in between.
std::string mutate_bytes(std::string& bytes, Random& rng);

/// 1 to 3 changes to a YAML deck: byte flips and structure-aware edits of its
/// `key: value` lines (values swapped between keys, boundary and negative
/// numbers, long strings, wrong types, deleted and duplicated lines and
/// sections, unknown keys, deep nesting, alias bombs, broken indentation).
/// Paths it writes are relative, inside the run's scratch directory.
std::string mutate_deck(std::string& text, Random& rng);

}  // namespace distzo::fuzz
