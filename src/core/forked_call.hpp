#pragma once
// Calls into a library that may crash on bad input, made in a child process so
// that the crash ends the child, not the run.

#include <functional>
#include <string>

namespace distzo {

/// How a forked call ended, and what it produced.
struct ForkedCall {
  std::string output;   // the bytes the call handed back
  std::string failure;  // empty when it returned true; else how it ended
                        // ("died of signal 11 (Segmentation fault)", ...)
  bool ok() const { return failure.empty(); }
};

/// Runs `call` in a fork()ed child and hands back the bytes it puts in its
/// argument. The child shares the parent's memory image and open files (copy on
/// write) and runs only `call` and _exit: no exit handlers, no flush of the
/// parent's streams, no MPI; its stderr goes to /dev/null. A child that dies
/// of a signal, returns false or runs longer than `timeout_seconds` (then
/// killed) is reported in `failure`;
/// the child is killed with the parent, should the parent die first.
/// `call` must not take locks another thread of the parent may hold (the
/// child has one thread): a library used only by the calling thread is fine.
ForkedCall call_in_forked_child(const std::function<bool(std::string&)>& call, int timeout_seconds);

}  // namespace distzo
