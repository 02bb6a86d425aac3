#include "findings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace distzo::fuzz {

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string last_bytes(const std::string& text, std::size_t n) {
  return text.size() > n ? text.substr(text.size() - n) : text;
}

// The first function of a backtrace (UCX's "N  LIB(FUNCTION+0x..)" on a
// crash, gdb's "#N 0x.. in FUNCTION (" on a hang) that is not the C
// library's or UCX's signal handling: where it crashed or spins.
std::string first_frame(const std::string& backtrace) {
  const std::size_t main_thread = backtrace.find("\nThread 1 ");  // gdb lists it last
  std::istringstream lines(backtrace.substr(main_thread == std::string::npos ? 0 : main_thread));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("libc.so") != std::string::npos || line.find("libucs") != std::string::npos)
      continue;
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    std::string function;
    if (line[start] == '#' && line.find(" in ") != std::string::npos) {
      function = line.substr(line.find(" in ") + 4);
    } else if (std::isdigit(static_cast<unsigned char>(line[start])) &&
               line.find("+0x") != std::string::npos) {
      function = line.substr(line.find('(') + 1);
      function = function.substr(0, function.find('+'));
    }
    for (std::size_t at; (at = function.find("(anonymous namespace)")) != std::string::npos;)
      function.erase(at, 21);
    function = function.substr(0, function.find_first_of("( "));
    if (!function.empty() && function != "??") return function;
  }
  return "";
}

// The line of stderr that tells this finding from others (a sanitizer's
// SUMMARY, the UBSan check, the internal error's message, else the first
// frame of a backtrace) with its numbers blanked, so that addresses and
// sizes do not make every report a new kind.
std::string kind_of(const Case& c, const Outcome& o, const std::string& reason) {
  std::string naming;
  std::istringstream lines(o.stderr_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("SUMMARY: ", 0) == 0 || line.find("runtime error:") != std::string::npos ||
        line.find("internal error") != std::string::npos) {
      naming = line;
      break;
    }
  }
  std::string blanked;
  for (char ch : naming.substr(0, 200)) {
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      if (blanked.empty() || blanked.back() != 'N') blanked += 'N';
    } else {
      blanked += ch;
    }
  }
  if (blanked.empty()) blanked = first_frame(o.timed_out ? o.hang_backtrace : o.stderr_text);
  return reason + " | distzo " + c.args.front() + (blanked.empty() ? "" : " | " + blanked);
}

std::string shell_quoted(const std::string& word) {
  std::string quoted = "'";
  for (char ch : word) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

std::string repro_script(const std::string& distzo, const Case& c, const Limits& limits,
                         const std::string& reason) {
  std::ostringstream sh;
  sh << "#!/usr/bin/env bash\n"
     << "# distzo_fuzz finding: " << reason << "\n"
     << "# Runs distzo as the harness did: in a copy of input/, one BLAS thread,\n"
     << "# under the same limits. Usage: repro.sh [DISTZO]; for a distzo built with\n"
     << "# AddressSanitizer, set ASAN_OPTIONS as scripts/test-sanitized.sh does.\n"
     << "set -u\n"
     << "distzo=${1:-" << shell_quoted(distzo) << "}\n"
     << "work=$(mktemp -d \"${TMPDIR:-/tmp}/distzo-repro.XXXXXX\")\n"
     << "cp -r \"$(dirname \"$0\")/input/.\" \"$work\"\n"
     << "cd \"$work\"\n"
     << "export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1\n";
  if (limits.memory_mib >
      0) {  // as the harness does it: ASan cannot start under an address-space limit
    sh << "if [ -n \"${ASAN_OPTIONS:-}\" ]; then\n"
       << "  export ASAN_OPTIONS=\"$ASAN_OPTIONS:soft_rss_limit_mb=" << limits.memory_mib << "\"\n"
       << "else\n"
       << "  ulimit -v " << limits.memory_mib * 1024 << "\n"
       << "fi\n";
  }
  sh << "timeout --signal=KILL " << limits.timeout_s << " \"$distzo\"";
  for (const auto& a : c.args) sh << " " << shell_quoted(a);
  sh << "\nstatus=$?\necho \"exit status $status (137: killed, e.g. by the timeout; files in "
        "$work)\"\n";
  return sh.str();
}

std::vector<std::string> read_args(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> args;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) args.push_back(line);
  return args;
}

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string finding(const Case& c, const Outcome& outcome, const Limits& limits) {
  const std::string reason = finding(outcome, limits);
  // A run that resumed and then failed for reasons of its own (a checkpoint's
  // huge but finite weights that make the loss overflow) is distzo behaving.
  if (reason.empty() && !c.must_pass_over.empty() && outcome.exit_status != 0 &&
      outcome.stderr_text.find(c.must_pass_over) != std::string::npos)
    return "resume: latest stopped at the damaged newest checkpoint " + c.must_pass_over +
           " instead of passing it over (exit status " + std::to_string(outcome.exit_status) + ")";
  return reason;
}

