#pragma once
// distzo's one JSON reader (RFC 8259): Hugging Face's config.json
// (io/hf_config.hpp) and the tokenizer files a model file carries
// (io/model_file.hpp, hf_tokenizer_files). Strict where YAML would be lenient:
// no comments, no trailing commas, no single quotes or bare words, no
// duplicate keys, nothing after the value. Each scalar keeps its text as
// written and is converted only when asked: a number as an integer only when
// it is written as one, as a double correctly rounded; a string's escapes are
// checked when it is read but decoded only when asked, so the megabytes of a
// tokenizer.json carried as one string are never decoded to be measured.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace distzo::io {

class JsonValue {
 public:
  bool is_null() const { return kind_ == Kind::null; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  /// A boolean's value; std::nullopt for any other kind.
  std::optional<bool> boolean() const;
  /// A number written as an integer ("64", "-3": no fraction, no exponent)
  /// that fits in 64 bits; std::nullopt otherwise ("64.0", "1e3", a string).
  std::optional<std::int64_t> integer() const;
  /// A number as the nearest double; std::nullopt for another kind, or a
  /// nonzero number that double cannot hold: too large ("1e400") or so small
  /// it would round to zero ("1e-400").
  std::optional<double> number() const;
  /// A string, its escapes decoded (UTF-8; a lone UTF-16 surrogate becomes
  /// U+FFFD, as it has no UTF-8 form); std::nullopt for any other kind.
  std::optional<std::string> string() const;
  /// A string's length in bytes as written between its quotes, escapes
  /// undecoded (what the text takes in the JSON); 0 for any other kind.
  std::size_t written_bytes() const { return kind_ == Kind::string ? text_.size() : 0; }
  /// The value for an error message: a number or a string as written (a long
  /// string cut short), "true", "null", "an array", "an object".
  std::string describe() const;

  /// An array's elements; empty for any other kind.
  const std::vector<JsonValue>& elements() const { return elements_; }
  /// An object's members in the order written, keys decoded (no two alike);
  /// empty for any other kind.
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  /// The member `key` of an object; nullptr when absent or not an object.
  const JsonValue* find(const std::string& key) const;

 private:
  friend class JsonParser;
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind_ = Kind::null;
  // true/false; a number's literal; a string's bytes between its quotes.
  std::string text_;
  std::vector<JsonValue> elements_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

/// Parses `text` (a UTF-8 byte-order mark before it is skipped); throws
/// distzo::Error "not valid JSON: ',' or '}' expected at line 3, column 17"
/// (line and column of the byte that is wrong, both from 1).
JsonValue parse_json(const std::string& text);

}  // namespace distzo::io
