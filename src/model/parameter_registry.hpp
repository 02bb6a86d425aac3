#pragma once
// The canonical list of a model's parameters: Hugging Face names, shapes,
// stable ids and grouping, built from the architecture table
// (model/architecture.hpp). A parameter's id is its index in this list, which
// depends only on the config, never on file order or traversal order, so the
// perturbation z(seed, step, query, id, element) is the same wherever and in
// whatever order a tensor is visited (DESIGN.md invariant 1).

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace distzo::model {

/// Where a parameter lives in the forward pass. Blocks stream one at a time;
/// embeddings run before them, the head after.
enum class ParameterGroup { embeddings, block, head };

/// What a tensor is inside its group, so code never matches on names. Roles
/// are shared by the architectures where the tensors do the same job (the
/// norm before attention is attn_norm in OPT and Llama alike).
enum class ParameterRole {
  embed_tokens,       // (V, E), also the LM head when tied
  embed_positions,    // OPT: (max_pos + 2, C)
  project_in,         // OPT: (C, E)
  project_out,        // OPT: (E, C)
  final_norm_weight,  // (C)
  final_norm_bias,    // OPT: (C)
  lm_head,            // (V, C) when not tied
  q_weight,
  q_bias,
  k_weight,
  k_bias,
  v_weight,
  v_bias,
  out_weight,
  out_bias,
  attn_norm_weight,
  attn_norm_bias,
  fc1_weight,
  fc1_bias,
  fc2_weight,
  fc2_bias,  // OPT's MLP
  gate_weight,
  gate_bias,
  up_weight,
  up_bias,
  down_weight,
  down_bias,  // Llama's SwiGLU MLP
  ffn_norm_weight,
  ffn_norm_bias,
  q_norm_weight,
  k_norm_weight,  // Qwen3, Gemma 3: (hd), RMSNorm of each q and k head
  attn_post_norm_weight,
  ffn_post_norm_weight,  // Gemma 3: (C), the norms after attention and MLP
};
constexpr std::size_t kParameterRoleCount =
    static_cast<std::size_t>(ParameterRole::ffn_post_norm_weight) + 1;

/// One group of the walk: the embeddings, block `block`, or the head.
struct GroupRef {
  ParameterGroup kind = ParameterGroup::embeddings;
  int block = -1;  // kind == block only

  static GroupRef embeddings() { return {ParameterGroup::embeddings, -1}; }
  static GroupRef head() { return {ParameterGroup::head, -1}; }
  static GroupRef of_block(int k) { return {ParameterGroup::block, k}; }
  /// "embeddings", "block 3", "head".
  std::string name() const;
};

struct ParameterInfo {
  std::uint32_t id = 0;
  std::string name;                 // Hugging Face state-dict key
  std::vector<std::int64_t> shape;  // PyTorch shape, row-major
  ParameterGroup group = ParameterGroup::block;
  ParameterRole role = ParameterRole::q_weight;
  int block = -1;            // layer index for group == block, else -1
  bool weight_decay = true;  // MeZO: no decay on biases and norm weights

  std::int64_t numel() const;
};

class ParameterRegistry {
 public:
  /// The parameters of `config`'s architecture, in the table's order.
  static ParameterRegistry for_model(const ModelConfig& config);

  Architecture architecture() const { return architecture_; }

  const std::vector<ParameterInfo>& parameters() const { return parameters_; }
  const ParameterInfo& operator[](std::uint32_t id) const { return parameters_.at(id); }
  std::size_t size() const { return parameters_.size(); }
  int num_blocks() const { return static_cast<int>(block_ids_.size()); }

  /// Ids of the parameters of one group, in canonical order.
  const std::vector<std::uint32_t>& block_ids(int block) const { return block_ids_.at(block); }
  const std::vector<std::uint32_t>& embedding_ids() const { return embedding_ids_; }
  const std::vector<std::uint32_t>& head_ids() const { return head_ids_; }

  /// The groups in walk order: embeddings, blocks 0..L-1, head. A group's
  /// ids are consecutive, and the groups in this order run through every id
  /// once, in canonical order.
  std::vector<GroupRef> groups() const;
  const std::vector<std::uint32_t>& ids(GroupRef group) const;

  /// Id of the parameter with this role (block = -1 outside blocks); throws if absent.
  std::uint32_t id_of(ParameterRole role, int block = -1) const;
  /// Id for a Hugging Face name, or throws naming the closest expectation.
  std::uint32_t id_of(const std::string& name) const;
  bool contains(const std::string& name) const;

  std::int64_t total_elements() const;

 private:
  void add(std::string name, std::vector<std::int64_t> shape, ParameterGroup group,
           ParameterRole role, int block, bool weight_decay);

  Architecture architecture_ = Architecture::opt;
  std::vector<ParameterInfo> parameters_;
  std::vector<std::vector<std::uint32_t>> block_ids_;
  std::vector<std::uint32_t> embedding_ids_;
  std::vector<std::uint32_t> head_ids_;
};

/// "(768, 3072)" — for error messages and tables.
std::string format_shape(const std::vector<std::int64_t>& shape);

}  // namespace distzo::model
