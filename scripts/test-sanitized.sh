#!/usr/bin/env bash
# The whole test suite again, from a second build (build-asan/) with
# AddressSanitizer and UndefinedBehaviorSanitizer: out-of-bounds accesses,
# use after free, leaks and undefined behaviour in distzo's code, and in the
# Kokkos templates it instantiates, fail the test that triggers them.
# LeakSanitizer suppressions cover third-party libraries only, each one
# commented (tests/sanitizers/lsan.supp). .ci/run runs this after the plain
# suite; run it by hand the same way, after scripts/install-debian-deps.sh --test.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISTZO_SANITIZE=address,undefined \
  -DDISTZO_ENABLE_PERF=OFF
cmake --build build-asan -j2
# max_allocation_size_mb + allocator_may_return_null: an allocation no
# machine holds fails at once, as it does without ASan (whose allocator would
# otherwise reserve it and die touching it); tests/cli/bad_decks.sh relies on it.
export ASAN_OPTIONS="detect_leaks=1:max_allocation_size_mb=16384:allocator_may_return_null=1:strict_string_checks=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-asan --output-on-failure
