#pragma once
// Fences one execution-space instance (or, where host code needs every
// queue drained, all of them), with the reason shown in Kokkos Tools
// profiles. Kokkos < 3.5 has only the unnamed form.

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

/// Fences every instance of every execution space: for host code about to
/// read or hand on memory that work enqueued anywhere may still write.
inline void fence_all(const char* reason) {
#if KOKKOS_VERSION >= 30500
  Kokkos::fence(reason);
#else
  (void)reason;
  Kokkos::fence();
#endif
}

}  // namespace distzo
