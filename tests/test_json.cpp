// The JSON reader (io/json.hpp): values, exact numbers, escapes, what it
// refuses and where it says the text is wrong; and what its strictness means
// for a config.json (io/hf_config.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "io/hf_config.hpp"
#include "io/json.hpp"
#include "support/expect_error.hpp"

namespace {

using distzo::io::JsonValue;
using distzo::io::parse_json;

TEST(Json, ReadsEveryKindInTheOrderWritten) {
  const JsonValue v = parse_json(
      " {\"b\": [1, -2.5, true, false, null, \"x\"],\n \"a\": {\"nested\": {}}, \"c\": []} ");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.members().size(), 3u);
  EXPECT_EQ(v.members()[0].first, "b");
  EXPECT_EQ(v.members()[1].first, "a");
  const JsonValue& b = *v.find("b");
  ASSERT_TRUE(b.is_array());
  ASSERT_EQ(b.elements().size(), 6u);
  EXPECT_EQ(b.elements()[0].integer(), 1);
  EXPECT_EQ(b.elements()[1].number(), -2.5);
  EXPECT_EQ(b.elements()[2].boolean(), true);
  EXPECT_EQ(b.elements()[3].boolean(), false);
  EXPECT_TRUE(b.elements()[4].is_null());
  EXPECT_EQ(b.elements()[5].string(), "x");
  EXPECT_TRUE(v.find("a")->find("nested")->is_object());
  EXPECT_TRUE(v.find("c")->elements().empty());
  EXPECT_EQ(v.find("d"), nullptr);
  EXPECT_EQ(b.find("b"), nullptr) << "an array has no members";
  // One accessor per kind: the others say "not this kind".
  EXPECT_FALSE(b.elements()[5].integer().has_value());
  EXPECT_FALSE(b.elements()[0].string().has_value());
  EXPECT_FALSE(b.elements()[4].boolean().has_value());
  // A byte-order mark before the text is skipped.
  EXPECT_EQ(parse_json("\xEF\xBB\xBF{\"k\": 1}").find("k")->integer(), 1);
}

