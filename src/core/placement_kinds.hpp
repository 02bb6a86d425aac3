#pragma once
// The kinds of placement a deck names (placement.mode, placement.exchange)
// and runtime/ implements: here, below both, so that io's deck structs and
// runtime's placement hold the same enum and nothing translates one into
// the other.

namespace distzo {

/// Where θ lives (runtime/placement.hpp): every group in the execution
/// space, or (ZO2) the streamed blocks in host memory.
enum class PlacementMode { resident, offload };

/// "resident" | "offload" (the spelling of decks and options).
inline const char* to_string(PlacementMode mode) {
  switch (mode) {
    case PlacementMode::resident:
      return "resident";
    case PlacementMode::offload:
      return "offload";
  }
  return "?";
}

/// How the ranks of a node exchange slices of the perturbed weights
/// (runtime/slice_exchange.hpp); `automatic`: the first the build can do.
enum class ExchangeKind { automatic, shared_memory, mpi, nccl };

/// "auto" | "shared_memory" | "mpi" | "nccl" (the spelling of decks).
inline const char* to_string(ExchangeKind kind) {
  switch (kind) {
    case ExchangeKind::automatic:
      return "auto";
    case ExchangeKind::shared_memory:
      return "shared_memory";
    case ExchangeKind::mpi:
      return "mpi";
    case ExchangeKind::nccl:
      return "nccl";
  }
  return "?";
}

}  // namespace distzo
