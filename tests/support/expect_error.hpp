#pragma once
// Checking what an error says: the message of the distzo::Error a call
// throws, or "(no error)" when it throws none, so that an assertion on the
// message fails then too.

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace distzo::test_support {

template <class Call>
std::string error_message(const Call& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace distzo::test_support

/// EXPECT that the statement(s) after `fragment` throw a distzo::Error whose
/// message contains `fragment`.
#define EXPECT_ERROR_CONTAINS(fragment, ...)                                                  \
  do {                                                                                        \
    const std::string message_ = ::distzo::test_support::error_message([&] { __VA_ARGS__; }); \
    EXPECT_NE(message_.find(fragment), std::string::npos) << message_;                        \
  } while (0)
