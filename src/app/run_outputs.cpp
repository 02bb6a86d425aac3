#include "app/run_outputs.hpp"

#include "core/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

namespace distzo::app {

namespace {

/// Opens `path` for appending after keeping its header and the rows whose
/// first column (the step) is <= keep_through; a fresh run (-1) truncates.
std::ofstream open_csv(const std::string& path, const std::string& header,
                       std::int64_t keep_through) {
  std::vector<std::string> kept;
  if (keep_through >= 0) {
    std::ifstream in(path);
    std::string line;
    std::int64_t number = 0;
    while (std::getline(in, line)) {
      if (++number == 1 || line.empty()) continue;  // the header; blank lines carry nothing
      const std::string step = line.substr(0, line.find(','));
      char* end = nullptr;
      const long long value = std::strtoll(step.c_str(), &end, 10);
      DISTZO_INPUT_REQUIRE(!step.empty() && end == step.c_str() + step.size(),
                           path << ":" << number << ": expected a row starting with its step, found \""
                                << line.substr(0, 60)
                                << "\" (fix or remove the line; the run appends to this file)");
      if (value <= keep_through) kept.push_back(line);
    }
  }
  std::ofstream out(path, std::ios::trunc);
  DISTZO_REQUIRE(out.good(), "cannot write '" << path << "'");
  out << header << "\n";
  for (const auto& l : kept) out << l << "\n";
  out.flush();
  return out;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

RunOutputs::RunOutputs(const std::string& dir, bool active, std::int64_t resume_step)
    : active_(active) {
  if (!active_) return;
  metrics_ = open_csv(dir + "/metrics.csv",
                      "step,loss,loss_plus,loss_minus,g,lr,tokens,step_seconds,tokens_per_s,skipped",
                      resume_step);
  eval_ = open_csv(dir + "/eval.csv", "step,eval_loss,accuracy,examples", resume_step);
  log_.open(dir + "/run.log", resume_step >= 0 ? std::ios::app : std::ios::trunc);
  DISTZO_REQUIRE(log_.good(), "cannot write '" << dir << "/run.log'");
}

void RunOutputs::step(const StepRow& r) {
  if (!active_) return;
  const double tps = r.step_seconds > 0 ? static_cast<double>(r.tokens) / r.step_seconds : 0.0;
  metrics_ << r.step << "," << fmt(r.loss) << "," << fmt(r.loss_plus) << "," << fmt(r.loss_minus)
           << "," << fmt(r.g) << "," << fmt(r.lr) << "," << r.tokens << "," << fmt(r.step_seconds)
           << "," << fmt(tps) << "," << (r.skipped ? 1 : 0) << "\n";
  metrics_.flush();  // a killed job keeps every finished step
}

void RunOutputs::eval(const EvalRow& r) {
  if (!active_) return;
  eval_ << r.step << "," << fmt(r.loss) << "," << (r.accuracy >= 0 ? fmt(r.accuracy) : "") << ","
        << r.examples << "\n";
  eval_.flush();
}

void RunOutputs::print(const std::string& line) {
  if (!active_) return;
  std::cout << line << std::endl;
  log(line);
}

void RunOutputs::log(const std::string& line) {
  if (!active_) return;
  log_ << line << "\n";
  log_.flush();
}

}  // namespace distzo::app