Findings::Findings(fs::path dir, std::string distzo, Limits limits, std::size_t max_kept,
                   std::size_t per_kind)
    : dir_(std::move(dir)),
      distzo_(std::move(distzo)),
      limits_(limits),
      max_kept_(max_kept),
      per_kind_(per_kind) {
  fs::create_directories(dir_);
  for (const auto& entry : fs::directory_iterator(dir_)) {  // an earlier run's findings stay
    const std::string n = entry.path().filename().string();
    if (!n.empty() && std::all_of(n.begin(), n.end(), [](char ch) {
          return std::isdigit(static_cast<unsigned char>(ch));
        }))
      next_number_ = std::max<std::size_t>(next_number_, std::stoul(n) + 1);
  }
}

fs::path Findings::record(const fs::path& case_dir, const Case& c, const Outcome& o,
                          const std::string& reason) {
  ++count_;
  const std::size_t seen = ++kinds_[kind_of(c, o, reason)];
  if (seen > per_kind_ || kept_ >= max_kept_) return {};
  ++kept_;
  char number[16];
  std::snprintf(number, sizeof number, "%03zu", next_number_++);
  const fs::path dir = dir_ / number;
  copy_tree(case_dir, dir / "input");
  std::string args;
  for (const auto& a : c.args) args += a + "\n";
  write_text(dir / "args", args);
  write_text(dir / "reason", reason + "\n");
  write_text(dir / "mutation", c.mutation);
  write_text(dir / "stderr", o.stderr_text);
  if (!o.hang_backtrace.empty()) write_text(dir / "hang_backtrace", o.hang_backtrace);
  if (!c.must_pass_over.empty()) write_text(dir / "must_pass_over", c.must_pass_over + "\n");
  write_text(dir / "repro.sh", repro_script(distzo_, c, limits_, reason));
  fs::permissions(dir / "repro.sh",
                  fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  return dir;
}

std::size_t replay_regressions(const std::string& distzo, const fs::path& dir, const fs::path& work,
                               const Limits& limits) {
  std::vector<fs::path> regressions;
  for (const auto& entry : fs::directory_iterator(dir))
    if (fs::exists(entry.path() / "args")) regressions.push_back(entry.path());
  std::sort(regressions.begin(), regressions.end());
  std::size_t failing = 0;
  for (const fs::path& regression : regressions) {
    fs::remove_all(work);
    if (fs::is_directory(regression / "input")) {
      copy_tree(regression / "input", work);
    } else {
      fs::create_directories(work);
    }
    Case c;
    c.args = read_args(regression / "args");
    if (fs::exists(regression / "must_pass_over"))
      c.must_pass_over = first_line(regression / "must_pass_over");
    if (c.args.empty()) {
      std::cout << "FAIL " << regression.filename().string() << ": its args file is empty\n";
      ++failing;
      continue;
    }
    const Outcome o =
        run_distzo(distzo, c.args, work.string(), limits, (work.parent_path() / "replay").string());
    const std::string reason = finding(c, o, limits);
    std::string command = "distzo";
    for (const auto& a : c.args) command += " " + a;
    if (reason.empty()) {
      std::cout << "ok   " << regression.filename().string() << ": " << command << " (exit status "
                << o.exit_status << ")\n";
    } else {
      std::cout << "FAIL " << regression.filename().string() << ": " << command << ": " << reason
                << "\n"
                << last_bytes(o.timed_out ? o.hang_backtrace : o.stderr_text, 4000) << "\n";
      ++failing;
    }
  }
  std::cout << "distzo_fuzz: " << regressions.size() << " regression(s) in " << dir.string() << ", "
            << failing << " failing\n";
  return failing;
}

}  // namespace distzo::fuzz
