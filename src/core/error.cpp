#include "core/error.hpp"

#include <cstring>

namespace distzo::detail {

void throw_error(const char* file, int line, const std::string& message) {
  // Keep only the path below src/ so messages do not depend on the build machine.
  const char* short_file = std::strstr(file, "src/");
  std::ostringstream os;
  os << message << " [" << (short_file ? short_file : file) << ":" << line << "]";
  throw Error(os.str());
}

}  // namespace distzo::detail
