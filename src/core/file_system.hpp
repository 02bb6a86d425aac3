#pragma once
// What a write is about to meet on disk: the directory of a path and the
// bytes free there (for messages that say "disk full" instead of crashing).

#include <string>

namespace distzo {

/// The directory part of `path` ("." for a bare file name).
std::string directory_of(const std::string& path);

/// Bytes an unprivileged process may still write in `dir`'s file system;
/// negative when unknown.
double free_bytes(const std::string& dir);

}  // namespace distzo
