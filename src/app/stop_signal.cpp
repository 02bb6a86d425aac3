#include "app/stop_signal.hpp"

#include <unistd.h>

#include <csignal>

#include "core/unlinked_on_signal.hpp"

namespace distzo::app {

namespace {

volatile std::sig_atomic_t received = 0;  // a StopReason
volatile std::sig_atomic_t announce_first = 0;

/// write(2) of a literal: async-signal-safe.
template <std::size_t N>
void say(const char (&text)[N]) {
  const ssize_t ignored = write(STDERR_FILENO, text, N - 1);
  (void)ignored;
}

extern "C" void on_stop_signal(int signal) {
  if (received != 0) {  // asked twice: stop now
    unlink_registered_files();
    say("distzo: a second signal: stopping at once; the last checkpoint written stays\n");
    // An exit status rather than death by the signal: Hydra's mpiexec turns
    // a rank killed by a signal into a misleading status (SIGINT | SIGKILL
    // reads as "signal 11, Segmentation fault") or 0.
    _exit(128 + signal);
  }
  if (signal == SIGINT) {
    received = static_cast<std::sig_atomic_t>(StopReason::interrupt);
    if (announce_first)
      say("distzo: interrupted: stopping after the current step, with a checkpoint "
          "(interrupt again to stop at once)\n");
  } else {
    received = static_cast<std::sig_atomic_t>(StopReason::requeue);
    if (announce_first)
      say("distzo: asked to stop (SIGTERM or SIGUSR1): stopping after the current step, "
          "with a checkpoint\n");
  }
}

}  // namespace

void install_stop_handlers(bool announce) {
  announce_first = announce ? 1 : 0;
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGUSR1, on_stop_signal);
  // A command a non-interactive shell starts in the background ignores
  // SIGINT (the terminal's Ctrl-C is for the foreground): it stays so.
  if (std::signal(SIGINT, on_stop_signal) == SIG_IGN) std::signal(SIGINT, SIG_IGN);
}

StopReason stop_signal_received() { return static_cast<StopReason>(received); }

}  // namespace distzo::app
