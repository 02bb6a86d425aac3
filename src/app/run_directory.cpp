#include "app/run_directory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <random>
#include <sstream>
#include <utility>

#include "app/log_checkpoints.hpp"
#include "core/digest.hpp"
#include "core/error.hpp"
#include "io/hdf5_file.hpp"

namespace distzo::app {

namespace {

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

std::string slurm_job() {
  const char* job = std::getenv("SLURM_JOB_ID");
  return job && *job ? job : "-";
}

struct LockOwner {
  std::string host, job;
  long pid = 0;
};

LockOwner read_lock(const std::string& path) {
  std::ifstream in(path);
  LockOwner o;
  std::string word;
  while (in >> word) {
    if (word == "host")
      in >> o.host;
    else if (word == "pid")
      in >> o.pid;
    else if (word == "job")
      in >> o.job;
  }
  return o;
}

void make_directories(const std::string& path) {
  std::string partial;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if ((i == path.size() || path[i] == '/') && !partial.empty()) {
      struct stat st;
      if (stat(partial.c_str(), &st) != 0) {
        DISTZO_INPUT_REQUIRE(
            mkdir(partial.c_str(), 0755) == 0 || errno == EEXIST,
            "cannot create directory '" << partial << "' for output.dir: " << std::strerror(errno));
      } else {
        DISTZO_INPUT_REQUIRE(S_ISDIR(st.st_mode), "cannot create output.dir '"
                                                      << path << "': '" << partial
                                                      << "' exists and is not a directory");
      }
    }
    if (i < path.size()) partial += path[i];
  }
}

/// Whether process `pid` of this host still runs (a zombie does not).
bool alive(long pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: trust kill
  const std::size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

/// Temporary checkpoints (ckpt-*.h5.tmp.*, log-*.h5.tmp.*) a killed run left behind.
int remove_temporaries(const std::string& dir) {
  int removed = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if ((name.rfind("ckpt-", 0) == 0 || name.rfind("log-", 0) == 0) &&
          name.find(".h5.tmp.") != std::string::npos)
        removed += std::remove((dir + "/" + name).c_str()) == 0 ? 1 : 0;
    }
    closedir(d);
  }
  return removed;
}

}  // namespace

RunDirectory::RunDirectory(const std::string& dir, std::vector<std::string>& notes)
    : dir_(dir), lock_(dir + "/LOCK") {
  make_directories(dir);
  const std::string me =
      "host " + hostname() + " pid " + std::to_string(getpid()) + " job " + slurm_job() + "\n";
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = open(lock_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      const bool written = write(fd, me.data(), me.size()) == static_cast<ssize_t>(me.size());
      close(fd);
      DISTZO_INPUT_REQUIRE(written, "cannot write the lock '" << lock_ << "'");
      lock_on_signal_.emplace(lock_);
      break;
    }
    const int error = errno;
    DISTZO_INPUT_REQUIRE(error == EEXIST,
                         "cannot create the lock '"
                             << lock_ << "' in output.dir: " << std::strerror(error)
                             << (error == EACCES ? " (the directory's permissions, or "
                                                   "the umask it was made under, do "
                                                   "not let this user create files in it)"
                                                 : ""));
    const LockOwner o = read_lock(lock_);
    // A lock distzo wrote names a host and a pid; one that does not is being
    // written by a run that is starting this instant, or was damaged.
    DISTZO_INPUT_REQUIRE(!o.host.empty() && o.pid > 0,
                         "output.dir '" << dir << "' has a lock that names no run (" << lock_
                                        << " does not hold \"host H pid P job J\"): another run "
                                           "may be starting in it, or the file is damaged. "
                                           "Choose another output.dir, or remove "
                                        << lock_ << " if no run uses this directory");
    const bool same_job = o.job != "-" && o.job == slurm_job();
    const bool dead_here = o.host == hostname() && o.pid > 0 && !alive(o.pid);
    DISTZO_INPUT_REQUIRE(attempt == 0 && (same_job || dead_here),
                         "output.dir '" << dir << "' is in use by another run (process " << o.pid
                                        << " on " << o.host
                                        << (o.job == "-" ? std::string() : ", SLURM job " + o.job)
                                        << "): two runs would overwrite each other's files. "
                                           "Choose another output.dir, or remove "
                                        << lock_ << " if that run is gone");
    notes.push_back("output.dir: took over the lock of " +
                    std::string(same_job
                                    ? "this SLURM job (" + o.job + "), requeued"
                                    : "process " + std::to_string(o.pid) + ", which has ended") +
                    " (was on " + o.host + ")");
    std::remove(lock_.c_str());
  }
  if (const int removed = remove_temporaries(dir))
    notes.push_back("output.dir: removed " + std::to_string(removed) +
                    " temporary checkpoint file" + (removed == 1 ? "" : "s") +
                    " left by an interrupted write");
}

