#pragma once
// Fences one execution-space instance (never the whole device), with the
// reason shown in Kokkos Tools profiles. Kokkos < 3.5 has only the unnamed form.

#include "core/types.hpp"

namespace distzo {

inline void fence(const ExecSpace& space, const char* reason) {
#if KOKKOS_VERSION >= 30500
  space.fence(reason);
#else
  (void)reason;
  space.fence();
#endif
}

}  // namespace distzo
