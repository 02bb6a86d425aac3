#include "model/parameter_registry.hpp"

#include <sstream>

#include "core/error.hpp"
#include "model/architecture.hpp"

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

void ParameterRegistry::add(std::string name, std::vector<std::int64_t> shape, ParameterGroup group,
                            ParameterRole role, int block, bool weight_decay) {
  ParameterInfo info;
  info.id = static_cast<std::uint32_t>(parameters_.size());
  info.name = std::move(name);
  info.shape = std::move(shape);
  info.group = group;
  info.role = role;
  info.block = block;
  info.weight_decay = weight_decay;
  switch (group) {
    case ParameterGroup::embeddings:
      embedding_ids_.push_back(info.id);
      break;
    case ParameterGroup::block:
      block_ids_.at(block).push_back(info.id);
      break;
    case ParameterGroup::head:
      head_ids_.push_back(info.id);
      break;
  }
  parameters_.push_back(std::move(info));
}

ParameterRegistry ParameterRegistry::for_model(const ModelConfig& config) {
  config.validate();
  const ArchitectureSpec& arch = architecture_spec(config.architecture);
  ParameterRegistry r;
  r.architecture_ = config.architecture;
  r.block_ids_.resize(static_cast<std::size_t>(config.num_hidden_layers));
  auto add_group = [&](ParameterGroup group, int block) {
    for (const TensorSpec& t : arch.tensors) {
      if (t.group != group || (t.present && !t.present(config))) continue;
      std::string name = t.name;
      const std::size_t at = name.find("{k}");
      if (at != std::string::npos) name.replace(at, 3, std::to_string(block));
      r.add(std::move(name), t.shape(config), group, t.role, block, t.weight_decay);
    }
  };
  add_group(ParameterGroup::embeddings, -1);
  for (int k = 0; k < static_cast<int>(config.num_hidden_layers); ++k)
    add_group(ParameterGroup::block, k);
  add_group(ParameterGroup::head, -1);
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
  DISTZO_FAIL("parameter registry: '" << name << "' is not a parameter of this "
                                      << architecture_spec(architecture_).display_name << " model "
                                      << "(expected names like '" << parameters_.front().name
                                      << "')");
}

std::string GroupRef::name() const {
  switch (kind) {
    case ParameterGroup::embeddings:
      return "embeddings";
    case ParameterGroup::head:
      return "head";
    case ParameterGroup::block:
      break;
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
    case ParameterGroup::embeddings:
      return embedding_ids_;
    case ParameterGroup::head:
      return head_ids_;
    case ParameterGroup::block:
      break;
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
