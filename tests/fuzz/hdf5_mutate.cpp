#include "hdf5_mutate.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <vector>

namespace distzo::fuzz {

namespace {

// An HDF5 handle closed when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

struct Attribute {
  std::string object, name;  // the object's path ("/" for the root group) and the attribute's name
};

struct Contents {
  std::vector<std::string> datasets, groups{"/"};
  std::vector<Attribute> attributes;
};

herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* data) {
  auto* where = static_cast<std::pair<Contents*, std::string>*>(data);
  where->first->attributes.push_back({where->second, name});
  return 0;
}

void collect_attributes(hid_t file, const std::string& object, Contents& contents) {
  const Handle o(H5Oopen(file, object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o.ok()) return;
  std::pair<Contents*, std::string> where{&contents, object};
  H5Aiterate2(o.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attribute, &where);
}

herr_t collect_link(hid_t root, const char* name, const H5L_info_t*, void* data) {
  auto* contents = static_cast<Contents*>(data);
  const std::string path = std::string("/") + name;
  const Handle dataset(H5Dopen2(root, path.c_str(), H5P_DEFAULT), H5Dclose);
  (dataset.ok() ? contents->datasets : contents->groups).push_back(path);
  return 0;
}

Contents contents_of(hid_t file) {
  Contents contents;
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_link, &contents);
  for (const auto& g : contents.groups) collect_attributes(file, g, contents);
  for (const auto& d : contents.datasets) collect_attributes(file, d, contents);
  return contents;
}

std::vector<hsize_t> shape_of(hid_t dataset) {
  const Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  return s.str() + ")";
}

hsize_t elements(const std::vector<hsize_t>& dims) {
  hsize_t n = 1;
  for (hsize_t d : dims) n *= d;
  return n;
}

const std::int64_t kIntEdges[] = {0,
                                  -1,
                                  1,
                                  2,
                                  3,
                                  7,
                                  64,
                                  65,
                                  96,
                                  1 << 20,
                                  2147483647,
                                  2147483648LL,
                                  -2147483648LL,
                                  4294967296LL,
                                  std::numeric_limits<std::int64_t>::max(),
                                  std::numeric_limits<std::int64_t>::min()};
const double kFloatEdges[] = {std::nan(""), INFINITY, -INFINITY, 0.0,   -0.0, 1e30,
                              -1e30,        3.4e38,   1e-40,     65504, 1e308};

std::string string_edge(Random& rng) {
  static const std::vector<std::string> kStrings = {"",
                                                    "opt",
                                                    "llama",
                                                    "model",
                                                    "checkpoint",
                                                    "dataset",
                                                    "classification",
                                                    "causal_lm",
                                                    "relu",
                                                    "silu",
                                                    "gelu",
                                                    "fp32",
                                                    "bf16",
                                                    "fp16",
                                                    "nearest",
                                                    "stochastic",
                                                    "gaussian",
                                                    "rademacher",
                                                    "0123456789abcdef",
                                                    "ffffffffffffffff",
                                                    "not hex",
                                                    "{",
                                                    "[]",
                                                    "null",
                                                    "{\"vocab_size\": -1}",
                                                    "{\"num_hidden_layers\": 1e9}",
                                                    "model:\n  path: [",
                                                    "\xff\xfe\xfd",
                                                    "-1",
                                                    "1e999"};
  switch (rng.below(4)) {
    case 0:
      return std::string(std::size_t{1} << (8 + rng.below(13)), 'x');  // 256 B to 1 MiB
    case 1:
      return std::string(std::size_t{1000} << rng.below(7), '[');  // JSON nested deep
    default:
      return rng.pick(kStrings);
  }
}

// The attribute `a` replaced by one of the same name holding another value,
// of its own type or another (an integer where a string was, three values
// where one was, a fixed-length string where a variable-length one was).
std::string rewrite_attribute(hid_t file, const Attribute& a, Random& rng) {
  const Handle object(H5Oopen(file, a.object.c_str(), H5P_DEFAULT), H5Oclose);
  H5T_class_t stored = H5T_NO_CLASS;
  {
    const Handle attr(H5Aopen(object.get(), a.name.c_str(), H5P_DEFAULT), H5Aclose);
    const Handle type(H5Aget_type(attr.get()), H5Tclose);
    stored = H5Tget_class(type.get());
  }
  H5Adelete(object.get(), a.name.c_str());
  const H5T_class_t written =
      rng.chance(60) && stored != H5T_NO_CLASS
          ? stored
          : rng.pick(std::vector<H5T_class_t>{H5T_INTEGER, H5T_FLOAT, H5T_STRING});
  const hsize_t count = rng.chance(15) ? 3 : 1;
  const Handle space(count == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &count, nullptr),
                     H5Sclose);
  std::ostringstream what;
  what << "attribute " << a.object << (a.object == "/" ? "" : "/") << a.name << " = ";
  if (written == H5T_INTEGER) {
    const std::vector<std::int64_t> v(
        count, rng.pick(std::vector<std::int64_t>(std::begin(kIntEdges), std::end(kIntEdges))));
    const Handle attr(H5Acreate2(object.get(), a.name.c_str(), H5T_STD_I64LE, space.get(),
                                 H5P_DEFAULT, H5P_DEFAULT),
                      H5Aclose);
    H5Awrite(attr.get(), H5T_NATIVE_INT64, v.data());
    what << "int64 " << v[0];
  } else if (written == H5T_FLOAT) {
    const std::vector<double> v(
        count, rng.pick(std::vector<double>(std::begin(kFloatEdges), std::end(kFloatEdges))));
    const Handle attr(H5Acreate2(object.get(), a.name.c_str(), H5T_IEEE_F64LE, space.get(),
                                 H5P_DEFAULT, H5P_DEFAULT),
                      H5Aclose);
    H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, v.data());
    what << "float64 " << v[0];
  } else {
    const std::string s = string_edge(rng);
    const bool variable = rng.chance(75);
    const Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), variable ? H5T_VARIABLE : std::max<std::size_t>(1, s.size()));
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    const Handle attr(
        H5Acreate2(object.get(), a.name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose);
    if (variable) {
      const std::vector<const char*> v(count, s.c_str());
      H5Awrite(attr.get(), type.get(), v.data());
    } else {
      std::string fixed;
      for (hsize_t i = 0; i < count; ++i) fixed += s.empty() ? std::string(1, '\0') : s;
      H5Awrite(attr.get(), type.get(), fixed.data());
    }
    what << (variable ? "string \"" : "fixed-length string \"") << s.substr(0, 40)
         << (s.size() > 40 ? "...\" (" + std::to_string(s.size()) + " bytes)" : "\"");
  }
  if (count > 1) what << " (3 values)";
  return what.str();
}

