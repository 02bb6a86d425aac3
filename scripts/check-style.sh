#!/usr/bin/env bash
# The style checks CI runs (.ci/run): clang-format over every C and C++ file
# the repository tracks (.clang-format), and clang-tidy's small check set
# (.clang-tidy) over src/, from a build's compile_commands.json.
#
#   scripts/check-style.sh [BUILD_DIR]     # default: build
#
# Exit 0 when both are clean; otherwise each finding is printed (file:line)
# and the exit status is 1. `clang-format -i FILE` fixes the format.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
for tool in clang-format clang-tidy run-clang-tidy; do
  command -v "$tool" >/dev/null || {
    echo "check-style: $tool not found; install it: sudo apt-get install clang-format clang-tidy" >&2
    exit 2
  }
done
[ -f "$build/compile_commands.json" ] || {
  echo "check-style: no $build/compile_commands.json; configure first: cmake -S . -B $build" >&2
  exit 2
}
status=0
echo "check-style: clang-format ($(clang-format --version | sed 's/.*version //'))" >&2
if ! git ls-files -z '*.c' '*.cpp' '*.hpp' '*.h' | xargs -0 clang-format --dry-run -Werror; then
  echo "check-style: clang-format: the files above differ from .clang-format's layout (clang-format -i FILE)" >&2
  status=1
fi
echo "check-style: clang-tidy over src/ ($(nproc) jobs)" >&2
if ! run-clang-tidy -quiet -p "$build" -j "$(nproc)" "$PWD/src/.*\.cpp$" > "$build/clang-tidy.log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$build/clang-tidy.log" | grep -E "(warning|error):" | sort -u >&2 ||
    tail -n 40 "$build/clang-tidy.log" >&2
  echo "check-style: clang-tidy: findings above (.clang-tidy; full log $build/clang-tidy.log)" >&2
  status=1
fi
exit "$status"
