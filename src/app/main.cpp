// The `distzo` executable: parses the subcommand, runs it, and turns any
// distzo::Error into a message on the failing rank and a non-zero exit.

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/blas_threads.hpp"
#include "app/forward_logits.hpp"
#include "app/inspect.hpp"
#include "app/make_model.hpp"
#include "app/make_synthetic.hpp"
#include "app/memory_limit.hpp"
#include "app/plan.hpp"
#include "app/process_start.hpp"
#include "app/replay.hpp"
#include "app/run.hpp"
#include "core/error.hpp"
#include "core/output_drain.hpp"
#include "core/process_limits.hpp"
#include "core/version.hpp"
#include "io/deck.hpp"
#include "io/deck_text.hpp"
#include "io/hdf5_file.hpp"
#include "runtime/mpi_communicator.hpp"

namespace {

const char* const kUsage =
    "distzo - zeroth-order fine-tuning (MeZO's or FZOO's step, ZO2 / DistZO2 placement) of OPT\n"
    "and Llama language models (and Llama's kin: Qwen2, Qwen3, Mistral) and Gemma 3 text models\n"
    "\n"
    "usage:\n"
    "  distzo run DECK.yaml              fine-tune as the deck says (docs/decks.md);\n"
    "                                    under MPI: mpiexec -n P*D distzo run DECK.yaml\n"
    "  distzo plan DECK.yaml             predicted device memory, host memory and bytes\n"
    "                                    moved per step, before submitting the job\n"
    "  distzo plan config.json [...]     the same for a Hugging Face config.json (OPT,\n"
    "                                    Llama, Qwen2, Qwen3, Mistral, OLMo 2, Phi-3, Gemma 3)\n"
    "  distzo inspect FILE.h5            architecture, tensor table, parameter count\n"
    "                                    (a dataset file: task, sizes, label balance)\n"
    "  distzo inspect FILE.h5 --digest   one hex digest over all parameters (digest\n"
    "                                    version 3, docs/formats.md)\n"
    "  distzo make-synthetic OUT.h5 --task classification|causal_lm --examples N\n"
    "                         --seq-len T --vocab V [--seed S]   a small learnable dataset\n"
    "  distzo make-model OUT.h5 --config config.json | --layers L --hidden C --heads H\n"
    "                         --ffn F --vocab V [...]      a model with random weights\n"
    "  distzo forward MODEL.h5 INPUT.h5 OUTPUT.h5 [--micro-batch M]\n"
    "                                    logits of the model on token ids\n"
    "  distzo replay BASE.h5 SOURCE.h5 -o OUT.h5 [--steps N]\n"
    "                                    θ after step N rebuilt from the base model and\n"
    "                                    the seed log of a checkpoint or log-only\n"
    "                                    checkpoint (log-STEP.h5; no forward pass)\n"
    "  distzo help deck                  every deck key: type, default, allowed values\n"
    "  distzo --help | --version\n"
    "\n"
    "FILE.h5 is a distzo model or checkpoint (docs/formats.md); inspect also reads a\n"
    "log-only checkpoint and a dataset. Convert Hugging Face checkpoints with\n"
    "tools/hf_to_h5.py, GGUF files with tools/gguf_to_h5.py.\n";

const char* const kInspectUsage =
    "usage: distzo inspect FILE.h5 [--digest]\n"
    "  a model or checkpoint: file kind, architecture, parameter count, storage,\n"
    "  the tokenizer it carries, and (a checkpoint) step, run, seed and base model,\n"
    "  then the tensor table; a log-only checkpoint (log-STEP.h5): its training state\n"
    "  and seed log; a dataset file: task, sizes, label balance. --digest\n"
    "  prints only the parameter digest (version 3, docs/formats.md). Reads on the\n"
    "  host only.";

/// The usage of a command with --help, or nullptr: the general usage.
const char* command_usage(const std::string& command) {
  if (command == "plan") return distzo::app::plan_usage();
  if (command == "run") return distzo::app::run_usage();
  if (command == "inspect") return kInspectUsage;
  if (command == "forward") return distzo::app::forward_usage();
  if (command == "replay") return distzo::app::replay_usage();
  if (command == "make-model") return distzo::app::make_model_usage();
  if (command == "make-synthetic") return distzo::app::make_synthetic_usage();
  return nullptr;
}

int run_inspect(const std::vector<std::string>& args) {
  std::string path;
  bool digest = false;
  for (const auto& a : args) {
    if (a == "--digest") {
      digest = true;
    } else if (!a.empty() && a[0] == '-') {
      DISTZO_INPUT_FAIL("inspect: unknown option '" << a << "'\n" << kInspectUsage);
    } else {
      DISTZO_INPUT_REQUIRE(path.empty(),
                           "inspect: one file expected, got '" << path << "' and '" << a << "'");
      path = a;
    }
  }
  DISTZO_INPUT_REQUIRE(!path.empty(), "inspect: missing FILE.h5\n" << kInspectUsage);
  distzo::app::inspect(path, digest, std::cout);
  return 0;
}

// --help (anywhere on the line) and --version are answered before MPI and
// Kokkos start: Kokkos treats --help as its own and would print its option
// table first.
bool answers_without_runtime(const std::vector<std::string>& args, int& status) {
  const bool asks_help = std::any_of(
      args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
  if (asks_help && !args.empty() && command_usage(args[0]) != nullptr) {
    std::cout << command_usage(args[0]) << "\n";
    status = 0;
    return true;
  }
  if (asks_help || (!args.empty() && args[0] == "help" && args.size() == 1)) {
    std::cout << kUsage;
    status = 0;
    return true;
  }
  if (args.empty()) {  // a misuse, like a command without its arguments
    std::cerr << "distzo: error: no command\n" << kUsage;
    status = 2;
    return true;
  }
  if (args[0] == "help") {  // help TOPIC
    if (args.size() == 2 && args[1] == "deck") {
      std::cout << distzo::io::deck_reference_markdown();
      status = 0;
    } else {
      std::cerr << "distzo: error: help " << (args.size() > 1 ? "'" + args[1] + "'" : "")
                << ": the one topic is deck (distzo help deck)\n";
      status = 2;
    }
    return true;
  }
  if (args[0] == "--version") {
    std::cout << "distzo " << distzo::distzo_version() << "\n";
    status = 0;
    return true;
  }
  return false;
}

int dispatch(const std::vector<std::string>& args) {
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "inspect") return run_inspect(rest);
  if (args[0] == "make-synthetic") return distzo::app::make_synthetic(rest);
  if (args[0] == "make-model") return distzo::app::make_model(rest);
  if (args[0] == "plan") return distzo::app::plan(rest);
  if (args[0] == "forward") return distzo::app::forward_logits(rest);
  if (args[0] == "replay") return distzo::app::replay(rest);
  if (args[0] == "run") {
    const auto world = distzo::runtime::MpiCommunicator::world();
    distzo::app::run(distzo::app::parse_run_options(rest), *world);
    return 0;
  }
  DISTZO_INPUT_FAIL("unknown command '" << args[0] << "'"
                                        << distzo::io::deck_detail::suggestion(
                                               args[0], {"run", "plan", "inspect", "make-synthetic",
                                                         "make-model", "forward", "replay", "help"})
                                        << "\n\n"
                                        << kUsage);
}

/// Kokkos started with the process's arguments and KOKKOS_* variables; a
/// value Kokkos cannot take (KOKKOS_NUM_THREADS=auto) is an input error
/// naming them, not an exception escaping main.
void start_kokkos(std::optional<Kokkos::ScopeGuard>& kokkos, int& argc, char** argv) {
  // Kokkos 4 aborts the process on a variable it cannot read as an integer
  // (Kokkos 3.4 throws): those it reads as integers are checked first.
  std::string what;
  for (const char* name :
       {"KOKKOS_NUM_THREADS", "KOKKOS_DEVICE_ID", "KOKKOS_NUM_DEVICES", "KOKKOS_SKIP_DEVICE"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    char* end = nullptr;
    std::strtol(value, &end, 10);
    if (end == value || *end != '\0') {
      what = std::string("cannot convert environment variable '") + name + "=" + value +
             "' to an integer";
      break;
    }
  }
  try {
    if (what.empty()) kokkos.emplace(argc, argv);
  } catch (const std::exception& e) {
    // Kokkos 3.4 says "Error: WHAT Raised by ...\nTraceback ...": the WHAT.
    what = e.what();
    what = what.substr(0, what.find('\n'));
    if (what.rfind("Error: ", 0) == 0) what.erase(0, 7);
    what = what.substr(0, what.find(" Raised by"));
  }
  if (!what.empty()) {
    std::string set;
    for (const char* name : {"KOKKOS_NUM_THREADS", "KOKKOS_DEVICE_ID", "KOKKOS_NUM_DEVICES",
                             "KOKKOS_SKIP_DEVICE", "KOKKOS_DISABLE_WARNINGS", "KOKKOS_TOOLS_LIBS"})
      if (const char* value = std::getenv(name))
        set += std::string(set.empty() ? "" : ", ") + name + "=" + value;
    DISTZO_INPUT_FAIL("Kokkos could not start: "
                      << what << " ("
                      << (set.empty() ? std::string("no KOKKOS_* variable is set")
                                      : "the environment sets " + set)
                      << "; unset the variable, or give it a value Kokkos takes: "
                         "KOKKOS_NUM_THREADS a positive integer, KOKKOS_DEVICE_ID a device index)");
  }
}

/// The ranks of the job on this node (MPI started), which share its cores.
int ranks_on_this_node() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int ranks = 1;
  MPI_Comm_size(node, &ranks);
  MPI_Comm_free(&node);
  return ranks;
}

/// One message, one line, in one write: under mpiexec a line written in
/// pieces can be cut by an abort (or interleaved with another rank's).
void say(const std::string& line) {
  const std::string text = line + "\n";
  std::cerr.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::cerr.flush();
}

/// Ends every rank of the job with `status` once what this rank wrote has
/// reached the launcher. mpiexec (Hydra) exits as soon as the first abort
/// reaches it, whatever output of the ranks it has not forwarded yet: rank
/// 0's line (why the job ends) used to be lost about half the time when all
/// 4 ranks of a job met a full disk together (issue 55). So each rank waits
/// until its own pipe is read (which puts its line ahead of its abort), and
/// a rank other than 0 gives rank 0 a moment more: ranks often fail alike
/// (one file system, one deck), and rank 0's line is the one to keep. Rank 0
/// ends the job then; a rank failing alone ends it `kGraceForRank0` later.
[[noreturn]] void abort_job(int status, int rank) {
  constexpr std::chrono::milliseconds kGraceForRank0{1000};
  distzo::flush_output_to_launcher();
  if (rank != 0) std::this_thread::sleep_for(kGraceForRank0);
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return
}

}  // namespace