// Without a checksum distzo reads a dataset unchecked (a file from h5py), so
// changed values reach the code past the check; without parameter_digest a
// checkpoint's changed tensors do.
std::string drop_checks(hid_t file, const std::string& dataset, Random& rng) {
  if (rng.chance(25)) return "; checksum left as it was";
  const Handle d(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  H5Adelete(d.get(), "checksum");
  if (H5Aexists(file, "parameter_digest") > 0) H5Adelete(file, "parameter_digest");
  return "; checksum (and parameter_digest) deleted";
}

std::string rewrite_values(hid_t file, const std::string& name, Random& rng) {
  const Handle d(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  const Handle type(H5Dget_type(d.get()), H5Tclose);
  const hsize_t n = elements(shape_of(d.get()));
  const H5T_class_t cls = H5Tget_class(type.get());
  if (n == 0 || (cls != H5T_INTEGER && cls != H5T_FLOAT))
    return "dataset " + name + " left as it was (no numbers)";
  const hsize_t changed = rng.chance(10) ? n : 1 + rng.below(std::min<hsize_t>(n, 8));
  std::ostringstream what;
  what << "set " << changed << " of the " << n << " values of " << name << " to";
  if (cls == H5T_FLOAT) {
    std::vector<double> v(n);
    H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    const double value =
        rng.pick(std::vector<double>(std::begin(kFloatEdges), std::end(kFloatEdges)));
    for (hsize_t k = 0; k < changed; ++k) v[changed == n ? k : rng.below(n)] = value;
    H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    what << " " << value;
  } else {
    std::vector<std::int64_t> v(n);
    H5Dread(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    const std::int64_t value =
        rng.pick(std::vector<std::int64_t>(std::begin(kIntEdges), std::end(kIntEdges)));
    for (hsize_t k = 0; k < changed; ++k) v[changed == n ? k : rng.below(n)] = value;
    H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    what << " " << value << " (clipped to the stored type)";
  }
  return what.str() + drop_checks(file, name, rng);
}

// The dataset deleted and written anew, without checksum: another shape,
// element type or layout.
std::string replace_dataset(hid_t file, const std::string& name, Random& rng) {
  std::vector<hsize_t> dims;
  {
    const Handle d(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
    dims = shape_of(d.get());
  }
  const std::vector<hsize_t> before = dims;
  switch (rng.below(7)) {
    case 0:
      dims.clear();
      break;  // a scalar
    case 1:
      dims = {0};
      break;  // empty
    case 2:
      if (!dims.empty()) dims[rng.below(dims.size())] += 1;
      break;
    case 3:
      if (!dims.empty() && dims[0] > 0) dims[rng.below(dims.size())] -= 1;
      break;
    case 4:
      std::reverse(dims.begin(), dims.end());
      break;
    case 5:
      dims.push_back(1 + rng.below(3));
      break;
    default:
      break;  // the same shape, another type or layout
  }
  if (elements(dims) > (hsize_t{1} << 22)) dims = before;  // a file that stays small
  H5Ldelete(file, name.c_str(), H5P_DEFAULT);
  const struct {
    hid_t type;
    const char* label;
  } types[] = {{H5T_IEEE_F32LE, "float32"},
               {H5T_IEEE_F64LE, "float64"},
               {H5T_STD_I32LE, "int32"},
               {H5T_STD_I64LE, "int64"},
               {H5T_STD_I8LE, "int8"},
               {H5T_STD_U16LE, "uint16"},
               {H5T_IEEE_F32BE, "float32 big-endian"}};
  const auto& type = types[rng.below(sizeof types / sizeof types[0])];
  const Handle space(dims.empty()
                         ? H5Screate(H5S_SCALAR)
                         : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                     H5Sclose);
  const Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const bool chunked = !dims.empty() && elements(dims) > 0 && rng.chance(40);
  if (chunked) {
    std::vector<hsize_t> chunk(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i)
      chunk[i] = std::max<hsize_t>(1, (dims[i] + 1) / 2);
    H5Pset_chunk(create.get(), static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(create.get(), 6);
  }
  const Handle d(H5Dcreate2(file, name.c_str(), type.type, space.get(), H5P_DEFAULT, create.get(),
                            H5P_DEFAULT),
                 H5Dclose);
  std::vector<double> values(static_cast<std::size_t>(elements(dims)));
  for (auto& v : values) v = static_cast<double>(rng.below(64));  // valid token ids, small weights
  if (!values.empty())
    H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  return "replace dataset " + name + " " + shape_text(before) + " by " + shape_text(dims) + " " +
         type.label + (chunked ? ", chunked and deflated" : "") + ", no checksum";
}

std::string mutate_once(hid_t file, Random& rng) {
  const Contents c = contents_of(file);
  const auto r = rng.below(100);
  if (c.datasets.empty() || (r < 35 && !c.attributes.empty())) {
    if (c.attributes.empty()) return "nothing to change";
    // Mostly the root group's: the architecture, sizes and format of the file.
    std::vector<Attribute> root;
    for (const auto& a : c.attributes)
      if (a.object == "/") root.push_back(a);
    return rewrite_attribute(
        file, rng.chance(70) && !root.empty() ? rng.pick(root) : rng.pick(c.attributes), rng);
  }
  const std::string& dataset = rng.pick(c.datasets);
  if (r < 45 && !c.attributes.empty()) {
    const Attribute& a = rng.pick(c.attributes);
    const Handle o(H5Oopen(file, a.object.c_str(), H5P_DEFAULT), H5Oclose);
    H5Adelete(o.get(), a.name.c_str());
    return "delete attribute " + a.name + " of " + a.object;
  }
  if (r < 65) return rewrite_values(file, dataset, rng);
  if (r < 80) return replace_dataset(file, dataset, rng);
  if (r < 84) {
    H5Ldelete(file, dataset.c_str(), H5P_DEFAULT);
    return "delete dataset " + dataset;
  }
  if (r < 90) {  // another tensor's data, shape and valid checksum under this name
    const std::string& other = rng.pick(c.datasets);
    if (other == dataset) return replace_dataset(file, dataset, rng);
    H5Ldelete(file, dataset.c_str(), H5P_DEFAULT);
    H5Lcreate_hard(file, other.c_str(), file, dataset.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    return "dataset " + dataset + " is now a hard link to " + other;
  }
  if (r < 94) {
    H5Ldelete(file, dataset.c_str(), H5P_DEFAULT);
    if (rng.chance(50)) {
      const Handle g(H5Gcreate2(file, dataset.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Gclose);
      return "dataset " + dataset + " is now an empty group";
    }
    H5Lcreate_soft("/no/such/object", file, dataset.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    return "dataset " + dataset + " is now a dangling soft link";
  }
  const std::string added = rng.pick(
      std::vector<std::string>{"/model.decoder.layers.99.fc1.weight",
                               "/model.layers.99.mlp.up_proj.weight", "/lm_head.weight", "/labels",
                               "/attention_mask", "/distzo/extra", "/" + std::string(4000, 'n')});
  if (H5Lexists(file, added.c_str(), H5P_DEFAULT) > 0) return replace_dataset(file, added, rng);
  const hsize_t dims[2] = {1 + rng.below(64), 1 + rng.below(64)};
  const Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  const Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  const Handle d(H5Dcreate2(file, added.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(),
                            H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  return "add dataset " + added.substr(0, 60) + " " + shape_text({dims[0], dims[1]}) +
         " float32 (unwritten: zeros)";
}

}  // namespace

std::string mutate_hdf5_structure(const std::string& path, Random& rng) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // a change HDF5 refuses is just not made
  const Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) return "not an HDF5 file: left as it was\n";
  std::string what;
  for (auto n = 1 + rng.below(2); n > 0; --n) what += mutate_once(file.get(), rng) + "\n";
  return what;
}

}  // namespace distzo::fuzz
