#include "io/json.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <system_error>

#include "core/error.hpp"

namespace distzo::io {

namespace {

/// Nesting beyond any config.json (theirs is 3 deep); a hostile file nested
/// deeper would otherwise end the recursion in a stack overflow.
constexpr int kMaxDepth = 128;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The 4 hex digits at text[at..at+4) (checked when parsed).
unsigned hex4(const std::string& text, std::size_t at) {
  unsigned value = 0;
  for (std::size_t k = 0; k < 4; ++k)
    value = value * 16 + static_cast<unsigned>(hex_value(text[at + k]));
  return value;
}

void append_utf8(std::string& out, unsigned code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

bool is_high_surrogate(unsigned u) { return u >= 0xD800 && u <= 0xDBFF; }
bool is_low_surrogate(unsigned u) { return u >= 0xDC00 && u <= 0xDFFF; }

/// The bytes between a string's quotes, as string_body checked them, decoded.
std::string decode_string(const std::string& written) {
  std::string out;
  out.reserve(written.size());
  for (std::size_t i = 0; i < written.size(); ++i) {
    if (written[i] != '\\') {
      out += written[i];
      continue;
    }
    const char e = written[++i];
    switch (e) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned u = hex4(written, i + 1);
        i += 4;
        // A UTF-16 pair: high then low surrogate, as "\ud83d\ude00".
        if (is_high_surrogate(u) && i + 6 < written.size() &&
            written.compare(i + 1, 2, "\\u") == 0 && is_low_surrogate(hex4(written, i + 3))) {
          u = 0x10000 + ((u - 0xD800) << 10) + (hex4(written, i + 3) - 0xDC00);
          i += 6;
        } else if (is_high_surrogate(u) || is_low_surrogate(u)) {
          u = 0xFFFD;
        }
        append_utf8(out, u);
        break;
      }
      default:
        out += e;  // '"', '\\', '/'
    }
  }
  return out;
}

}  // namespace

