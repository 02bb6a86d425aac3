#include "app/stop_signal.hpp"

#include "core/unlinked_on_signal.hpp"

#include <csignal>
#include <unistd.h>

namespace distzo::app {

namespace {

volatile std::sig_atomic_t received = 0;

/// write(2) of a literal: async-signal-safe.
template <std::size_t N>
void say(const char (&text)[N]) {
  const ssize_t ignored = write(STDERR_FILENO, text, N - 1);
  (void)ignored;
}

extern "C" void on_stop_signal(int signal) {
  if (received) {  // asked twice: stop now
    unlink_registered_files();
    say("distzo: a second signal: stopping at once; the last checkpoint written stays\n");
    // An exit status rather than death by the signal: Hydra's mpiexec turns
    // a rank killed by a signal into a misleading status (SIGINT | SIGKILL
    // reads as "signal 11, Segmentation fault") or 0.
    _exit(128 + signal);
  }
  received = 1;
}

}  // namespace

void install_stop_handlers() {
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGUSR1, on_stop_signal);
}

bool stop_signal_received() { return received != 0; }

}  // namespace distzo::app
