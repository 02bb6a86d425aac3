# Host compile flags every distzo target gets (through distzo::flags, which
# distzo_core passes on to everything built on it):
#   -ffp-contract=off  never fuse a*b + c into an fma: the perturbation z
#                      (recipe v2) and the update of θ are specified operation
#                      by operation (core/fp.hpp), so a contraction would change
#                      their bits between compilers and flag sets;
#   -fno-math-errno    sqrt need not set errno, so loops that take square
#                      roots vectorise (results unchanged);
#   -fno-trapping-math floating-point operations raise no trap distzo would
#                      see (it enables none), so the compiler may evaluate both
#                      sides of a select: loops over fp::exp (the softmax, SiLU)
#                      and the Box-Muller of z vectorise instead of stopping at
#                      "control flow in loop" (GCC 12). Every operation is still
#                      the IEEE one, rounded on its own: results unchanged;
#   -march=${DISTZO_HOST_ARCH}
#                      the vector width the perturbation kernel is vectorised
#                      for. "native" (the default on x86-64 with GCC or Clang)
#                      targets the build machine; a binary that must run on
#                      other CPUs wants e.g. x86-64-v3 (AVX2) or "" (the
#                      compiler's default, SSE2 on x86-64: correct, slower).
#                      Results are the same bits whatever it is: no operation
#                      the recipe uses depends on the vector width.

add_library(distzo_flags INTERFACE)
add_library(distzo::flags ALIAS distzo_flags)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(distzo_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off -fno-math-errno -fno-trapping-math>)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    set(_distzo_default_arch native)
  else()
    set(_distzo_default_arch "")
  endif()
  set(DISTZO_HOST_ARCH "${_distzo_default_arch}" CACHE STRING
      "-march for host code: native (default on x86-64), x86-64-v3, ..., or empty for the compiler's default")
  if(DISTZO_HOST_ARCH)
    target_compile_options(distzo_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=${DISTZO_HOST_ARCH}>)
  endif()
  if(DISTZO_HOST_ARCH)
    message(STATUS "distzo: host flags -ffp-contract=off -fno-math-errno -fno-trapping-math -march=${DISTZO_HOST_ARCH}")
  else()
    message(STATUS "distzo: host flags -ffp-contract=off -fno-math-errno -fno-trapping-math (compiler's default -march)")
  endif()
endif()

# DISTZO_SANITIZE: sanitizers for distzo's own code and the Kokkos templates
# it instantiates (not the MPI, HDF5 or BLAS libraries), e.g.
# "address,undefined". Every finding aborts the process (no recovery), so a
# test that triggers one fails. scripts/test-sanitized.sh builds and runs the
# suite so, with the run-time options and the LeakSanitizer suppressions of
# tests/sanitizers/; .ci/run runs it after the plain suite.
set(DISTZO_SANITIZE "" CACHE STRING "Sanitizers to build with (-fsanitize=...), e.g. address,undefined")
if(DISTZO_SANITIZE)
  target_compile_options(distzo_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${DISTZO_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer>)
  # GCC 12 under -fsanitize=address reports maybe-uninitialized inside
  # libstdc++'s <regex> (std::function internals): false positives in a
  # system header that the plain build does not see.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(distzo_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  endif()
  target_link_options(distzo_flags INTERFACE -fsanitize=${DISTZO_SANITIZE})
  message(STATUS "distzo: sanitizers ${DISTZO_SANITIZE}")
endif()
