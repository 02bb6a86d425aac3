// Opening an HDF5 file for reading: its structure walked in a forked child
// first (Hdf5File::check_structure), so that damaged metadata, which HDF5
// 1.10 trusts, crashes or hangs the child and not the run; data in other
// files is named, not followed.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/forked_call.hpp"
#include "io/hdf5_file.hpp"

namespace distzo::io {

namespace {

/// The links of a group, each with whether it points into another file.
struct Links {
  std::vector<std::string> names;
  std::vector<bool> external;
};

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* out) {
  Links& links = *static_cast<Links*>(out);
  links.names.emplace_back(name);
  links.external.push_back(info->type == H5L_TYPE_EXTERNAL);
  return 0;
}

/// Appends (object, attribute, value) to `out`, each as its byte count
/// (8 bytes, native) and its bytes.
void append_record(std::string& out, const std::string& object, const char* attribute,
                   const char* value) {
  for (const std::string& part :
       {object, std::string(attribute), std::string(value ? value : "")}) {
    const std::uint64_t size = part.size();
    out.append(reinterpret_cast<const char*>(&size), sizeof size);
    out.append(part);
  }
}

struct Collector {
  std::string object;  // "" = the root group
  std::string* out;
};

/// H5Aiterate2 callback: the attribute read whole (what a reader of it
/// would do), a scalar variable-length string's value recorded.
herr_t walk_attribute(hid_t object, const char* name, const H5A_info_t*, void* data) {
  const Collector& c = *static_cast<const Collector*>(data);
  const hid_t attr = H5Aopen(object, name, H5P_DEFAULT);
  if (attr < 0) return -1;
  const hid_t type = H5Aget_type(attr), space = H5Aget_space(attr);
  herr_t status = type >= 0 && space >= 0 ? 0 : -1;
  const H5T_class_t cls = status == 0 ? H5Tget_class(type) : H5T_NO_CLASS;
  const hssize_t points = status == 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (cls == H5T_STRING && H5Tis_variable_str(type) > 0) {
    if (points == 1) {
      char* raw = nullptr;
      status = H5Aread(attr, type, &raw) >= 0 ? 0 : -1;
      if (status == 0) append_record(*c.out, c.object, name, raw);
      H5free_memory(raw);
    }
  } else if ((cls == H5T_STRING || cls == H5T_INTEGER || cls == H5T_FLOAT) && points >= 0) {
    std::vector<char> bytes(static_cast<std::size_t>(points) * H5Tget_size(type) + 1);
    status = H5Aread(attr, type, bytes.data()) >= 0 ? 0 : -1;
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  H5Aclose(attr);
  return status;
}

/// The attribute name under which walk_objects records an object whose data
/// lives in another file (no HDF5 attribute name is empty): its value says how.
constexpr const char* kElsewhere = "";

/// A dataset's metadata as a reader meets it: type, shape, layout; a
/// chunked one (never written by distzo; its index is a B-tree read with the
/// data) read whole when it is small. Data stored in other files (external
/// storage, a virtual dataset) is recorded (kElsewhere), not followed: such
/// a file would be read wherever the dataset points, a FIFO included.
bool walk_dataset(hid_t dataset, const std::string& name, std::string& out) {
  const hid_t type = H5Dget_type(dataset), space = H5Dget_space(dataset),
              plist = H5Dget_create_plist(dataset);
  bool ok = type >= 0 && space >= 0 && plist >= 0 && H5Sget_simple_extent_npoints(space) >= 0;
  if (ok && H5Pget_external_count(plist) > 0)
    append_record(out, name, kElsewhere, "external storage (its data in other files)");
  else if (ok && H5Pget_layout(plist) == H5D_VIRTUAL)
    append_record(out, name, kElsewhere, "a virtual dataset (its data mapped from other files)");
  else if (ok && H5Pget_layout(plist) == H5D_CHUNKED) {
    constexpr hsize_t kReadUpTo = 16u << 20;  // bytes; larger ones are left to the reader
    const hsize_t bytes =
        static_cast<hsize_t>(H5Sget_simple_extent_npoints(space)) * H5Tget_size(type);
    const H5T_class_t cls = H5Tget_class(type);
    if (bytes <= kReadUpTo && (cls == H5T_INTEGER || cls == H5T_FLOAT)) {
      std::vector<char> data(bytes + 1);
      ok = H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0;
    }
  }
  if (plist >= 0) H5Pclose(plist);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return ok;
}

/// Walks `object` and, for a group, every object below it, as a reader
/// would meet them (walk_attribute, walk_dataset); the variable-length
/// strings as records (append_record). Run in the checked child.
bool walk_objects(hid_t object, const std::string& object_name, std::string& out) {
  Collector c{object_name, &out};
  if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, walk_attribute, &c) < 0)
    return false;
  const H5I_type_t kind = H5Iget_type(object);
  if (kind == H5I_DATASET) return walk_dataset(object, object_name, out);
  if (kind != H5I_GROUP && kind != H5I_FILE) return true;
  Links links;
  if (H5Literate(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &links) < 0)
    return false;
  for (std::size_t i = 0; i < links.names.size(); ++i) {
    const std::string& n = links.names[i];
    const std::string name = object_name.empty() ? n : object_name + "/" + n;
    if (links.external[i]) {
      append_record(out, name, kElsewhere, "an external link (to an object in another file)");
      continue;
    }
    const hid_t child = H5Oopen(object, n.c_str(), H5P_DEFAULT);
    if (child < 0) return false;
    const bool ok = walk_objects(child, name, out);
    H5Oclose(child);
    if (!ok) return false;
  }
  return true;
}

