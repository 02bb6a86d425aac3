#pragma once
// How the deck code spells things: the `<source>:<line>: <key>: ` error
// prefix, values and keys quoted for messages, did-you-mean suggestions, and
// the scalars of the resolved deck. Internal to src/io/deck*.cpp.

#include <cstddef>
#include <string>
#include <vector>

namespace distzo::io::deck_detail {

/// "<source>:<line>: <key>: ", the prefix every deck error starts with.
std::string error_prefix(const std::string& source, int line, const std::string& key);

/// Throws distzo::Error "<source>:<line>: <key>: <what>".
[[noreturn]] void fail(const std::string& source, int line, const std::string& key,
                       const std::string& what);

/// "a, b, c".
std::string join(const std::vector<const char*>& words);

/// A YAML double-quoted scalar: quotes and backslashes escaped, newline and
/// tab by name, other control characters as \xHH; at most `max_chars`
/// characters of `s`, then "..." inside the quotes.
std::string double_quoted(const std::string& s, std::size_t max_chars);

/// A string shown in a message: quoted, control characters escaped, long
/// values shortened.
std::string quoted(const std::string& s);

/// A key as written by the user, for the key slot of a message: plain words
/// as they are, anything else quoted so the message stays on one line.
std::string display_key(const std::string& k);

/// `word` as the name it may stand for: lower case, '-' and ' ' as '_'.
std::string as_name(const std::string& word);

/// " (did you mean "x"?)" for a candidate `word` spells otherwise (case,
/// '-' or ' ' for '_'), else the closest within 2 edits, else "".
std::string suggestion(const std::string& word, const std::vector<const char*>& candidates);

/// Shortest text that reads back to the same double.
std::string format_double(double v);

/// Every path and string of the resolved deck goes out double-quoted, so
/// that no value can be mistaken for a number, a boolean or null.
std::string yaml_string(const std::string& s);

/// `s` with line breaks turned into spaces (for a one-line YAML comment).
std::string one_line(std::string s);

}  // namespace distzo::io::deck_detail
