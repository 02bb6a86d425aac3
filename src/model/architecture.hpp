#pragma once
// The architecture table: what distinguishes OPT, Llama and Gemma 3, as data. Each
// architecture lists its tensors (Hugging Face names, shapes, roles, groups,
// weight-decay flags) in canonical order, and supplies the three functions
// of its forward pass: embed, one block, final norm. Everything else — the
// registry and its stable ids, the walk, the engine, placement, the mesh,
// checkpoints and digests — is shared and never asks which architecture
// it runs.

#include <vector>

#include "core/types.hpp"
#include "model/model_config.hpp"
#include "model/parameter_registry.hpp"

namespace distzo::model {

class WeightView;
struct ForwardScratch;

/// Shapes the tables share (C hidden, F ffn/intermediate, V vocabulary).
namespace shapes {
inline std::vector<std::int64_t> hidden(const ModelConfig& c) { return {c.hidden_size}; }
inline std::vector<std::int64_t> ffn(const ModelConfig& c) { return {c.ffn_dim}; }
inline std::vector<std::int64_t> ffn_by_hidden(const ModelConfig& c) {
  return {c.ffn_dim, c.hidden_size};
}
inline std::vector<std::int64_t> hidden_by_ffn(const ModelConfig& c) {
  return {c.hidden_size, c.ffn_dim};
}
}  // namespace shapes

/// One tensor of the table. `name` is the Hugging Face state-dict key, with
/// "{k}" standing for the layer index in block tensors.
struct TensorSpec {
  ParameterRole role;
  ParameterGroup group;
  const char* name;
  std::vector<std::int64_t> (*shape)(const ModelConfig&);
  bool weight_decay;                    // MeZO: no decay on biases and norm weights
  bool (*present)(const ModelConfig&);  // nullptr: always present
};

/// h (N, C) from the token ids (and the positions of the mask).
using EmbedFn = void (*)(const ModelConfig&, ForwardScratch&, const ExecSpace&,
                         const WeightView& edge, ConstIntMat tokens, ConstIntMat mask,
                         const Mat& h);
/// Decoder layer `layer` applied to h (N, C) in place (the index says which
/// kind of layer it is where the kinds alternate: Gemma 3).
using BlockFn = void (*)(const ModelConfig&, ForwardScratch&, const ExecSpace&,
                         const WeightView& block, int layer, ConstIntMat mask, const Mat& h);
/// The final hidden state (N, E) from h: the final norm (and OPT's
/// project_out); may alias h or the scratch.
using FinalHiddenFn = Mat (*)(const ModelConfig&, ForwardScratch&, const ExecSpace&,
                              const WeightView& edge, const Mat& h);

struct ArchitectureSpec {
  Architecture id;
  const char* display_name;  // "OPT", "Llama", "Qwen2", ..., "Gemma 3"
  const char* hf_class;      // "OPTForCausalLM", "LlamaForCausalLM", ..., "Gemma3ForCausalLM"
  std::vector<TensorSpec> tensors;  // embeddings, then one block's (for every k), then the head
  bool gated_mlp;                   // the MLP needs a second (N, F) buffer (SwiGLU, GeGLU)
  int rotary_bases;                 // rotary position embeddings: cos/sin tables (N, hd/2) for
                                    // 0 (OPT), 1 (Llama) or 2 (Gemma 3: global, local) bases
  EmbedFn embed;
  BlockFn block;
  FinalHiddenFn final_hidden;
};

const ArchitectureSpec& architecture_spec(Architecture a);

/// The entries of the table: OPT (model/opt_architecture.cpp), the Llama
/// family (model/llama_architecture.cpp: one tensor list and block whose
/// variants the config's fields select — qkv_bias, qk_norm, sliding_window)
/// and Gemma 3 (model/gemma3_architecture.cpp).
const ArchitectureSpec& opt_architecture();
/// The Llama family's entry for `a` (llama, qwen2, qwen3, mistral).
const ArchitectureSpec& llama_family_architecture(Architecture a);
const ArchitectureSpec& gemma3_architecture();

}  // namespace distzo::model