TEST(Json, NumbersAreConvertedExactly) {
  const auto integer = [](const std::string& text) { return parse_json(text).integer(); };
  const auto number = [](const std::string& text) { return parse_json(text).number(); };
  // An integer only when written as one, and only within 64 bits.
  EXPECT_EQ(integer("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(integer("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  EXPECT_FALSE(integer("9223372036854775808").has_value());
  EXPECT_FALSE(integer("64.0").has_value());
  EXPECT_FALSE(integer("1e3").has_value());
  EXPECT_EQ(integer("-0"), 0);
  // Doubles correctly rounded, as Python's json writes and reads them.
  EXPECT_EQ(number("1e-05"), 1e-5);
  EXPECT_EQ(number("1E+06"), 1e6);
  EXPECT_EQ(number("0.1"), 0.1);
  EXPECT_EQ(number("100000"), 100000.0);
  EXPECT_EQ(number("1.0000000000000002"), 1.0000000000000002);
  EXPECT_EQ(number("9007199254740993"), 9007199254740992.0) << "to nearest, ties to even";
  EXPECT_EQ(number("2.2250738585072014e-308"), std::numeric_limits<double>::min());
  EXPECT_EQ(number("5e-324"), std::numeric_limits<double>::denorm_min());
  EXPECT_FALSE(number("1e400").has_value()) << "beyond double's range";
  EXPECT_FALSE(number("1e-400").has_value()) << "not zero, but it would round to zero";
}

TEST(Json, StringsKeepTheirWrittenLengthAndDecodeEveryEscape) {
  const JsonValue s = parse_json(R"("q\"b\\s\/n\nt\tr\rb\bf\f")");
  EXPECT_EQ(s.string(), "q\"b\\s/n\nt\tr\rb\bf\f");
  EXPECT_EQ(s.written_bytes(), 24u) << "the bytes between the quotes, escapes as written";
  // \u: UTF-8 of one, two and three bytes; a surrogate pair is one code point
  // of four; a surrogate without its pair has no UTF-8 form: U+FFFD.
  EXPECT_EQ(parse_json(R"("\u0041\u00e9\u20AC")").string(), "A\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(parse_json(R"("\ud83d\ude00")").string(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(parse_json(R"("\ud83d!")").string(), "\xEF\xBF\xBD!");
  EXPECT_EQ(parse_json(R"("\ude00\ud83d")").string(), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(parse_json(R"("\ud83d\\ude00")").string(), "\xEF\xBF\xBD\\ude00");
  // Bytes beyond ASCII pass through as written.
  EXPECT_EQ(parse_json("\"\xC3\xA9\"").string(), "\xC3\xA9");
  // Keys are decoded: "\u0061" and "a" are one key.
  EXPECT_NE(parse_json(R"({"\u0061": 1})").find("a"), nullptr);
}

TEST(Json, RefusesWhatIsNotJsonAndSaysWhere) {
  const auto error = [](const std::string& text) {
    return distzo::test_support::error_message([&] { parse_json(text); });
  };
  EXPECT_EQ(error(""), "not valid JSON: a value expected at line 1, column 1");
  EXPECT_EQ(error("{\"a\": 1,\n \"b\": 2,\n}"),
            "not valid JSON: a string (a key) expected at line 3, column 1");
  EXPECT_EQ(error("[1, 2,]"), "not valid JSON: a value expected at line 1, column 7");
  EXPECT_EQ(error(R"({"a": 1} x)"),
            "not valid JSON: the end of the text expected at line 1, column 10");
  EXPECT_EQ(error(R"({"a" 1})"), "not valid JSON: ':' expected at line 1, column 6");
  EXPECT_EQ(error(R"({"a": 1 "b": 2})"), "not valid JSON: ',' or '}' expected at line 1, column 9");
  EXPECT_EQ(error(R"({"a": 1, "a": 2})"),
            "not valid JSON: key \"a\" given twice in one object at line 1, column 10");
  EXPECT_EQ(error(R"({"a": "b)"),
            "not valid JSON: the closing '\"' of a string expected at line 1, column 9");
  EXPECT_EQ(error("\"a\nb\""),
            "not valid JSON: a control character inside a string (JSON escapes them) at line 1, "
            "column 3");
  EXPECT_EQ(
      error(R"("\x")"),
      R"(not valid JSON: an escape (\" \\ \/ \b \f \n \r \t \uXXXX) expected at line 1, column 3)");
  EXPECT_EQ(error(R"("\u12g4")"),
            R"(not valid JSON: a hex digit of a \u escape expected at line 1, column 6)");
  EXPECT_EQ(error(R"("\u12)"),
            R"(not valid JSON: a hex digit of a \u escape expected at line 1, column 6)");
  EXPECT_EQ(error("01"), "not valid JSON: the end of the text expected at line 1, column 2");
  EXPECT_EQ(error("1."), "not valid JSON: a digit after '.' expected at line 1, column 3");
  EXPECT_EQ(error("1e"), "not valid JSON: a digit of the exponent expected at line 1, column 3");
  EXPECT_EQ(error("-"), "not valid JSON: a digit expected at line 1, column 2");
  // YAML's and JavaScript's forms that are not JSON.
  for (const char* text : {"// c\n{}", "# c\n{}", "{'a': 1}", "{a: 1}", "+1", ".5", "NaN",
                           "Infinity", "True", "nul", "{\"a\": yes}"}) {
    SCOPED_TRACE(text);
    EXPECT_NE(error(text).find("not valid JSON: "), std::string::npos) << error(text);
  }
  // Nesting is bounded: a hostile file cannot exhaust the stack.
  EXPECT_NO_THROW(parse_json(std::string(128, '[') + std::string(128, ']')));
  EXPECT_EQ(error(std::string(129, '[') + std::string(129, ']')),
            "not valid JSON: nesting deeper than 128 levels at line 1, column 129");
  EXPECT_NE(error(std::string(100000, '[')).find("nesting deeper than 128 levels"),
            std::string::npos);
}

TEST(Json, DescribesAValueForAnErrorMessage) {
  EXPECT_EQ(parse_json("\"big\"").describe(), "\"big\"");
  EXPECT_EQ(parse_json("1.50").describe(), "1.50");
  EXPECT_EQ(parse_json("null").describe(), "null");
  EXPECT_EQ(parse_json("{}").describe(), "an object");
  EXPECT_EQ(parse_json("[]").describe(), "an array");
  EXPECT_EQ(parse_json("\"" + std::string(50, 'x') + "\"").describe(),
            "\"" + std::string(40, 'x') + "...\"");
}

/// What parse_hf_config says of `text`, or "(no error)".
std::string hf_config_error(const std::string& text) {
  return distzo::test_support::error_message([&] { distzo::io::parse_hf_config(text, "c.json"); });
}

// A config.json is JSON: a value of the wrong kind is named with what was
// found, a number is an integer only when written as one, and YAML's
// leniencies are refusals.
TEST(HfConfig, ReadsJsonStrictly) {
  EXPECT_EQ(hf_config_error(R"({"model_type": "opt", "hidden_size": "64"})"),
            "c.json: hidden_size must be an integer, found \"64\"");
  EXPECT_EQ(hf_config_error(R"({"model_type": "opt", "hidden_size": 64.0})"),
            "c.json: hidden_size must be an integer, found 64.0");
  EXPECT_EQ(hf_config_error(R"({"model_type": "opt", "do_layer_norm_before": "true"})"),
            "c.json: do_layer_norm_before must be true or false, found \"true\"");
  EXPECT_EQ(hf_config_error(R"({"model_type": "llama", "rms_norm_eps": "1e-6"})"),
            "c.json: rms_norm_eps must be a number, found \"1e-6\"");
  EXPECT_EQ(hf_config_error(R"({"model_type": "llama", "rope_theta": 1e400})"),
            "c.json: rope_theta must be a number, found 1e400");
  EXPECT_EQ(hf_config_error(R"({"model_type": "llama", "hidden_act": ["silu"]})"),
            "c.json: hidden_act must be a string, found an array");
  EXPECT_EQ(hf_config_error(R"({"model_type": 7})"),
            "c.json: model_type must be a string, found 7");
  EXPECT_EQ(hf_config_error(R"({"model_type": "llama", "rope_scaling": {"rope_type": 3}})"),
            "c.json: rope_scaling.rope_type must be a string, found 3");
  EXPECT_EQ(hf_config_error("{\"model_type\": \"opt\",}"),
            "c.json: not valid JSON: a string (a key) expected at line 1, column 22");
  EXPECT_EQ(hf_config_error("model_type: opt\n"),
            "c.json: not valid JSON: a value expected at line 1, column 1");
  EXPECT_EQ(hf_config_error(R"({"model_type": "opt", "model_type": "llama"})"),
            "c.json: not valid JSON: key \"model_type\" given twice in one object at line 1, "
            "column 23");
  // The numbers as written: 1e-05 is the double 1e-5, 100000 a real too.
  const distzo::model::ModelConfig c = distzo::io::parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "rms_norm_eps": 1e-05, "rope_theta": 100000, "intermediate_size": 96,
          "vocab_size": 100, "num_hidden_layers": 1})",
      "c.json");
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_theta, 100000.0);
}

}  // namespace
