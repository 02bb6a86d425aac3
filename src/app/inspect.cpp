#include "app/inspect.hpp"

#include "app/format.hpp"

#include "core/digest.hpp"
#include "io/checkpoint.hpp"
#include "io/model_file.hpp"

#include <cstdio>
#include <iomanip>

namespace distzo::app {

namespace {
const char* group_name(const model::ParameterInfo& p) {
  switch (p.group) {
    case model::ParameterGroup::embeddings: return "embeddings";
    case model::ParameterGroup::head: return "head";
    case model::ParameterGroup::block: break;
  }
  return "block";
}

/// How the run that wrote a checkpoint stored θ.
std::string storage_line(const io::TrainingState& state) {
  std::string line = std::string("storage       θ held in ") + to_string(state.storage);
  if (state.storage != StorageDtype::fp32)
    line += std::string(", updates rounded ") +
            (state.rounding == Rounding::stochastic ? "stochastically" : "to nearest");
  return line + " (the datasets hold its values as float32)\n";
}

}  // namespace

void inspect(const std::string& path, bool digest_only, std::ostream& out) {
  // Tensors are read from the file on the host only: inspecting a model
  // never allocates in the execution space.
  const io::ModelReader reader(path);
  if (digest_only) {
    out << reader.digest() << "\n";
    return;
  }
  const io::ModelInfo& m = reader.info();
  const auto& c = m.config;
  const std::int64_t params = m.registry.total_elements();
  out << "file          " << path << " (" << m.kind << ", format " << io::kModelFormatVersion
      << ")\n"
      << "architecture  " << model::describe(c, "\n              ") << "\n"
      << "parameters    " << params << " in " << m.registry.size() << " tensors, "
      << human_bytes(4.0 * static_cast<double>(params)) << " as float32\n"
      << (m.kind == "checkpoint" ? storage_line(io::read_training_state(path)) : std::string())
      << "digest        version " << kDigestVersion << " (--digest); the writer recorded "
      << (m.digest_version > 0 ? "version " + std::to_string(m.digest_version)
                               : std::string("none (an older distzo, or tools/distzo_h5.py)"))
      << "\n\n";
  out << std::left << std::setw(5) << "id" << std::setw(52) << "name" << std::setw(14) << "shape"
      << std::setw(12) << "elements" << "group\n";
  for (const auto& p : m.registry.parameters()) {
    out << std::left << std::setw(5) << p.id << std::setw(52) << p.name << std::setw(14)
        << model::format_shape(p.shape) << std::setw(12) << p.numel() << group_name(p);
    if (p.block >= 0) out << " " << p.block;
    out << "\n";
  }
}

}  // namespace distzo::app