/// The records of walk_objects as a map (object "\n" attribute).
std::map<std::string, std::string> parse_records(const std::string& bytes) {
  std::map<std::string, std::string> records;
  std::size_t at = 0;
  const auto next = [&]() {  // the child wrote whole records (it exited 0)
    std::uint64_t size = 0;
    if (at + sizeof size <= bytes.size()) std::memcpy(&size, bytes.data() + at, sizeof size);
    at += sizeof size;
    std::string part = at < bytes.size() ? bytes.substr(at, size) : std::string();
    at += size;
    return part;
  };
  while (at < bytes.size()) {
    const std::string object = next(), attribute = next();
    records[object + "\n" + attribute] = next();
  }
  return records;
}

}  // namespace

void Hdf5File::check_structure() {
  // HDF5 1.10 trusts much of a file's metadata: a damaged global heap (where
  // variable-length strings live) made H5Aread read out of bounds and die of
  // SIGSEGV (5 in 400 byte flips of a model file); a damaged link table
  // crashed H5Literate; a damaged heap made it loop. So a forked child, which
  // shares the open file, first walks everything a reader of the file meets
  // (every link, object header, attribute; small chunked datasets) and hands
  // back the variable-length strings, which are then never read here. A child
  // that dies or hangs marks the file damaged: the error names it, and
  // resume: latest passes such a checkpoint over. Deterministic parsing of the
  // same bytes does not crash this process where it did not crash the child.
  // One fork per file opened for reading (a millisecond; more for a process
  // with much memory mapped).
  constexpr int kTimeoutSeconds = 10;  // metadata reads in milliseconds
  const hid_t file = id();
  const ForkedCall walk = call_in_forked_child(
      [file](std::string& out) { return walk_objects(file, "", out); }, kTimeoutSeconds);
  // The child's call returns false when HDF5 refused something (a metadata
  // checksum that does not verify, a structure it cannot parse).
  const std::string what = walk.failure == "failed"
                               ? "HDF5 refused part of it (a metadata checksum or a structure "
                                 "that does not verify)"
                               : walk.failure;
  DISTZO_INPUT_REQUIRE(walk.ok(), "'" << path_
                                      << "' is damaged: reading its structure (groups, "
                                         "attributes, object headers) in a checked child "
                                         "process, "
                                      << what << "; use an intact copy");
  variable_strings_ = parse_records(walk.output);
  for (const auto& [key, how] : variable_strings_) {
    const std::string object = key.substr(0, key.find('\n'));
    DISTZO_INPUT_REQUIRE(key.size() != object.size() + 1,
                         "'" << path_ << "': '" << object << "' is " << how
                             << ", which distzo does not follow: its models, datasets and "
                                "checkpoints keep every byte in the one file (h5repack or h5py "
                                "can copy the data in)");
  }
}

}  // namespace distzo::io
