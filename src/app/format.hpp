#pragma once
// Numbers as the run log, `inspect` and `plan` print them.

#include <cstdint>
#include <string>

namespace distzo::app {

/// "1.5 MiB": binary units, three significant digits.
std::string human_bytes(double bytes);
/// "1.5 MiB (1572864 B)": readable, and exact for scripts that parse it.
std::string exact_bytes(double bytes);
/// "01:02:03" (hours may exceed 24).
std::string format_duration(double seconds);
/// "1 block", "3 blocks".
std::string count(std::int64_t n, const char* singular, const char* plural);

}  // namespace distzo::app
