#include "zo/model_walk.hpp"

namespace distzo::zo {

void walk(runtime::BlockStreamer& streamer, WalkPass& pass) {
  const ExecSpace& space = streamer.instances().compute;
  const runtime::ThetaTable& edges = streamer.store().theta();
  streamer.begin_pass(pass.own_slices());
  pass.embeddings(space, edges);
  for (int k = 0; k < streamer.store().num_blocks(); ++k) {
    const runtime::ThetaTable& theta = streamer.acquire(k);
    const bool modified = pass.block(space, k, theta);
    streamer.release(k, modified);
  }
  pass.head(space, edges);
  streamer.end_pass();
}

ForwardPass::ForwardPass(model::DecoderForward& forward, FloatTheta& theta, const Mat& h,
                         ConstIntMat tokens, ConstIntMat mask, Observer observer)
    : forward_(forward),
      theta_(theta),
      registry_(theta.registry()),
      h_(h),
      tokens_(tokens),
      mask_(mask),
      observer_(std::move(observer)) {}

void ForwardPass::embeddings(const ExecSpace& space, const runtime::ThetaTable& edges) {
  edges_ = theta_.edges(space, edges);
  forward_.embed(space, model::make_edge_view(registry_, edges_), tokens_, mask_, h_);
  if (observer_) observer_(-1, h_);
}

bool ForwardPass::block(const ExecSpace& space, int k, const runtime::ThetaTable& theta) {
  forward_.block(space, model::make_block_view(registry_, theta_.block(space, k, theta), k), k,
                 mask_, h_);
  if (observer_) observer_(k, h_);
  return false;
}

void ForwardPass::head(const ExecSpace& space, const runtime::ThetaTable&) {
  final_hidden_ = forward_.final_hidden(space, model::make_edge_view(registry_, edges_), h_);
  if (observer_) observer_(registry_.num_blocks(), final_hidden_);
}

}  // namespace distzo::zo
