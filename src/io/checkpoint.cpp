#include "io/checkpoint.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cstdio>
#include <dirent.h>

namespace distzo::io {

std::string checkpoint_name(std::int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "ckpt-%06lld.h5", static_cast<long long>(step));
  return buf;
}

std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  DIR* d = opendir(dir.c_str());
  if (!d) return found;
  // "ckpt-<digits>.h5", padded (as distzo writes them) or not; temporary
  // files ("ckpt-000100.h5.tmp.PID") do not match.
  const std::string prefix = "ckpt-", suffix = ".h5";
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(digits), dir + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

void write_checkpoint(const std::string& path, const ModelInfo& model,
                      const TensorSource& tensors, const TrainingState& state) {
  write_atomically(path, [&](Hdf5File& file) {
    ModelInfo as_checkpoint = model;
    as_checkpoint.kind = "checkpoint";
    write_model_tensors(file, as_checkpoint, tensors);
    file.write_int_attribute("step", state.step);
    file.write_string_attribute("seed", std::to_string(state.seed));  // uint64: exact as text
    file.write_int_attribute("queries", state.queries);
    file.write_string_attribute("distribution", to_string(state.distribution));
    file.write_int_attribute("z_recipe", state.z_recipe);
    file.write_string_attribute("deck_yaml", state.deck_yaml);

    const PendingRecord& p = state.pending;
    file.write_int_attribute("pending_active", p.active ? 1 : 0);
    file.write_int_attribute("pending_step", p.step);
    file.write_double_attribute("pending_lr", p.lr);
    file.write_double_attribute("pending_weight_decay", p.weight_decay);
    if (!p.g.empty())
      file.write_doubles("distzo/pending_g", {static_cast<std::int64_t>(p.g.size())}, p.g.data());

    const auto n = static_cast<std::int64_t>(state.seed_log.size());
    std::vector<std::int64_t> steps;
    std::vector<double> lr, loss, g;
    for (const auto& e : state.seed_log) {
      steps.push_back(e.step);
      lr.push_back(e.lr);
      loss.push_back(e.loss);
      // A skipped step updates nothing: its g row is zeros.
      for (int q = 0; q < state.queries; ++q)
        g.push_back(e.g.empty() ? 0.0 : e.g.at(static_cast<std::size_t>(q)));
    }
    file.write_int64s("distzo/seed_log/step", {n}, steps.data());
    file.write_doubles("distzo/seed_log/lr", {n}, lr.data());
    file.write_doubles("distzo/seed_log/loss", {n}, loss.data());
    file.write_doubles("distzo/seed_log/g", {n, state.queries}, g.data());
  });
}

TrainingState read_training_state(const std::string& path) {
  Hdf5File file(path, Hdf5File::Mode::read);
  DISTZO_REQUIRE(file.has_attribute("distzo_format") &&
                     file.read_string_attribute("distzo_format") == "checkpoint",
                 path << " is not a distzo checkpoint (distzo_format != \"checkpoint\")");
  TrainingState s;
  s.step = file.read_int_attribute("step");
  s.seed = std::stoull(file.read_string_attribute("seed"));
  s.queries = static_cast<int>(file.read_int_attribute("queries"));
  s.distribution = parse_distribution(file.read_string_attribute("distribution"));
  s.z_recipe = file.has_attribute("z_recipe") ? static_cast<int>(file.read_int_attribute("z_recipe")) : 1;
  DISTZO_REQUIRE(s.z_recipe == 1 || s.z_recipe == 2,
                 path << ": z_recipe " << s.z_recipe << " is not a recipe this distzo knows (1, 2)");
  s.deck_yaml = file.read_string_attribute("deck_yaml");

  s.pending.active = file.read_int_attribute("pending_active") != 0;
  s.pending.step = file.read_int_attribute("pending_step");
  s.pending.lr = file.read_double_attribute("pending_lr");
  s.pending.weight_decay = file.read_double_attribute("pending_weight_decay");
  if (file.has_dataset("distzo/pending_g")) s.pending.g = file.read_doubles("distzo/pending_g");

  const std::vector<std::int64_t> steps = file.read_int64s("distzo/seed_log/step");
  const std::vector<double> lr = file.read_doubles("distzo/seed_log/lr");
  const std::vector<double> loss = file.read_doubles("distzo/seed_log/loss");
  const std::vector<double> g = file.read_doubles("distzo/seed_log/g");
  DISTZO_REQUIRE(lr.size() == steps.size() && loss.size() == steps.size() &&
                     g.size() == steps.size() * static_cast<std::size_t>(s.queries),
                 path << ": inconsistent seed log");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    SeedLogEntry e;
    e.step = steps[i];
    e.lr = lr[i];
    e.loss = loss[i];
    e.g.assign(g.begin() + static_cast<std::ptrdiff_t>(i * s.queries),
               g.begin() + static_cast<std::ptrdiff_t>((i + 1) * s.queries));
    s.seed_log.push_back(std::move(e));
  }
  return s;
}

}  // namespace distzo::io
