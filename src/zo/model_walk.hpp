#pragma once
// The one walk (DESIGN.md invariant 5): embeddings, then blocks 0..L-1, then
// the head. Every pass over the model — a ZO step, an evaluation, a flush,
// the golden test, the benchmarks — is a WalkPass that this walk drives; no
// one else writes the loop. Placement lives underneath: the walk acquires
// each block from the block streamer (resident, or uploaded into a device
// slot) and releases it, saying whether the pass changed θ_k, so the
// streamer knows to write it back.

#include <functional>

#include "core/types.hpp"
#include "model/forward.hpp"
#include "model/weights.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/theta_table.hpp"
#include "zo/float_theta.hpp"

namespace distzo::zo {

/// What a pass does at each group. Work is enqueued on `space`, the
/// streamer's compute instance; θ's tensors are device Views by parameter
/// id, as stored (float32 or 2-byte words: runtime/theta_table.hpp).
class WalkPass {
 public:
  virtual ~WalkPass() = default;
  /// The pass touches only this rank's slice of each block's θ (a sliced
  /// store's update and perturbation): the streamer moves only that slice.
  virtual bool own_slices() const { return false; }
  /// Before any block; `edges` holds the embeddings and the head.
  virtual void embeddings(const ExecSpace& space, const runtime::ThetaTable& edges) = 0;
  /// Block k at θ_k. Returns true when the pass changed θ_k.
  virtual bool block(const ExecSpace& space, int k, const runtime::ThetaTable& theta) = 0;
  /// After the last block.
  virtual void head(const ExecSpace& space, const runtime::ThetaTable& edges) = 0;
};

/// Runs `pass` over the model; returns when everything is enqueued and the
/// host master is current (write-backs done). Loss sums may still be in
/// flight on the compute instance: fence it before reading them.
void walk(runtime::BlockStreamer& streamer, WalkPass& pass);

/// The plain forward pass at θ: embed → every block → final hidden state.
/// An observer sees h after each stage (stage -1: the embeddings, k: block k,
/// L: the final hidden state), for the golden test and the benchmarks.
class ForwardPass final : public WalkPass {
 public:
  using Observer = std::function<void(int stage, const Mat& h)>;

  /// `h` (B*T, C) receives the hidden states; `forward` owns the scratch;
  /// θ is read as floats through `theta` (decoded there if stored in 2 bytes).
  ForwardPass(model::DecoderForward& forward, FloatTheta& theta, const Mat& h, ConstIntMat tokens,
              ConstIntMat mask, Observer observer = Observer());

  void embeddings(const ExecSpace& space, const runtime::ThetaTable& edges) override;
  bool block(const ExecSpace& space, int k, const runtime::ThetaTable& theta) override;
  void head(const ExecSpace& space, const runtime::ThetaTable& edges) override;

  /// (B*T, E) after the walk; aliases the forward's scratch or `h`.
  const Mat& final_hidden() const { return final_hidden_; }
  /// The edges' tensors the walk used (by id), for the loss head after it.
  const model::GroupTensors& edges() const { return edges_; }

 private:
  model::DecoderForward& forward_;
  FloatTheta& theta_;
  const model::ParameterRegistry& registry_;
  model::GroupTensors edges_;
  Mat h_;
  ConstIntMat tokens_, mask_;
  Observer observer_;
  Mat final_hidden_;
};

}  // namespace distzo::zo
