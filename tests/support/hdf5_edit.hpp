#pragma once
// Breaking HDF5 files on purpose, for the tests of distzo's readers: the C
// API directly, since distzo's own writer would not write them.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <fstream>
#include <iterator>
#include <string>

namespace distzo::test_support {

/// Makes the open `file` look written by another tool: drops the checksum of
/// the root attributes that distzo records (io::Hdf5File::verify_attributes),
/// so that a test's edit is read as a value, not refused as damage.
inline void drop_attributes_checksum(hid_t file) {
  if (H5Aexists(file, "attributes_checksum") > 0) H5Adelete(file, "attributes_checksum");
}

/// Replaces root attribute `name` of the file at `path` by fixed-length
/// strings of `width` bytes taken from `bytes`: a scalar when count is 0,
/// else `count` of them (and drops the attributes' checksum).
inline void replace_string_attribute(const std::string& path, const char* name, const char* bytes,
                                     std::size_t width, hsize_t count = 0) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  drop_attributes_checksum(file);
  H5Adelete(file, name);
  const hid_t space = count == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, width);
  const hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attr, type, bytes), 0);
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
  H5Fclose(file);
}

/// Replaces root attribute `name` of the file at `path` by a variable-length
/// UTF-8 string, as h5py (and distzo before fixed-length strings) writes it:
/// its bytes go to the file's global heap (the attributes' checksum is dropped).
inline void replace_with_variable_string(const std::string& path, const char* name,
                                         const char* value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  drop_attributes_checksum(file);
  H5Adelete(file, name);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t attr = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attr, type, &value), 0);
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
  H5Fclose(file);
}

/// Sets `bits` in the byte `offset` bytes into the first global heap of the
/// file at `path`. By default the bit issue 24's fuzzer found crashing HDF5:
/// bit 6 of byte 3 of the size of the heap's first object (a 4-byte string
/// then claims 0x40000004 bytes). The collection header is the signature,
/// version and 3 reserved bytes (8 in all), then the collection's size (8
/// bytes, little-endian); an object starts with its index, reference count
/// and 4 reserved bytes (8 in all), then its size, 8 bytes little-endian.
inline void damage_global_heap(const std::string& path, std::size_t offset = 16 + 8 + 3,
                               char bits = 0x40) {
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t heap = bytes.find("GCOL");
  ASSERT_NE(heap, std::string::npos) << path << " has no global heap";
  bytes[heap + offset] = static_cast<char>(bytes[heap + offset] | bits);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace distzo::test_support
