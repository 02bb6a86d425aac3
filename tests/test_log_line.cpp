// run.log's lines: the UTC time at the start of each line of every message.

#include <gtest/gtest.h>

#include <chrono>
#include <regex>

#include "core/log_line.hpp"

namespace {

TEST(LogLine, UtcTimestampIsIso8601WithMilliseconds) {
  // 2026-12-06T22:41:07.123Z in milliseconds since the epoch.
  const std::chrono::system_clock::time_point t{std::chrono::milliseconds(1796596867123LL)};
  EXPECT_EQ(distzo::utc_timestamp(t), "2026-12-06T22:41:07.123Z");
  EXPECT_TRUE(std::regex_match(distzo::utc_timestamp(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST(LogLine, EveryLineOfAMessageIsStamped) {
  EXPECT_EQ(distzo::stamp_lines("done", "T"), "T done\n");
  EXPECT_EQ(distzo::stamp_lines("a\nb", "T"), "T a\nT b\n");
  EXPECT_EQ(distzo::stamp_lines("a\n", "T"), "T a\n");  // the final newline ends the line
  EXPECT_EQ(distzo::stamp_lines("a\n\nb\n", "T"), "T a\nT \nT b\n");
  EXPECT_EQ(distzo::stamp_lines("", "T"), "T \n");
}

}  // namespace
