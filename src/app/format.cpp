#include "app/format.hpp"

#include <cstdio>

namespace distzo::app {

std::string count(std::int64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 5) {  // "0.98 GiB", never "1e+03 MiB"
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g %s", bytes, units[u]);
  return buf;
}

std::string exact_bytes(double bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), " (%.0f B)", bytes);
  return human_bytes(bytes) + buf;
}

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

}  // namespace distzo::app
