#pragma once
// Before a rank of a multi-rank job calls MPI_Abort, what it wrote last (its
// error line) must have reached the launcher: MPICH's mpiexec (Hydra) reads a
// rank's stdout and stderr through pipes and ends the whole job, its own
// output included, as soon as the abort reaches it. Hydra's proxy reads the
// pipe and the rank's PMI connection in one thread and forwards both over one
// socket, in the order it read them; so once the pipe is empty, the line is
// ahead of the abort. Waiting for that, instead of sleeping a guess, is what
// this does.

#include <chrono>

namespace distzo {

/// Waits until everything written to `fd` has been read by whoever reads it,
/// when `fd` is a pipe or FIFO (FIONREAD) or a socket (SIOCOUTQ): true once
/// nothing is left unread, false when `limit` passes first (the reader is
/// stopped or gone). A terminal or a regular file has taken what was written
/// when write() returned, and a descriptor this cannot query has nothing to
/// wait for: true at once.
bool wait_until_read(int fd, std::chrono::milliseconds limit);

/// Flushes stdout and stderr (C and C++ streams), then waits (wait_until_read)
/// until the launcher has read both, at most `limit` in all. For the moment
/// just before MPI_Abort.
void flush_output_to_launcher(std::chrono::milliseconds limit = std::chrono::milliseconds(2000));

}  // namespace distzo
