# Finds Kokkos Core and Kokkos Kernels and exposes them as two targets:
#   distzo::kokkos         (Kokkos Core)
#   distzo::kokkoskernels  (Kokkos Kernels, BLAS component)
# and the variable DISTZO_KOKKOS_HAS_CUDA.
#
# Two layouts are supported:
#  1. A standard Kokkos >= 4 install (Spack, source builds): Kokkos::kokkos and
#     Kokkos::kokkoskernels from their CMake packages.
#  2. Debian 12's Trilinos 13.2 packages (Kokkos 3.4, Serial backend). Their
#     KokkosConfig.cmake refers to /usr/lib/include, which does not exist, so we
#     do not use it: we locate the headers and the trilinos_* libraries directly.

find_package(Kokkos 4 CONFIG QUIET)
if(Kokkos_FOUND AND TARGET Kokkos::kokkos)
  find_package(KokkosKernels CONFIG REQUIRED)
  add_library(distzo::kokkos INTERFACE IMPORTED)
  target_link_libraries(distzo::kokkos INTERFACE Kokkos::kokkos)
  add_library(distzo::kokkoskernels INTERFACE IMPORTED)
  target_link_libraries(distzo::kokkoskernels INTERFACE Kokkos::kokkoskernels)
  kokkos_check(DEVICES CUDA RETURN_VALUE DISTZO_KOKKOS_HAS_CUDA)
  set(DISTZO_KOKKOS_FLAVOUR "Kokkos ${Kokkos_VERSION} (CMake package)")
  # Kokkos' mdspan-based View (the default from 4.6.99 on) is broken with GCC 12:
  # with Kokkos 4.6.99 (develop 28848dfa) and g++ 12.2 a default-constructed View
  # crashes when assigned, so distzo's tests segfault (kokkos/kokkos#7464
  # reports the same family). The same Kokkos built with clang 14, or with
  # -DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON, passes every distzo test.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13
     AND Kokkos_VERSION VERSION_GREATER_EQUAL 4.6.99)
    kokkos_check(OPTIONS IMPL_VIEW_LEGACY RETURN_VALUE distzo_kokkos_legacy_view)
    if(NOT distzo_kokkos_legacy_view)
      message(WARNING
        "distzo: Kokkos ${Kokkos_VERSION} uses its mdspan-based View, which GCC "
        "${CMAKE_CXX_COMPILER_VERSION} miscompiles (default-constructed Views crash "
        "when assigned). Rebuild Kokkos with -DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON, or "
        "build Kokkos and distzo with clang (or a CUDA host compiler other than GCC 12).")
    endif()
  endif()
  return()
endif()

find_path(DISTZO_KOKKOS_INCLUDE_DIR KokkosCore_config.h
  PATH_SUFFIXES trilinos
  DOC "Directory holding KokkosCore_config.h (Debian: /usr/include/trilinos)")
find_library(DISTZO_KOKKOSCORE_LIB NAMES trilinos_kokkoscore kokkoscore)
find_library(DISTZO_KOKKOSCONTAINERS_LIB NAMES trilinos_kokkoscontainers kokkoscontainers)
find_library(DISTZO_KOKKOSKERNELS_LIB NAMES trilinos_kokkoskernels kokkoskernels)
find_package(BLAS REQUIRED)

if(NOT DISTZO_KOKKOS_INCLUDE_DIR OR NOT DISTZO_KOKKOSCORE_LIB OR NOT DISTZO_KOKKOSKERNELS_LIB)
  message(FATAL_ERROR
    "distzo: Kokkos not found. Either point CMAKE_PREFIX_PATH at a Kokkos >= 4 "
    "install with Kokkos Kernels, or on Debian 12 install "
    "libtrilinos-kokkos-dev and libtrilinos-kokkos-kernels-dev.")
endif()

add_library(distzo::kokkos INTERFACE IMPORTED)
target_include_directories(distzo::kokkos SYSTEM INTERFACE ${DISTZO_KOKKOS_INCLUDE_DIR})
target_link_libraries(distzo::kokkos INTERFACE
  ${DISTZO_KOKKOSCONTAINERS_LIB} ${DISTZO_KOKKOSCORE_LIB} ${CMAKE_DL_LIBS})
add_library(distzo::kokkoskernels INTERFACE IMPORTED)
target_link_libraries(distzo::kokkoskernels INTERFACE
  distzo::kokkos ${DISTZO_KOKKOSKERNELS_LIB} ${BLAS_LIBRARIES})

file(STRINGS "${DISTZO_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h" _distzo_kokkos_cuda
  REGEX "^#define KOKKOS_ENABLE_CUDA$")
if(_distzo_kokkos_cuda)
  set(DISTZO_KOKKOS_HAS_CUDA ON)
else()
  set(DISTZO_KOKKOS_HAS_CUDA OFF)
endif()
file(STRINGS "${DISTZO_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h" _distzo_kokkos_version
  REGEX "^#define KOKKOS_VERSION [0-9]+")
set(DISTZO_KOKKOS_FLAVOUR "Kokkos from Trilinos headers in ${DISTZO_KOKKOS_INCLUDE_DIR} (${_distzo_kokkos_version})")
