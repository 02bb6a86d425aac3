// Malformed HDF5 files are refused with a message, never read past what was
// allocated: attributes holding more than one value (7000 used to overflow
// the stack, 2 to corrupt it silently), a tensor stored as integers and
// floats read as integers (HDF5 would convert them silently), a shape whose
// element count overflows; a write that cannot fit is refused before it
// starts.

#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"
#include "support/hdf5_edit.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace distzo;

const std::string kModel = std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5";

/// A copy of the tiny model to break.
std::string copy_of_model(const std::string& name) {
  const std::string path = "/tmp/distzo_test_hdf5_" + std::to_string(getpid()) + "_" + name;
  std::filesystem::copy_file(kModel, path, std::filesystem::copy_options::overwrite_existing);
  return path;
}

/// Replaces root attribute `name` by `count` int64 values.
void set_array_attribute(const std::string& path, const std::string& name, hsize_t count) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Adelete(file, name.c_str());
  const hid_t space = H5Screate_simple(1, &count, nullptr);
  const hid_t attr = H5Acreate2(file, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  const std::vector<std::int64_t> values(count, 32);
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_INT64, values.data()), 0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Fclose(file);
}

std::string error_of(const std::string& path) {
  try {
    io::ModelReader reader(path);
    std::vector<real> data(reader.info().registry.parameters().front().numel());
    reader.read(0, data.data());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Hdf5Faults, AttributesHoldingSeveralValuesAreRefused) {
  for (hsize_t count : {2ull, 7000ull}) {
    const std::string path = copy_of_model("array_attr.h5");
    set_array_attribute(path, "hidden_size", count);
    const std::string message = error_of(path);
    std::remove(path.c_str());
    EXPECT_NE(message.find("attribute 'hidden_size' holds " + std::to_string(count) +
                           " values; distzo expects a single value there"),
              std::string::npos)
        << message;
  }
}

TEST(Hdf5Faults, StringAttributeHoldingSeveralValuesIsRefused) {
  const std::string path = copy_of_model("array_string.h5");
  test_support::replace_string_attribute(path, "activation_function", "relugelutanh", 4, 3);
  const std::string message = error_of(path);
  std::remove(path.c_str());
  EXPECT_NE(message.find("attribute 'activation_function' holds 3 values"), std::string::npos)
      << message;
}

TEST(Hdf5Faults, TensorStoredAsIntegersIsRefused) {
  const std::string path = copy_of_model("int_tensor.h5");
  std::string name;
  std::vector<std::int64_t> shape;
  {
    const io::ModelReader reader(kModel);
    name = reader.info().registry[0].name;
    shape = reader.info().registry[0].shape;
  }
  {
    // The tensor again, as int32.
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, name.c_str(), H5P_DEFAULT);
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t d = H5Dcreate2(f, name.c_str(), H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(f);
  }
  const std::string message = error_of(path);
  std::remove(path.c_str());
  EXPECT_NE(message.find(name), std::string::npos) << message;
  EXPECT_TRUE(message.find("int32") != std::string::npos) << message;
}

TEST(Hdf5Faults, FloatsReadAsIntegersAreRefused) {
  const std::string path = "/tmp/distzo_test_hdf5_" + std::to_string(getpid()) + "_floats.h5";
  {
    io::Hdf5File file(path, io::Hdf5File::Mode::create);
    const float values[3] = {1.5f, 2.5f, 3.5f};
    file.write_floats("tokens", {3}, values);
    file.close();
  }
  const io::Hdf5File file(path, io::Hdf5File::Mode::read);
  try {
    file.read_ints("tokens");
    ADD_FAILURE() << "floats were read as integers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dataset 'tokens' is float32, expected integers"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(file.read_doubles("tokens"), (std::vector<double>{1.5, 2.5, 3.5}));
  std::remove(path.c_str());
}

TEST(Hdf5Faults, Int64BeyondInt32IsReportedNotClamped) {
  const std::string path = "/tmp/distzo_test_hdf5_" + std::to_string(getpid()) + "_int64.h5";
  {
    io::Hdf5File file(path, io::Hdf5File::Mode::create);
    const std::int64_t values[3] = {7, std::int64_t{1} << 40, 9};
    file.write_int64s("input_ids", {3}, values);
    file.close();
  }
  const io::Hdf5File file(path, io::Hdf5File::Mode::read);
  try {
    file.read_ints("input_ids");
    ADD_FAILURE() << "2^40 was read as a 32-bit integer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dataset 'input_ids' element 1 is 1099511627776, outside "
                                         "the 32-bit integers"),
              std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

TEST(Hdf5Faults, NonFiniteWeightsAreNamed) {
  const std::string path = copy_of_model("nan.h5");
  std::string name;
  std::vector<float> values;
  {
    const io::ModelReader reader(kModel);
    name = reader.info().registry[3].name;
    values.resize(static_cast<std::size_t>(reader.info().registry[3].numel()));
    reader.read(3, values.data());
  }
  values[1] = std::numeric_limits<float>::quiet_NaN();
  values[4] = std::numeric_limits<float>::infinity();
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    H5Dclose(d);
    H5Fclose(f);
  }
  const io::ModelReader reader(path);
  try {
    reader.read(3, values.data());
    ADD_FAILURE() << "NaN and Inf weights were read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor " + name + " holds 2 non-finite values (NaN or "
                                         "Inf; the first at element 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(reader.read_range(3, 0, 2, values.data()), Error);
  EXPECT_NO_THROW(reader.read_range(3, 2, 2, values.data()));
  std::remove(path.c_str());
}

TEST(Hdf5Faults, ShapeProductOverflowIsRefused) {
  const std::string path = "/tmp/distzo_test_hdf5_" + std::to_string(getpid()) + "_huge.h5";
  {
    // A chunked dataset of 2^40 x 2^40 elements allocates nothing.
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {hsize_t(1) << 40, hsize_t(1) << 40}, chunk[2] = {1, 16};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    const hid_t d = H5Dcreate2(f, "huge", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(f);
  }
  const io::Hdf5File file(path, io::Hdf5File::Mode::read);
  try {
    file.read_floats("huge");
    ADD_FAILURE() << "a 2^80-element dataset was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("element count overflows 64 bits"), std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

TEST(Hdf5Faults, FullDiskIsRefusedBeforeWriting) {
  try {
    io::require_free_space("/tmp/x.h5", 1e30, "checkpoint");
    ADD_FAILURE() << "1e30 bytes fit in /tmp";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write checkpoint '/tmp/x.h5': disk full (it needs about"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(io::require_free_space("/tmp/x.h5", 1, "checkpoint"));
}

}  // namespace
