#include "model/parameter_registry.hpp"

#include "core/error.hpp"

#include <sstream>

namespace distzo::model {

std::int64_t ParameterInfo::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape)
    DISTZO_INPUT_REQUIRE(!__builtin_mul_overflow(n, d, &n),
                         "tensor " << name << " of shape " << format_shape(shape)
                                   << ": its element count overflows 64 bits");
  return n;
}

std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

void ParameterRegistry::add(std::string name, std::vector<std::int64_t> shape,
                            ParameterGroup group, ParameterRole role, int block,
                            bool weight_decay) {
  ParameterInfo info;
  info.id = static_cast<std::uint32_t>(parameters_.size());
  info.name = std::move(name);
  info.shape = std::move(shape);
  info.group = group;
  info.role = role;
  info.block = block;
  info.weight_decay = weight_decay;
  switch (group) {
    case ParameterGroup::embeddings: embedding_ids_.push_back(info.id); break;
    case ParameterGroup::block: block_ids_.at(block).push_back(info.id); break;
    case ParameterGroup::head: head_ids_.push_back(info.id); break;
  }
  parameters_.push_back(std::move(info));
}

ParameterRegistry ParameterRegistry::for_opt(const OptConfig& config) {
  config.validate();
  const std::int64_t C = config.hidden_size;
  const std::int64_t E = config.word_embed_proj_dim;
  const std::int64_t F = config.ffn_dim;
  const std::string decoder = "model.decoder.";
  using G = ParameterGroup;
  using R = ParameterRole;
  constexpr bool decay = true;
  constexpr bool no_decay = false;

  ParameterRegistry r;
  r.block_ids_.resize(static_cast<std::size_t>(config.num_hidden_layers));
  // Token embeddings are decayed as in MeZO (only biases and norms are exempt);
  // the tied LM head is this same tensor and is not listed again.
  r.add(decoder + "embed_tokens.weight", {config.vocab_size, E}, G::embeddings, R::embed_tokens, -1, decay);
  r.add(decoder + "embed_positions.weight",
        {config.max_position_embeddings + OptConfig::kPositionOffset, C}, G::embeddings,
        R::embed_positions, -1, decay);
  if (config.has_projection())
    r.add(decoder + "project_in.weight", {C, E}, G::embeddings, R::project_in, -1, decay);

  for (int k = 0; k < static_cast<int>(config.num_hidden_layers); ++k) {
    const std::string p = decoder + "layers." + std::to_string(k) + ".";
    r.add(p + "self_attn.q_proj.weight", {C, C}, G::block, R::q_weight, k, decay);
    r.add(p + "self_attn.q_proj.bias", {C}, G::block, R::q_bias, k, no_decay);
    r.add(p + "self_attn.k_proj.weight", {C, C}, G::block, R::k_weight, k, decay);
    r.add(p + "self_attn.k_proj.bias", {C}, G::block, R::k_bias, k, no_decay);
    r.add(p + "self_attn.v_proj.weight", {C, C}, G::block, R::v_weight, k, decay);
    r.add(p + "self_attn.v_proj.bias", {C}, G::block, R::v_bias, k, no_decay);
    r.add(p + "self_attn.out_proj.weight", {C, C}, G::block, R::out_weight, k, decay);
    r.add(p + "self_attn.out_proj.bias", {C}, G::block, R::out_bias, k, no_decay);
    r.add(p + "self_attn_layer_norm.weight", {C}, G::block, R::attn_norm_weight, k, no_decay);
    r.add(p + "self_attn_layer_norm.bias", {C}, G::block, R::attn_norm_bias, k, no_decay);
    r.add(p + "fc1.weight", {F, C}, G::block, R::fc1_weight, k, decay);
    r.add(p + "fc1.bias", {F}, G::block, R::fc1_bias, k, no_decay);
    r.add(p + "fc2.weight", {C, F}, G::block, R::fc2_weight, k, decay);
    r.add(p + "fc2.bias", {C}, G::block, R::fc2_bias, k, no_decay);
    r.add(p + "final_layer_norm.weight", {C}, G::block, R::ffn_norm_weight, k, no_decay);
    r.add(p + "final_layer_norm.bias", {C}, G::block, R::ffn_norm_bias, k, no_decay);
  }

  if (config.has_final_layer_norm()) {
    r.add(decoder + "final_layer_norm.weight", {C}, G::head, R::final_norm_weight, -1, no_decay);
    r.add(decoder + "final_layer_norm.bias", {C}, G::head, R::final_norm_bias, -1, no_decay);
  }
  if (config.has_projection())
    r.add(decoder + "project_out.weight", {E, C}, G::head, R::project_out, -1, decay);
  return r;
}

std::uint32_t ParameterRegistry::id_of(ParameterRole role, int block) const {
  const std::vector<std::uint32_t>* ids = nullptr;
  if (block >= 0) {
    ids = &block_ids_.at(block);
  }
  if (ids) {
    for (std::uint32_t id : *ids)
      if (parameters_[id].role == role) return id;
  } else {
    for (const auto& p : parameters_)
      if (p.role == role && p.block < 0) return p.id;
  }
  DISTZO_FAIL("parameter registry: no parameter with role " << static_cast<int>(role)
                                                            << " in block " << block);
}

bool ParameterRegistry::contains(const std::string& name) const {
  for (const auto& p : parameters_)
    if (p.name == name) return true;
  return false;
}

std::uint32_t ParameterRegistry::id_of(const std::string& name) const {
  for (const auto& p : parameters_)
    if (p.name == name) return p.id;
  DISTZO_FAIL("parameter registry: '" << name << "' is not a parameter of this OPT model "
                                      << "(expected names like '" << parameters_.front().name
                                      << "')");
}

std::string GroupRef::name() const {
  switch (kind) {
    case ParameterGroup::embeddings: return "embeddings";
    case ParameterGroup::head: return "head";
    case ParameterGroup::block: break;
  }
  return "block " + std::to_string(block);
}

std::vector<GroupRef> ParameterRegistry::groups() const {
  std::vector<GroupRef> out{GroupRef::embeddings()};
  for (int k = 0; k < num_blocks(); ++k) out.push_back(GroupRef::of_block(k));
  out.push_back(GroupRef::head());
  return out;
}

const std::vector<std::uint32_t>& ParameterRegistry::ids(GroupRef group) const {
  switch (group.kind) {
    case ParameterGroup::embeddings: return embedding_ids_;
    case ParameterGroup::head: return head_ids_;
    case ParameterGroup::block: break;
  }
  return block_ids(group.block);
}

std::int64_t ParameterRegistry::total_elements() const {
  std::int64_t n = 0;
  for (const auto& p : parameters_)
    DISTZO_INPUT_REQUIRE(!__builtin_add_overflow(n, p.numel(), &n),
                         "the model's parameter count overflows 64 bits");
  return n;
}

}  // namespace distzo::model
