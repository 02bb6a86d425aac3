#include "app/stop_signal.hpp"

#include <csignal>

namespace distzo::app {

namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_stop_signal(int signal) {
  if (received) {  // asked twice: stop now
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
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
