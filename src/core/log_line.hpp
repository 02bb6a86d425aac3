#pragma once
// The lines of a run log carry the UTC time they were written, so a log read
// later says when each thing happened: "2026-12-06T22:41:07.123Z step 10/100 ...".

#include <chrono>
#include <string>

namespace distzo {

/// "2026-12-06T22:41:07.123Z": ISO 8601, UTC, milliseconds (truncated).
std::string utc_timestamp(
    std::chrono::system_clock::time_point when = std::chrono::system_clock::now());

/// `text` as log lines: each of its lines (every line of a multi-line
/// message) prefixed by `stamp` and a space, and ended by '\n'. A final
/// '\n' in `text` ends its last line (it adds no empty one); an empty
/// `text` is one line holding the stamp.
std::string stamp_lines(const std::string& text, const std::string& stamp);

}  // namespace distzo