/// Recursive descent over the text; every error names the line and column.
class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) at_ = 3;
  }

  JsonValue document() {
    JsonValue root = value(0);
    skip_space();
    if (at_ != text_.size()) expected("the end of the text");
    return root;
  }

 private:
  /// Throws "not valid JSON: <what> at line L, column C" for the byte at at_.
  [[noreturn]] void fail(const std::string& what) const {
    std::size_t line = 1, line_start = 0;
    for (std::size_t i = 0; i < at_ && i < text_.size(); ++i)
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    DISTZO_INPUT_FAIL("not valid JSON: " << what << " at line " << line << ", column "
                                         << at_ - line_start + 1);
  }
  [[noreturn]] void expected(const char* what) const { fail(std::string(what) + " expected"); }

  bool at_end() const { return at_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[at_]; }

  void skip_space() {
    while (!at_end() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }

  void expect(char c, const char* what) {
    skip_space();
    if (peek() != c) expected(what);
    ++at_;
  }

  JsonValue value(int depth) {
    skip_space();
    if (at_end()) expected("a value");
    JsonValue v;
    const char c = text_[at_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
      if (c == '{')
        object(v, depth + 1);
      else
        array(v, depth + 1);
    } else if (c == '"') {
      v.kind_ = JsonValue::Kind::string;
      v.text_ = string_body();
    } else if (c == '-' || is_digit(c)) {
      v.kind_ = JsonValue::Kind::number;
      v.text_ = number_literal();
    } else {
      for (const char* word : {"true", "false", "null"})
        if (text_.compare(at_, std::char_traits<char>::length(word), word) == 0) {
          at_ += std::char_traits<char>::length(word);
          v.kind_ = word[0] == 'n' ? JsonValue::Kind::null : JsonValue::Kind::boolean;
          v.text_ = word;
          return v;
        }
      expected("a value");
    }
    return v;
  }

  void object(JsonValue& v, int depth) {
    v.kind_ = JsonValue::Kind::object;
    ++at_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++at_;
      return;
    }
    std::set<std::string> keys;
    for (;;) {
      skip_space();
      if (peek() != '"') expected("a string (a key)");
      const std::size_t key_at = at_;
      std::string key = decode_string(string_body());
      if (!keys.insert(key).second) {
        at_ = key_at;
        fail("key \"" + key + "\" given twice in one object");
      }
      expect(':', "':'");
      v.members_.emplace_back(std::move(key), value(depth));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect('}', "',' or '}'");
      return;
    }
  }

  void array(JsonValue& v, int depth) {
    v.kind_ = JsonValue::Kind::array;
    ++at_;  // '['
    skip_space();
    if (peek() == ']') {
      ++at_;
      return;
    }
    for (;;) {
      v.elements_.push_back(value(depth));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect(']', "',' or ']'");
      return;
    }
  }

  /// The string at at_: its bytes between the quotes, escapes checked, not decoded.
  std::string string_body() {
    const std::size_t begin = ++at_;  // past '"'
    for (;;) {
      if (at_end()) expected("the closing '\"' of a string");
      const auto c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') break;
      if (c < 0x20) fail("a control character inside a string (JSON escapes them)");
      if (c == '\\') {
        ++at_;
        const char e = peek();
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (hex_value(at_ + k < text_.size() ? text_[at_ + k] : '\0') < 0) {
              at_ += static_cast<std::size_t>(k);
              expected("a hex digit of a \\u escape");
            }
          at_ += 4;
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          expected("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        }
      }
      ++at_;
    }
    std::string body = text_.substr(begin, at_ - begin);
    ++at_;  // past '"'
    return body;
  }

  /// The number at at_ (RFC 8259: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?), as written.
  std::string number_literal() {
    const std::size_t begin = at_;
    if (peek() == '-') ++at_;
    if (peek() == '0') {
      ++at_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++at_;
    } else {
      expected("a digit");
    }
    if (peek() == '.') {
      ++at_;
      if (!is_digit(peek())) expected("a digit after '.'");
      while (is_digit(peek())) ++at_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++at_;
      if (peek() == '+' || peek() == '-') ++at_;
      if (!is_digit(peek())) expected("a digit of the exponent");
      while (is_digit(peek())) ++at_;
    }
    return text_.substr(begin, at_ - begin);
  }

  const std::string& text_;
  std::size_t at_ = 0;
};

JsonValue parse_json(const std::string& text) { return JsonParser(text).document(); }

std::optional<bool> JsonValue::boolean() const {
  if (kind_ != Kind::boolean) return std::nullopt;
  return text_ == "true";
}

std::optional<std::int64_t> JsonValue::integer() const {
  if (kind_ != Kind::number || text_.find_first_of(".eE") != std::string::npos) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), value);
  if (ec != std::errc() || end != text_.data() + text_.size()) return std::nullopt;
  return value;
}

std::optional<double> JsonValue::number() const {
  if (kind_ != Kind::number) return std::nullopt;
  double value = 0;
  // from_chars: correctly rounded, whatever the locale.
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), value);
  if (ec != std::errc() || end != text_.data() + text_.size()) return std::nullopt;
  return value;
}

std::optional<std::string> JsonValue::string() const {
  if (kind_ != Kind::string) return std::nullopt;
  return decode_string(text_);
}

std::string JsonValue::describe() const {
  constexpr std::size_t kShown = 40;
  switch (kind_) {
    case Kind::array:
      return "an array";
    case Kind::object:
      return "an object";
    case Kind::string:
      return "\"" + (text_.size() <= kShown ? text_ : text_.substr(0, kShown) + "...") + "\"";
    default:
      return text_;
  }
}

const JsonValue* JsonValue::find(const std::string& key) const {
  const auto it = std::find_if(members_.begin(), members_.end(),
                               [&](const auto& member) { return member.first == key; });
  return it == members_.end() ? nullptr : &it->second;
}

}  // namespace distzo::io
