#pragma once
// The project's error type. Library code throws distzo::Error; only main()
// catches it, prints it on the failing rank and aborts the job. Messages say
// what was expected and what was found, so the user can fix the input.

#include <sstream>
#include <stdexcept>
#include <string>

namespace distzo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// An error every rank of the job raises together (a bad deck, diverged
/// replicas): the ranks finish MPI cleanly instead of aborting, and only the
/// ranks with `report()` print it, so a 1000-rank job prints it once.
class CollectiveError : public Error {
 public:
  CollectiveError(const std::string& what, bool report) : Error(what), report_(report) {}
  bool report() const { return report_; }

 private:
  bool report_;
};

/// Why a run was asked to stop after the current step. The ranks agree on
/// the strongest any of them was asked (an interrupt outranks a requeue).
enum class StopReason : int {
  none = 0,
  requeue = 1,    // SIGTERM, SIGUSR1: a time limit coming, scancel, a requeue
  interrupt = 2,  // SIGINT: a user's Ctrl-C
};

/// The exit status of a run stopped by SIGTERM or SIGUSR1 after
/// checkpointing (EX_TEMPFAIL: try again, i.e. requeue and resume).
constexpr int kExitStopped = 75;
/// The exit status of a run stopped by SIGINT after checkpointing: 128 +
/// SIGINT, as a shell reports an interrupted command; not a requeue.
constexpr int kExitInterrupted = 130;

/// Every rank stopped together after a step because one of them was asked to
/// (`reason`), with θ checkpointed: main exits with exit_status(), which a
/// job script requeues on (kExitStopped) unless a user interrupted the run.
class StopRequested : public CollectiveError {
 public:
  StopRequested(const std::string& what, bool report, StopReason reason)
      : CollectiveError(what, report), reason_(reason) {}
  StopReason reason() const { return reason_; }
  int exit_status() const {
    return reason_ == StopReason::interrupt ? kExitInterrupted : kExitStopped;
  }

 private:
  StopReason reason_;
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace distzo

/// Throws distzo::Error with file:line when `cond` is false. The message is a
/// stream expression: DISTZO_REQUIRE(n > 0, "n must be positive, got " << n).
#define DISTZO_REQUIRE(cond, message_stream)                                       \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::ostringstream distzo_require_os_;                                       \
      distzo_require_os_ << message_stream;                                        \
      ::distzo::detail::throw_error(__FILE__, __LINE__, distzo_require_os_.str()); \
    }                                                                              \
  } while (0)

/// Unconditional throw with the same formatting.
#define DISTZO_FAIL(message_stream) DISTZO_REQUIRE(false, message_stream)

/// For mistakes in what the user gave (a file's contents, a command line):
/// the message alone, which names the input, without distzo's source location.
#define DISTZO_INPUT_REQUIRE(cond, message_stream)     \
  do {                                                 \
    if (!(cond)) {                                     \
      std::ostringstream distzo_require_os_;           \
      distzo_require_os_ << message_stream;            \
      throw ::distzo::Error(distzo_require_os_.str()); \
    }                                                  \
  } while (0)

#define DISTZO_INPUT_FAIL(message_stream) DISTZO_INPUT_REQUIRE(false, message_stream)