RunDirectory::~RunDirectory() {
  lock_on_signal_.reset();  // first: the handler must not remove the next run's lock
  std::remove(lock_.c_str());
}

namespace {

/// `dir/stem.ext` renamed to `dir/stem.run-<owner>.ext`, if it exists; the
/// new name, or "" when there was nothing to move.
std::string move_aside(const std::string& dir, const std::string& stem, const std::string& ext,
                       const std::string& owner) {
  const std::string from = dir + "/" + stem + ext, to = dir + "/" + stem + ".run-" + owner + ext;
  struct stat st;
  if (stat(from.c_str(), &st) != 0) return "";
  DISTZO_INPUT_REQUIRE(
      std::rename(from.c_str(), to.c_str()) == 0,
      "cannot move " << from << " aside to " << to << ": " << std::strerror(errno));
  return to;
}

}  // namespace

void RunDirectory::claim(const std::string& run_id, std::vector<std::string>& notes) {
  // The directory's previous run (another run_id) keeps its logs: a new run,
  // or one resumed from another run's checkpoint, would truncate them.
  const std::string owner = owner_of(dir_);
  if (!owner.empty() && owner != run_id)
    for (const char* name : {"metrics", "eval", "run", "deck.resolved"}) {
      const std::string ext = std::string(name) == "run"             ? ".log"
                              : std::string(name) == "deck.resolved" ? ".yaml"
                                                                     : ".csv";
      const std::string moved = move_aside(dir_, name, ext, owner);
      if (!moved.empty())
        notes.push_back("output.dir: the " + std::string(name) + ext + " of run " + owner +
                        " (the directory's previous run) is kept as " + moved);
    }
  std::ofstream(dir_ + "/run_id") << run_id << "\n";
}

std::string new_run_id() {
  std::random_device source;
  return hex16((static_cast<std::uint64_t>(source()) << 32) ^ source());
}

std::string owner_of(const std::string& dir) {
  std::ifstream in(dir + "/run_id");
  std::string id;
  in >> id;
  return id;
}

std::string checkpoint_problem(const std::string& path) {
  try {
    const io::TrainingState state = io::read_training_state(path);
    const io::ModelReader reader(path);
    // Every tensor is read, checksummed and checked for NaN and Inf, whether
    // or not a digest was recorded (a checkpoint whose digest attribute is
    // damaged away must not be taken unchecked).
    const std::string found = reader.verified_digest();
    if (!state.parameter_digest.empty() && found != state.parameter_digest)
      return "its tensors' digest " + found + " is not the recorded " + state.parameter_digest;
    return "";
  } catch (const Error& e) {
    return e.what();
  } catch (const std::bad_alloc&) {  // sizes in damaged metadata
    return "reading it needs more memory than this machine has (its sizes are damaged?)";
  }
}

ResumeChoice choose_resume(const io::Deck& deck, std::vector<std::string>& notes) {
  const std::string& resume = deck.checkpoint.resume;
  if (!resume.empty() && resume != "latest") {
    if (io::distzo_format(resume) == io::kSeedLogFormat)
      return resume_log(resume, deck.model.path, "", notes);
    const std::string problem = checkpoint_problem(resume);
    DISTZO_INPUT_REQUIRE(problem.empty(), deck.origin.where("checkpoint.resume")
                                              << "the checkpoint " << resume
                                              << " does not read back whole (" << problem
                                              << "); name another one, or use `latest`");
    return {resume, resume, 0, ""};
  }
  if (resume != "latest") return {};
  std::vector<std::string> broken;
  const std::string owner = owner_of(deck.output.dir);
  const std::string latest =
      RunCheckpoints(deck.output.dir, deck.checkpoint.keep).latest_good(owner, broken);
  // A log-only checkpoint of a later step continues from there.
  ResumeChoice choice = latest_log(deck, owner, latest, broken, notes);
  for (const std::string& b : broken) notes.push_back("warning: passed over checkpoint " + b);
  if (!choice.path.empty()) return choice;
  if (!latest.empty()) return {latest, latest, 0, ""};
  // Starting over would overwrite the run's files: only when it has none.
  DISTZO_INPUT_REQUIRE(broken.empty(), deck.origin.where("checkpoint.resume")
                                           << "none of the " << broken.size()
                                           << " checkpoints of this run in '" << deck.output.dir
                                           << "' reads back whole (the newest: " << broken.back()
                                           << "); move them away to start over, or name one with "
                                              "checkpoint.resume");
  return {};
}

CheckpointWriters CheckpointWriters::choose(const runtime::Mesh& mesh,
                                            const runtime::ParameterStore& store) {
  CheckpointWriters w;
  w.root = mesh.world().rank() == 0;
  const auto* node = dynamic_cast<const runtime::MpiCommunicator*>(&mesh.node());
  if (!store.sliced() || node == nullptr || node->size() == 1 ||
      !io::Hdf5File::parallel_available())
    return w;
  double has_rank_0 = w.root ? 1 : 0;
  node->allreduce_sum(&has_rank_0, 1);
  if (has_rank_0 > 0) w.node = node;
  return w;
}

