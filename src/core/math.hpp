#pragma once
// Math functions callable from kernels on every backend.
// Kokkos moved them from Kokkos::Experimental to Kokkos in 3.7.

#include <Kokkos_Core.hpp>

namespace distzo::math {

#if KOKKOS_VERSION >= 30700
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::log;
using Kokkos::pow;
using Kokkos::sin;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::cos;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::log;
using Kokkos::Experimental::pow;
using Kokkos::Experimental::sin;
using Kokkos::Experimental::sqrt;
#endif

}  // namespace distzo::math