int main(int argc, char** argv) {
  distzo::app::hold_blas_to_one_thread(argv);
  int status = 0;
  if (answers_without_runtime(std::vector<std::string>(argv + 1, argv + argc), status))
    return status;
  // A file size limit (ulimit -f) makes a write fail (EFBIG), which distzo
  // reports, instead of killing the process without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  // Under too small an open-files limit MPI_Init fails inside UCX with
  // messages that name no cause: say it first (or raise the limit, when the
  // hard limit allows). Under mpiexec every rank sees the same limit; rank 0
  // says it. (Too small an address-space limit is start_mpi's to report.)
  const std::string small = distzo::raise_open_files_limit();
  if (!small.empty()) {
    const char* pmi_rank = std::getenv("PMI_RANK");
    if (pmi_rank == nullptr || std::string(pmi_rank) == "0")
      std::cerr << "distzo: error: " << small << "\n";
    return 2;
  }
  distzo::app::start_mpi(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string where = size > 1 ? " on rank " + std::to_string(rank) : "";
  bool collective = false;   // every rank failed together: finish MPI cleanly
  bool interrupted = false;  // every rank stopped after a SIGINT
  {
    std::optional<Kokkos::ScopeGuard> kokkos;
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
      distzo::app::give_kokkos_host_threads(ranks_on_this_node(), argc, argv);
      start_kokkos(kokkos, argc, argv);
      // Only `run` is a parallel program; under mpiexec the other commands
      // run once, on rank 0 (two ranks writing one model file would race).
      if (args[0] == "run" || rank == 0) status = dispatch(args);
    } catch (const distzo::StopRequested& e) {
      if (e.report()) say(std::string("distzo: ") + e.what());
      collective = true;
      interrupted = e.reason() == distzo::StopReason::interrupt;
      status = e.exit_status();
    } catch (const distzo::CollectiveError& e) {
      if (e.report())
        say(std::string("distzo: error: ") + e.what() +
            distzo::app::address_space_exhausted_note(e.what()));
      collective = true;
      status = 2;
    } catch (const distzo::Error& e) {
      say("distzo: error" + where + ": " + e.what() +
          distzo::app::address_space_exhausted_note(e.what()));
      status = 2;
    } catch (const std::bad_alloc&) {
      const std::string limit = distzo::app::address_space_exhausted_note("");
      say("distzo: error" + where + ": out of host memory" +
          (limit.empty() ? " (the sizes asked for need more than this machine has; "
                           "`distzo plan` predicts a run's memory)"
                         : limit));
      status = 2;
    } catch (const std::exception& e) {
      say("distzo: internal error" + where + ": " + e.what());
      status = 3;
    }
  }
  // A failure on one rank of a multi-rank job must not leave the others hanging.
  if (status != 0 && size > 1 && !collective) abort_job(status, rank);
  if (interrupted && size > 1) {
    // MPICH's mpiexec (Hydra 4.0) reports 0 for a rank that exits normally
    // once it has forwarded a signal (its proxy zeroes the status of a rank
    // it reaps after the ranks' output has closed), so a Ctrl-C to mpiexec
    // would end in status 0. MPI_Abort's status goes to mpiexec itself,
    // which exits with it. Every rank has stopped and cleaned up by then;
    // the pause lets mpiexec print what the ranks wrote before the abort
    // reaches it (it exits as soon as it has the abort).
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the other ranks' output
      abort_job(status, rank);
    }
  }
  if (status == 2 && size == 1 && !distzo::app::address_space_exhausted_note("").empty()) {
    // Refused for want of address space: MPI's shutdown (UCX) allocates and
    // would abort under the same limit after the message. One rank has no
    // peer waiting for it; what needed saying is said.
    std::cerr.flush();
    std::cout.flush();
    std::_Exit(status);
  }
  if (distzo::io::hdf5_close_failed()) {
    // HDF5 would crash shutting down (at MPI_Finalize) on the file it could
    // not close; what needed saying is said.
    std::cerr.flush();
    std::cout.flush();
    std::_Exit(status);
  }
  MPI_Finalize();
  return status;
}