RunCheckpoints::RunCheckpoints(std::string dir, int keep, CheckpointWriters writers)
    : dir_(std::move(dir)), keep_(keep), writers_(writers) {}

std::string RunCheckpoints::latest_good(const std::string& owner,
                                        std::vector<std::string>& passed_over) const {
  const auto found = io::list_checkpoints(dir_);  // oldest first
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    const std::string id = io::checkpoint_run_id(it->second);
    if (!owner.empty() && !id.empty() && id != owner) continue;
    const std::string problem = checkpoint_problem(it->second);
    if (problem.empty()) return it->second;
    passed_over.push_back(it->second + ": " + problem);
  }
  return "";
}

std::string RunCheckpoints::path(std::int64_t step) const {
  return dir_ + "/" + io::checkpoint_name(step);
}

std::string RunCheckpoints::log_path(std::int64_t step) const {
  return dir_ + "/" + io::log_checkpoint_name(step);
}

std::string RunCheckpoints::keep_aside(const std::string& path, const std::string& run_id) const {
  struct stat st;
  const std::string owner = stat(path.c_str(), &st) == 0 ? io::checkpoint_run_id(path) : "";
  if (owner.empty() || owner == run_id) return "";
  const std::string stem = path.substr(0, path.size() - 3);  // without ".h5"
  const std::string kept = stem + ".run-" + owner + ".h5";
  DISTZO_INPUT_REQUIRE(std::rename(path.c_str(), kept.c_str()) == 0,
                       "cannot move another run's checkpoint " << path << " aside to " << kept
                                                               << ": " << std::strerror(errno));
  return kept;
}

void RunCheckpoints::rotate(const std::string& prefix, const std::string& run_id) const {
  std::vector<std::string> ours;
  for (const auto& [step, file] : io::list_checkpoints(dir_, prefix))
    if (io::checkpoint_run_id(file) == run_id) ours.push_back(file);
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < ours.size(); ++i)
    std::remove(ours[i].c_str());
}

RunCheckpoints::Written RunCheckpoints::write_log(const io::TrainingState& state) const {
  const std::string path = log_path(state.step);
  const std::string kept_aside = keep_aside(path, state.run_id);
  io::write_log_checkpoint(path, state);
  // Older log-only checkpoints go only once the new one reads back as written.
  std::string problem;
  try {
    const io::TrainingState back = io::read_training_state(path);
    if (back.step != state.step || back.parameter_digest != state.parameter_digest)
      problem = "it reads back as step " + std::to_string(back.step) + ", digest " +
                back.parameter_digest;
  } catch (const Error& e) {
    problem = e.what();
  }
  DISTZO_INPUT_REQUIRE(problem.empty(), "log-only checkpoint " << path << " does not read back ("
                                                               << problem
                                                               << "); the older ones are kept");
  rotate("log-", state.run_id);
  return {path, kept_aside};
}

RunCheckpoints::Written RunCheckpoints::write(
    const io::ModelInfo& model, const runtime::ParameterStore& store,
    const io::TrainingState& state,
    const std::function<void(std::uint32_t id, std::uint64_t first)>& before_piece) const {
  const std::string path = this->path(state.step);
  // Another run's checkpoint of the same step (two runs, one directory)
  // is kept under a name that resume and rotation do not take for ours.
  const std::string kept_aside = writers_.root ? keep_aside(path, state.run_id) : "";
  if (writers_.node != nullptr) {
    io::write_checkpoint_parallel(
        path, model, *writers_.node,
        [&](const io::SliceSink& sink) {
          store.visit_own_slices(
              [&](std::uint32_t id, std::uint64_t first, std::size_t count, StoredElements data) {
                before_piece(id, first);
                sink(id, first, count, data);
              });
        },
        state);
  } else if (writers_.root) {
    io::write_checkpoint(
        path, model,
        [&](const io::TensorSink& sink) {
          store.visit_stored([&](std::uint32_t id, StoredElements data) {
            before_piece(id, 0);
            sink(id, data);
          });
        },
        state);
  }
  if (writers_.root) verify_and_rotate(path, state.run_id);
  return {path, kept_aside};
}

void RunCheckpoints::verify_and_rotate(const std::string& path, const std::string& run_id) const {
  // Older checkpoints go only once the new one reads back whole.
  const std::string problem = checkpoint_problem(path);
  DISTZO_INPUT_REQUIRE(problem.empty(), "checkpoint " << path << " does not read back (" << problem
                                                      << "); the older checkpoints are kept");
  rotate("ckpt-", run_id);
}

}  // namespace distzo::app
