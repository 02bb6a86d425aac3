#pragma once
// distzo's version (CMake's PROJECT_VERSION), for --version and for the files
// distzo writes (a checkpoint records the version that wrote it).

namespace distzo {

/// "0.1.0".
const char* distzo_version();

}  // namespace distzo
