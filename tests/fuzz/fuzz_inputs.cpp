// distzo_fuzz: mutates distzo's inputs (model, dataset and checkpoint files,
// decks) and runs distzo on each, under a timeout and an address-space
// limit, keeping every crash, sanitizer report, hang or internal error as a
// reproducer (docs/fuzzing.md). Also replays the committed reproducers
// (tests/data/fuzz_regressions/).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "child.hpp"
#include "corpus.hpp"
#include "findings.hpp"
#include "random.hpp"

namespace {

using namespace distzo::fuzz;

const char* const kUsage =
    "usage: distzo_fuzz --distzo PATH --seeds-dir tests/data --out DIR\n"
    "                   (--seconds N | --executions N) [--seed S] [--timeout-s T]\n"
    "                   [--memory-mib M] [--targets model,dataset,checkpoint,deck]\n"
    "                   [--max-findings N]\n"
    "       distzo_fuzz --distzo PATH --replay tests/data/fuzz_regressions --out DIR\n"
    "                   [--timeout-s T] [--memory-mib M]\n"
    "Fuzzes for N seconds or N executions (whichever ends first), or replays\n"
    "committed reproducers. Exit status 1 if anything was found (or a replayed\n"
    "reproducer still fails), 0 if not, 2 for a usage error.\n"
    "  --memory-mib M  the memory of each distzo process (default 2048, 0 = no\n"
    "                  limit): its address space, or under AddressSanitizer (which\n"
    "                  reserves terabytes of it) ASan's soft_rss_limit_mb\n";

[[noreturn]] void usage_error(const std::string& what) {
  std::cerr << "distzo_fuzz: " << what << "\n\n" << kUsage;
  std::exit(2);
}

bool under_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return std::getenv("ASAN_OPTIONS") != nullptr;  // a sanitized distzo run from a plain harness
#endif
}

struct Options {
  std::string distzo, seeds_dir, out, replay;
  double seconds = 0;
  std::uint64_t executions = 0, seed = 1;
  std::size_t max_findings = 100;
  Limits limits;
  std::vector<Target> targets = all_targets();
};

std::uint64_t number(const std::string& option, const std::string& value) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || value[0] == '-')
    usage_error(option + " expects a non-negative integer, got '" + value + "'");
  return n;
}

Options parse(int argc, char** argv) {
  Options o;
  o.limits.memory_mib = 2048;
  o.limits.limit_rss_by_asan = under_address_sanitizer();
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--help" || option == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error(option + ": a value expected");
    const std::string value = argv[++i];
    if (option == "--distzo")
      o.distzo = value;
    else if (option == "--seeds-dir")
      o.seeds_dir = value;
    else if (option == "--out")
      o.out = value;
    else if (option == "--replay")
      o.replay = value;
    else if (option == "--seconds")
      o.seconds = static_cast<double>(number(option, value));
    else if (option == "--executions")
      o.executions = number(option, value);
    else if (option == "--seed")
      o.seed = number(option, value);
    else if (option == "--timeout-s")
      o.limits.timeout_s = static_cast<double>(number(option, value));
    else if (option == "--memory-mib")
      o.limits.memory_mib = number(option, value);
    else if (option == "--max-findings")
      o.max_findings = number(option, value);
    else if (option == "--targets") {
      o.targets.clear();
      std::istringstream names(value);
      for (std::string n; std::getline(names, n, ',');) o.targets.push_back(target_named(n));
      if (o.targets.empty()) usage_error("--targets: at least one target");
    } else
      usage_error("unknown option '" + option + "'");
  }
  if (o.distzo.empty() || o.out.empty()) usage_error("--distzo and --out are required");
  if (!o.replay.empty() && !fs::is_directory(o.replay))
    usage_error("--replay: no directory " + o.replay);
  if (o.replay.empty() && !fs::is_directory(o.seeds_dir))
    usage_error("--seeds-dir: no directory '" + o.seeds_dir + "' (tests/data)");
  if (o.replay.empty() && o.seconds <= 0 && o.executions == 0)
    usage_error("give --seconds or --executions");
  if (o.limits.timeout_s <= 0) usage_error("--timeout-s must be at least 1");
  o.distzo = fs::absolute(o.distzo).string();
  if (!fs::exists(o.distzo)) usage_error("no distzo at " + o.distzo);
  return o;
}

struct Tally {
  std::uint64_t executions = 0, exited_0 = 0, refused = 0, findings = 0;
  std::uint64_t passed_over = 0;  // `resume: latest` runs that passed a broken checkpoint over
};

std::string command_line(const std::vector<std::string>& args) {
  std::string line = "distzo";
  for (const auto& a : args) line += " " + a;
  return line;
}

