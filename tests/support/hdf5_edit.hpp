#pragma once
// Breaking HDF5 files on purpose, for the tests of distzo's readers: the C
// API directly, since distzo's own writer would not write them.

#include <gtest/gtest.h>
#include <hdf5.h>

#include <string>

namespace distzo::test_support {

/// Replaces root attribute `name` of the file at `path` by fixed-length
/// strings of `width` bytes taken from `bytes`: a scalar when count is 0,
/// else `count` of them.
inline void replace_string_attribute(const std::string& path, const char* name, const char* bytes,
                                     std::size_t width, hsize_t count = 0) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
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

}  // namespace distzo::test_support
