#pragma once
// `distzo inspect FILE.h5 [--digest]`

#include <ostream>
#include <string>

namespace distzo::app {

/// Prints the architecture and tensor table, or with `digest_only` one line:
/// the parameter digest.
void inspect(const std::string& path, bool digest_only, std::ostream& out);

}  // namespace distzo::app