// The unmutated commands of every target must run cleanly, or each
// execution would report the harness's setup (a limit ASan cannot live
// under, a distzo that does not start) as a finding.
void check_baseline(const Options& o, const Corpus& corpus, const fs::path& work) {
  for (Target t : o.targets) {
    for (const auto& args : baseline_commands(t)) {
      fs::remove_all(work);
      copy_tree(corpus.base, work);
      const Outcome outcome = run_distzo(o.distzo, args, work.string(), o.limits,
                                         (work.parent_path() / "baseline").string());
      if (outcome.signal == 0 && !outcome.timed_out && outcome.exit_status == 0 &&
          finding(outcome, o.limits).empty())
        continue;
      std::cerr << "distzo_fuzz: `" << command_line(args) << "` fails on the unmutated " << name(t)
                << " seeds (in " << work.string() << "): " << finding(outcome, o.limits)
                << " exit status " << outcome.exit_status << "\n"
                << outcome.stderr_text.substr(0, 4000) << "\n"
                << "Nothing is fuzzed until it passes. (A distzo built with AddressSanitizer "
                   "cannot start under\n"
                   "an address-space limit: set ASAN_OPTIONS, as scripts/test-sanitized.sh does, "
                   "and the limit\n"
                   "becomes ASan's soft_rss_limit_mb.)\n";
      std::exit(2);
    }
  }
}

int fuzz(const Options& o) {
  const fs::path out = fs::absolute(o.out);
  for (const char* scratch : {"corpus", "case", "work", "logs"}) fs::remove_all(out / scratch);
  fs::create_directories(out / "logs");
  const Corpus corpus = make_corpus(o.distzo, o.seeds_dir, out / "corpus", o.limits);
  const fs::path case_dir = out / "case", work = out / "work", log = out / "logs" / "last";
  check_baseline(o, corpus, work);
  Findings findings(out / "findings", o.distzo, o.limits, o.max_findings);

  std::string target_names;
  for (Target t : o.targets) target_names += (target_names.empty() ? "" : ",") + name(t);
  std::cout << "distzo_fuzz: seed " << o.seed << ", targets " << target_names << ", timeout "
            << o.limits.timeout_s << " s, "
            << (o.limits.memory_mib == 0
                    ? std::string("no memory limit")
                    : std::to_string(o.limits.memory_mib) + " MiB of " +
                          (o.limits.limit_rss_by_asan ? "RSS (ASan)" : "address space"))
            << "; findings in " << (out / "findings").string() << std::endl;

  std::map<Target, Tally> tallies;
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  double next_progress = 5;
  std::uint64_t done = 0;
  for (std::uint64_t i = 0; !stop_requested(); ++i) {
    if ((o.executions && i >= o.executions) || (o.seconds > 0 && elapsed() >= o.seconds)) break;
    const Target target = o.targets[i % o.targets.size()];
    Random rng(o.seed, i);
    fs::remove_all(case_dir);
    fs::remove_all(work);
    const Case c = make_case(target, corpus, case_dir, rng);
    copy_tree(case_dir, work);
    const Outcome outcome = run_distzo(o.distzo, c.args, work.string(), o.limits, log.string());
    if (outcome.interrupted) break;
    ++done;
    Tally& tally = tallies[target];
    ++tally.executions;
    const std::string reason = finding(c, outcome, o.limits);
    if (!reason.empty()) {
      ++tally.findings;
      const fs::path kept = findings.record(case_dir, c, outcome, reason);
      std::cout << "distzo_fuzz: finding in execution " << i << " (" << name(target) << "): `"
                << command_line(c.args) << "`: " << reason << " -> "
                << (kept.empty() ? "(like earlier ones, not kept)" : kept.string()) << std::endl;
    } else if (outcome.exit_status == 0) {
      ++tally.exited_0;
    } else {
      ++tally.refused;
    }
    if (outcome.stdout_text.find("passed over checkpoint") != std::string::npos)
      ++tally.passed_over;
    if (elapsed() >= next_progress) {
      next_progress = elapsed() + 5;
      std::printf("distzo_fuzz: %.0f s, %llu executions (%.1f/s), %zu findings\n", elapsed(),
                  static_cast<unsigned long long>(done), done / elapsed(), findings.count());
      std::fflush(stdout);
    }
  }

  std::printf("distzo_fuzz: %llu executions in %.0f s (%.1f/s), seed %llu: %zu findings%s\n",
              static_cast<unsigned long long>(done), elapsed(), done / std::max(elapsed(), 1e-9),
              static_cast<unsigned long long>(o.seed), findings.count(),
              stop_requested() ? " (interrupted)" : "");
  for (Target t : o.targets) {
    const Tally& n = tallies[t];
    std::printf("  %-10s %6llu executions: %llu exit 0, %llu refused with an error, %llu findings",
                name(t).c_str(), static_cast<unsigned long long>(n.executions),
                static_cast<unsigned long long>(n.exited_0),
                static_cast<unsigned long long>(n.refused),
                static_cast<unsigned long long>(n.findings));
    if (t == Target::checkpoint)
      std::printf("; resume: latest passed a broken checkpoint over %llu times",
                  static_cast<unsigned long long>(n.passed_over));
    std::printf("\n");
  }
  for (const auto& [kind, n] : findings.kinds()) std::printf("  %zu x %s\n", n, kind.c_str());
  return findings.count() > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  install_stop_handlers();
  if (!o.replay.empty()) {
    const fs::path out = fs::absolute(o.out);
    fs::create_directories(out);
    return replay_regressions(o.distzo, o.replay, out / "replay_work", o.limits) > 0 ? 1 : 0;
  }
  return fuzz(o);
}
