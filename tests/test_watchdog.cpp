// The watchdog's view of a stopped process (runtime/watchdog.hpp): what
// lets rank 0 name a rank stopped inside a collective that every rank began.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "runtime/watchdog.hpp"

namespace {

using distzo::runtime::process_stopped;

/// Waits up to 5 s for process_stopped(pid) to become `want` (a signal's
/// effect on the target is not synchronous with kill()).
bool becomes(pid_t pid, bool want) {
  for (int i = 0; i < 500; ++i) {
    if (process_stopped(static_cast<std::uint64_t>(pid)) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(Watchdog, ProcessStoppedFollowsSigstopAndSigcont) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();  // until killed
  }
  EXPECT_TRUE(becomes(child, false)) << "a running (sleeping) process reads as stopped";
  kill(child, SIGSTOP);
  EXPECT_TRUE(becomes(child, true)) << "a SIGSTOPped process does not read as stopped";
  kill(child, SIGCONT);
  EXPECT_TRUE(becomes(child, false)) << "a continued process still reads as stopped";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_stopped(static_cast<std::uint64_t>(child))) << "a reaped process";
}

TEST(Watchdog, ThisProcessIsNotStopped) {
  EXPECT_FALSE(process_stopped(static_cast<std::uint64_t>(getpid())));
}

}  // namespace
