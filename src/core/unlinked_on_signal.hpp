#pragma once
// Files that must not outlive a process a signal ends at once (a second
// Ctrl-C): the temporary checkpoint being written, the lock of the output
// directory. Their owners register them for as long as they exist; the
// signal handler removes them before it exits. Fixed slots and lock-free
// atomics, so the handler allocates nothing and calls only unlink(2).
// A process killed outright (SIGKILL: mpiexec's second Ctrl-C, the OOM
// killer) leaves them; the next run in the directory takes a dead run's lock
// over and removes its temporary checkpoints (app/run_directory.hpp).

#include <string>

namespace distzo {

/// Registers `path` until destroyed. At most a few paths at once (the
/// writes that register them are not nested); one beyond that, or longer
/// than PATH_MAX, is not registered.
class UnlinkedOnSignal {
 public:
  explicit UnlinkedOnSignal(const std::string& path);
  ~UnlinkedOnSignal();
  UnlinkedOnSignal(const UnlinkedOnSignal&) = delete;
  UnlinkedOnSignal& operator=(const UnlinkedOnSignal&) = delete;

 private:
  int slot_ = -1;
};

/// Removes every registered path. Async-signal-safe.
void unlink_registered_files() noexcept;

}  // namespace distzo
