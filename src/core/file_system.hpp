#pragma once
// What a write is about to meet on disk: the directory of a path and the
// bytes free there (for messages that say "disk full" instead of crashing),
// and what kind of file a path names.

#include <string>

namespace distzo {

/// The directory part of `path` ("." for a bare file name).
std::string directory_of(const std::string& path);

/// Bytes an unprivileged process may still write in `dir`'s file system;
/// negative when unknown.
double free_bytes(const std::string& dir);

/// Whether `path` names a regular file (following links).
bool is_regular_file(const std::string& path);

/// What `path` names, for a message: "a regular file", "a directory", "a
/// FIFO (named pipe)", "a character device", "a block device", "a socket",
/// "no file" (following links).
std::string file_kind(const std::string& path);

}  // namespace distzo
