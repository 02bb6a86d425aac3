#include "core/log_line.hpp"

#include <cstdio>
#include <ctime>

namespace distzo {

std::string utc_timestamp(std::chrono::system_clock::time_point when) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(when.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char out[64];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms % 1000));
  return out;
}

std::string stamp_lines(const std::string& text, const std::string& stamp) {
  std::string out;
  std::size_t begin = 0;
  do {
    const std::size_t end = text.find('\n', begin);
    const std::size_t stop = end == std::string::npos ? text.size() : end;
    out += stamp;
    out += ' ';
    out.append(text, begin, stop - begin);
    out += '\n';
    begin = stop + 1;
  } while (begin < text.size());
  return out;
}

}  // namespace distzo
