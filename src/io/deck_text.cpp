#include "io/deck_text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/error.hpp"

namespace distzo::io::deck_detail {

namespace {

/// Optimal string alignment distance (Levenshtein plus adjacent swaps), so
/// "setps" is one edit from "steps".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::string error_prefix(const std::string& source, int line, const std::string& key) {
  return source + ":" + std::to_string(line) + ": " + key + ": ";
}

void fail(const std::string& source, int line, const std::string& key, const std::string& what) {
  // Deck errors are the user's input errors: they point at the deck, not at
  // this file, so they are thrown without DISTZO_REQUIRE's [src/...] suffix.
  throw Error(error_prefix(source, line, key) + what);
}

std::string join(const std::vector<const char*>& words) {
  std::string out;
  for (const char* w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

std::string double_quoted(const std::string& s, std::size_t max_chars) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_chars) out += "...";
  return out + "\"";
}

std::string quoted(const std::string& s) { return double_quoted(s, 80); }

std::string display_key(const std::string& k) {
  const bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '<';
  });
  return plain ? k : quoted(k);
}

std::string as_name(const std::string& word) {
  std::string out = word;
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '-' || c == ' ') c = '_';
  }
  return out;
}

std::string suggestion(const std::string& word, const std::vector<const char*>& candidates) {
  // Another spelling of a candidate ("one-at-a-time", "Spsa") is far in
  // edits but plainly meant.
  for (const char* c : candidates)
    if (as_name(word) == c) return std::string(" (did you mean \"") + c + "\"?)";
  const char* best = nullptr;
  std::size_t best_distance = 3;
  for (const char* c : candidates) {
    // The lengths' difference bounds the distance from below: a value far
    // longer than every candidate (a 50 MB string) costs no table at all.
    const std::size_t length = std::char_traits<char>::length(c);
    if ((word.size() > length ? word.size() - length : length - word.size()) >= best_distance)
      continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // A shortened key ("resident" for "resident_blocks") is far in edits but
  // plainly meant: the one candidate it begins, if there is exactly one.
  if (!best && word.size() >= 4) {
    for (const char* c : candidates) {
      if (std::string(c).compare(0, word.size(), word) != 0) continue;
      if (best) return std::string();  // ambiguous
      best = c;
    }
  }
  return best ? std::string(" (did you mean \"") + best + "\"?)" : std::string();
}

std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string yaml_string(const std::string& s) { return double_quoted(s, std::string::npos); }

std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

}  // namespace distzo::io::deck_detail
