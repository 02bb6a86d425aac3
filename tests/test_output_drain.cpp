// core/output_drain: before MPI_Abort, a rank waits until the launcher has
// read what it wrote (its pipe is empty), and no longer than a limit.

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/output_drain.hpp"

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Pipe {
  std::array<int, 2> fd{-1, -1};
  Pipe() { EXPECT_EQ(pipe(fd.data()), 0); }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

TEST(OutputDrain, WaitsUntilTheReaderHasReadThePipe) {
  Pipe p;
  const char line[] = "distzo: error on rank 0: disk full\n";
  ASSERT_EQ(write(p.fd[1], line, sizeof line - 1), static_cast<ssize_t>(sizeof line - 1));
  std::thread reader([&] {
    std::this_thread::sleep_for(milliseconds(300));
    char buf[128];
    EXPECT_EQ(read(p.fd[0], buf, sizeof buf), static_cast<ssize_t>(sizeof line - 1));
  });
  const auto start = Clock::now();
  EXPECT_TRUE(distzo::wait_until_read(p.fd[1], milliseconds(10000)));
  const auto waited = Clock::now() - start;
  reader.join();
  EXPECT_GE(waited, milliseconds(250));   // it waited for the reader ...
  EXPECT_LT(waited, milliseconds(5000));  // ... and not for the limit
}

TEST(OutputDrain, GivesUpAtTheLimitWhenNobodyReads) {
  Pipe p;
  ASSERT_EQ(write(p.fd[1], "x\n", 2), 2);
  const auto start = Clock::now();
  EXPECT_FALSE(distzo::wait_until_read(p.fd[1], milliseconds(100)));
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, milliseconds(100));
  EXPECT_LT(waited, milliseconds(3000));
}

TEST(OutputDrain, NothingToWaitForOnAnEmptyPipeAFileOrAClosedDescriptor) {
  Pipe p;
  EXPECT_TRUE(distzo::wait_until_read(p.fd[1], milliseconds(0)));
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(write(fileno(file), "x\n", 2), 2);
  EXPECT_TRUE(distzo::wait_until_read(fileno(file), milliseconds(0)));
  std::fclose(file);
  EXPECT_TRUE(distzo::wait_until_read(-1, milliseconds(0)));
}

}  // namespace
