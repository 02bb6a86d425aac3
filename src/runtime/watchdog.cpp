#include "runtime/watchdog.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#include "core/log_line.hpp"

namespace distzo::runtime {

namespace {

constexpr std::size_t kRecent = 64;
/// Host names travel as this many uint64 words (64 bytes, NUL-padded).
constexpr int kHostWords = 8;

std::string host_name() {
  char name[kHostWords * 8] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) std::strcpy(name, "?");
  return name;
}

std::string seconds_text(double s) {
  char out[32];
  std::snprintf(out, sizeof(out), s < 10 ? "%.1f s" : "%.0f s", s);
  return out;
}

}  // namespace

bool process_stopped(std::uint64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so the
  // state follows the last ')'.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state == 'T' || state == 't';
}

Watchdog::Watchdog(const Communicator& world, WatchdogConfig config)
    : config_(std::move(config)),
      rank_(world.rank()),
      size_(world.size()),
      last_tick_(Clock::now().time_since_epoch().count()),
      world_(world),
      recent_(kRecent),
      last_step_end_(Clock::now()) {
  if (!config_.enabled) return;
  // Who is who, for the message: host and pid of every rank.
  std::uint64_t mine[kHostWords] = {};
  const std::string host = host_name();
  std::memcpy(mine, host.data(), std::min(host.size(), sizeof(mine) - 1));
  std::vector<std::uint64_t> hosts(static_cast<std::size_t>(size_) * kHostWords);
  world.allgather(mine, kHostWords, hosts.data());
  for (int r = 0; r < size_; ++r) {
    const char* name = reinterpret_cast<const char*>(hosts.data() + r * kHostWords);
    hosts_.emplace_back(name, strnlen(name, kHostWords * 8 - 1));
  }
  const std::uint64_t pid = static_cast<std::uint64_t>(getpid());
  pids_.resize(static_cast<std::size_t>(size_));
  world.allgather(&pid, 1, pids_.data());
  board_ = world.progress_board();
  world.on_collective([this] { arrive(); });
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (std::uncaught_exceptions() > 0 && !closed_ && size_ > 1) {
    stop_thread();
    (void)board_.release();  // see the header: freeing it here could hang
    return;
  }
  close();
}

void Watchdog::close() {
  if (closed_) return;
  closed_ = true;
  stop_thread();
  board_.reset();
}

void Watchdog::stop_thread() {
  if (config_.enabled) world_.on_collective({});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::alive() { last_tick_.store(Clock::now().time_since_epoch().count()); }

void Watchdog::phase(const char* what, std::int64_t step) {
  if (!config_.enabled) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = {what, step, 0};
    phase_start_ = count_;
  }
  alive();
}

void Watchdog::arrive() {
  std::int64_t count;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    count = ++count_;
    recent_[static_cast<std::size_t>(count) % kRecent] = {phase_.what, phase_.step,
                                                          count - phase_start_};
  }
  board_->post(count);
  alive();
}

void Watchdog::step_finished(const char* what, std::int64_t step) {
  if (!config_.enabled) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    step_seconds_[steps_seen_++ % kRecentSteps] =
        std::chrono::duration<double>(now - last_step_end_).count();
    last_step_end_ = now;
  }
  phase(what, step);
}

double Watchdog::deadline_seconds() const {
  if (config_.seconds > 0) return config_.seconds;
  std::array<double, kRecentSteps> steps;  // on the watching thread: nothing allocated
  std::size_t n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    steps = step_seconds_;
    n = std::min(steps_seen_, kRecentSteps);
  }
  double median = 0;
  if (n > 0) {
    std::nth_element(steps.begin(), steps.begin() + n / 2, steps.begin() + n);
    median = steps[n / 2];
  }
  return std::max(config_.min_seconds, config_.step_factor * median);
}

void Watchdog::watch() {
  for (;;) {
    const double limit = deadline_seconds();
    // Check often enough to fire within a tenth of the deadline, at most once a second.
    const double poll = std::min(1.0, std::max(0.05, limit / 10));
    const Clock::time_point asleep = Clock::now();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, std::chrono::duration<double>(poll), [this] { return stopping_; }))
        return;
    }
    // Woken far later than asked: the process (or the job, or the machine)
    // was stopped (Ctrl-Z, SIGSTOP, scontrol suspend) and continued. A
    // stopped process is not a hung one: the time it spent stopped does not
    // count as time without progress.
    const Clock::duration overslept =
        Clock::now() - asleep -
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(poll + 1.0));
    if (overslept > Clock::duration::zero()) last_tick_.fetch_add(overslept.count());
    const Clock::time_point last{Clock::duration{last_tick_.load()}};
    const double idle = std::chrono::duration<double>(Clock::now() - last).count();
    // The other ranks leave rank 0 time to name who is missing first.
    const double grace = rank_ == 0 ? 0 : std::clamp(limit / 2, 2.0, 60.0);
    if (idle > limit + grace) fire(idle, limit);
  }
}

