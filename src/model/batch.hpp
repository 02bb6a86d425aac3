#pragma once
// One micro-batch on the device, as the forward pass and the losses consume
// it. model::BatchBuilder (model/batch_builder.hpp) fills it from a dataset in
// host memory; the engine never sees files.

#include <cstdint>

#include "core/types.hpp"

namespace distzo::model {

/// What the loss is computed on.
///   causal_lm:      next-token cross-entropy on marked target positions;
///   classification: cross-entropy over the candidate label words, predicted
///                   at the last prompt token (MeZO's "train as classification").
enum class Task { causal_lm, classification };

/// How many positions a micro-batch runs at (data.batch_width).
///   full:    the dataset's T, every batch (runs before trimming existed);
///   trimmed: the batch's longest example (at most T). Padding positions past every example's
///   length
///            change no real position's result (attention is causal and the
///            padding comes last), so trimming removes work, not information;
///            the bits of a trimmed batch are those of its width, not T's.
enum class BatchWidth { full, trimmed };
/// "full" | "trimmed" (the spelling of decks and checkpoints).
inline const char* to_string(BatchWidth width) {
  return width == BatchWidth::full ? "full" : "trimmed";
}

// No rounding of the width: on the 2-core Xeon of perf/RESULTS.md a SmolLM2
// forward's time grows linearly with it (25 to 36 positions, every width;
// 27 costs 570 ms, 32 costs 690 ms), with no step at multiples of 8.

/// The widest shape every micro-batch of a run fits: what the engine, the
/// loss head and the planner size their buffers for.
struct BatchShape {
  Task task = Task::causal_lm;
  int micro_batch = 0;  // B
  int seq_len = 0;      // T
  int candidates = 0;   // K label words (classification); 0 for causal LM
};

/// One micro-batch of B rows x T positions in device memory (T: this
/// batch's width, at most the BatchShape's). Rows past
/// `num_examples` are padding: pad tokens, mask 0, targets and gold -100
/// (kernels::kIgnoreIndex), so every loss kernel skips them.
struct Batch {
  Task task = Task::causal_lm;
  int micro_batch = 0;  // B
  int seq_len = 0;      // T

  IntMat tokens;      // (B, T) token ids, pad_token_id after each length
  IntMat mask;        // (B, T) 1 for t < length, else 0
  IntVec targets;     // (B*T) causal_lm: targets[b*T+t] = tokens[b, t+1] if token t+1 is a
                      //       target, else -100 (position t predicts t+1). Empty otherwise.
  IntVec rows;        // (B) classification: b*T + length-1, the row of the flattened (B*T, C)
                      //     hidden states that predicts the label; b*T for padding rows.
  IntVec gold;        // (B) classification: label in [0, K), -100 for padding rows.
  IntVec candidates;  // (K) classification: label-word token ids (constant).

  // Host-side counts for this fill (no device read needed).
  std::int64_t num_examples = 0;  // real rows, <= B
  std::int64_t num_tokens = 0;    // sum of lengths of the real rows
  std::int64_t num_targets = 0;   // positions the loss counts: targets != -100
                                  // (causal_lm) or real rows (classification)
};

}  // namespace distzo::model
