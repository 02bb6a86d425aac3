#include "core/version.hpp"

namespace distzo {

// DISTZO_VERSION is defined for this file alone (src/core/CMakeLists.txt), so
// a new version recompiles one file.
const char* distzo_version() { return DISTZO_VERSION; }

}  // namespace distzo