Watchdog::Point Watchdog::point_of(std::int64_t count) const {
  if (count == 0) return Point();
  if (count + static_cast<std::int64_t>(kRecent) <= count_)  // left the ring
    return {"the run", -1, count};
  return recent_[static_cast<std::size_t>(count) % kRecent];
}

std::string Watchdog::describe(const Point& p) {
  std::string text = p.what;
  if (p.step >= 0) text += " " + std::to_string(p.step);
  if (p.collective > 0)
    text = "the start of collective " + std::to_string(p.collective) + " after " + text;
  return text;
}

std::string Watchdog::who(int rank) const {
  return std::to_string(rank) + " (host " + hosts_[rank] + ", pid " + std::to_string(pids_[rank]) +
         ")";
}

std::string Watchdog::stopped_among(const std::vector<int>& ranks) const {
  std::ostringstream names;
  int n = 0;
  for (int r : ranks)
    if (hosts_[r] == hosts_[rank_] && process_stopped(pids_[r]))
      names << (n++ ? "; " : "") << who(r);
  if (n == 0) return "";
  return " Stopped (SIGSTOP or a debugger; /proc on host " + hosts_[rank_] + " says so): rank" +
         (n > 1 ? "s " : " ") + names.str() + ".";
}

void Watchdog::fire(double idle, double limit) {
  std::ostringstream os;
  os << "distzo: error: watchdog: rank " << who(rank_) << " has made no progress for "
     << seconds_text(idle) << " (" << config_.setting << ": "
     << (config_.seconds > 0 ? "" : "automatic, ") << seconds_text(limit) << ")";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    os << "; its last progress: " << describe(phase_start_ == count_ ? phase_ : point_of(count_))
       << ".";
    const std::vector<std::int64_t> counts = board_->counts();
    if (rank_ != 0) {
      os << " Rank 0 did not end the job within the grace period: rank 0 itself is likely "
            "stopped or hung.";
      os << stopped_among({0});
    } else {
      // A rank stopped inside a collective has posted it like the others,
      // and without counts none is told apart: on this host, /proc tells.
      std::vector<int> others;
      for (int r = 1; r < size_; ++r) others.push_back(r);
      const std::string stopped = stopped_among(others);
      std::ostringstream behind;
      int n = 0;
      for (int r = 0; r < static_cast<int>(counts.size()); ++r)
        if (counts[r] < count_) {
          behind << (n++ ? "; " : "") << who(r) << ", last seen at "
                 << describe(point_of(counts[r]));
        }
      if (counts.empty())
        os << " This MPI's RMA windows cannot show which rank is behind.";
      else if (n > 0)
        os << " Not reported: rank" << (n > 1 ? "s " : " ") << behind.str() << ".";
      os << stopped;
      if (!counts.empty() && n == 0 && stopped.empty())
        os << " Every rank began this collective, so the one that stopped inside it cannot "
              "be told apart.";
    }
  }
  os << " A stopped (SIGSTOP), hung or lost rank; ending every rank (exit status " << kExitWatchdog
     << "). Resume from the newest checkpoint (checkpoint.resume: latest); raise "
     << config_.setting << " if a step, evaluation or checkpoint legitimately takes longer.\n";
  const std::string text = os.str();
  std::fwrite(text.data(), 1, text.size(), stderr);
  if (!config_.log_path.empty()) {
    if (std::FILE* log = std::fopen(config_.log_path.c_str(), "a")) {
      // "TIME error: watchdog: ...", as run.log's other lines are stamped.
      const std::string line =
          stamp_lines(text.substr(std::string("distzo: ").size()), utc_timestamp());
      std::fwrite(line.data(), 1, line.size(), log);
      std::fclose(log);
    }
  }
  // The launcher forwards stderr through a pipe, and an abort may end it
  // before it has read the message: give it a moment.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  world_.abort(kExitWatchdog);
}

}  // namespace distzo::runtime
