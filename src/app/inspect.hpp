#pragma once
// `distzo inspect FILE.h5 [--digest]`

#include <ostream>
#include <string>

namespace distzo::app {

/// Prints the architecture, the digest version and the tensor table, or with
/// `digest_only` one line: the parameter digest (16 hex digits, nothing else,
/// so scripts can compare it as one token).
void inspect(const std::string& path, bool digest_only, std::ostream& out);

}  // namespace distzo::app
