// The rate limit of progress lines, on a clock the test moves by hand (no
// test here waits or measures time), and the byte positions they report.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "app/progress.hpp"
#include "support/tiny_model.hpp"

namespace {

using distzo::app::ProgressMeter;
using distzo::app::ProgressPoint;
using Clock = ProgressMeter::Clock;

/// A meter on a hand-moved clock; its lines go to `lines`.
struct Fixture {
  Clock::time_point now{};
  std::vector<std::string> lines;
  ProgressMeter meter(double interval) {
    return ProgressMeter([this](const std::string& l) { lines.push_back(l); },
                         [](const ProgressPoint& p) {
                           return std::to_string(static_cast<int>(p.done)) + "/" +
                                  std::to_string(static_cast<int>(p.total)) + " after " +
                                  std::to_string(static_cast<int>(p.seconds)) + " s, ETA " +
                                  std::to_string(static_cast<int>(p.eta_seconds()));
                         },
                         interval, [this] { return now; });
  }
  void advance(double seconds) {
    now += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  /// `total` updates of `m`, one a second.
  void count_to(ProgressMeter& m, int total) {
    for (int done = 1; done <= total; ++done) {
      advance(1);
      m.update(done, total);
    }
  }
};

TEST(ProgressMeter, AtMostOneLinePerIntervalAndTheLast) {
  Fixture f;
  ProgressMeter m = f.meter(10);
  f.count_to(m, 30);
  // Due at 10 s and 20 s (10 s after the line before), then the last.
  EXPECT_EQ(f.lines,
            (std::vector<std::string>{"10/30 after 10 s, ETA 20", "20/30 after 20 s, ETA 10",
                                      "30/30 after 30 s, ETA 0"}));
  m.update(30, 30);  // finished: nothing more
  EXPECT_EQ(m.lines(), 3);
}

TEST(ProgressMeter, APhaseShorterThanTheIntervalPrintsNothing) {
  Fixture f;
  ProgressMeter m = f.meter(10);
  f.count_to(m, 5);
  EXPECT_TRUE(f.lines.empty());
}

TEST(ProgressMeter, IntervalZeroPrintsEveryUpdate) {
  Fixture f;
  ProgressMeter m = f.meter(0);
  for (int done = 1; done <= 3; ++done) m.update(done, 3);  // the clock does not even move
  EXPECT_EQ(f.lines.size(), 3u);
}

TEST(TensorBytes, CountsThroughTensorsInIdOrder) {
  const distzo::model::ModelConfig config = distzo::test_support::tiny_config();
  const auto registry = distzo::model::ParameterRegistry::for_model(config);
  const distzo::app::TensorBytes bytes(registry,
                                       [](std::uint32_t id) { return id == 0 ? 2u : 4u; });
  double total = 0;
  for (std::uint32_t id = 0; id < registry.size(); ++id)
    total += (id == 0 ? 2.0 : 4.0) * static_cast<double>(registry[id].numel());
  EXPECT_EQ(bytes.total(), total);
  EXPECT_EQ(bytes.through(0, 3), 6.0);
  EXPECT_EQ(bytes.through(1, 0), 2.0 * static_cast<double>(registry[0].numel()));
  EXPECT_EQ(bytes.through(static_cast<std::uint32_t>(registry.size() - 1),
                          static_cast<std::uint64_t>(registry[registry.size() - 1].numel())),
            total);
}

}  // namespace
