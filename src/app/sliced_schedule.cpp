#include "app/sliced_schedule.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "app/format.hpp"
#include "core/error.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/arena_layout.hpp"

namespace distzo::app {

SlicedSchedule sliced_schedule(const PlanInputs& in, int gpus, const Bandwidths& bw) {
  check_plan_inputs(in);
  DISTZO_INPUT_REQUIRE(gpus >= 1, "plan: --gpus-per-node must be >= 1, got " << gpus);
  DISTZO_INPUT_REQUIRE(gpus % in.perturbation == 0,
                       "plan: P = " << in.perturbation << " must divide the " << gpus
                                    << " GPUs of a node (the rest are data replicas)");
  DISTZO_INPUT_REQUIRE(
      in.placement.mode == runtime::PlacementMode::offload && in.placement.resident_blocks == 0,
      "plan: the sliced schedule streams every block from the node's shared "
      "master: give --placement offload (with --resident-blocks 0)");
  const model::ParameterRegistry r = model::ParameterRegistry::for_model(in.config);
  const int L = r.num_blocks();
  double block_params = 0;
  if (L > 0)
    for (std::uint32_t id : r.block_ids(0)) block_params += static_cast<double>(r[id].numel());
  const double A = 4 * block_params, n = gpus;
  // Each replica's micro-batch is B x T tokens; the global batch, D times
  // that, is what ZO2 runs on its one GPU.
  const double tokens = static_cast<double>(in.batch.micro_batch) * in.batch.seq_len;

  SlicedSchedule s;
  s.gpus = gpus;
  s.data = gpus / in.perturbation;
  s.evaluations = in.evaluations() / in.perturbation;
  s.node_evaluations = in.evaluations();
  s.pcie_up = s.pcie_down = L * A / n;
  s.nvlink = L * s.node_evaluations * A * (n - 1) / n;

  const double t_pcie = A / n / bw.pcie;
  const double t_update = (2 + s.node_evaluations) * A / n / bw.hbm;
  const double t_nvlink = s.node_evaluations * A * (n - 1) / n / bw.nvlink;
  const double t_gemm = 2 * tokens * block_params * s.evaluations / bw.gemm_flops;
  const double work = t_update + t_nvlink + t_gemm;
  s.block_seconds = std::max(t_pcie, work);
  s.bound = t_pcie >= work ? "PCIe" : gpus > 1 ? "update + NVLink + GEMM" : "update + GEMM";
  s.step_seconds = L * s.block_seconds;

  const double zo2_work = (2 + in.evaluations()) * A / bw.hbm +
                          2 * (tokens * s.data) * block_params * in.evaluations() / bw.gemm_flops;
  s.zo2_block_seconds = std::max(A / bw.pcie, zo2_work);
  s.zo2_step_seconds = L * s.zo2_block_seconds;
  return s;
}

std::string describe_sliced_schedule(const PlanInputs& in, const SlicedSchedule& s,
                                     const Bandwidths& bw) {
  const auto ms = [](double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f ms", seconds * 1e3);
    return std::string(text);
  };
  std::ostringstream os;
  os << "sliced schedule on " << s.gpus << (s.gpus == 1 ? " GPU" : " GPUs")
     << " of a node (Placement II, every block offloaded; P = " << in.perturbation
     << ", D = " << s.data << ", " << s.evaluations << " evaluation"
     << (s.evaluations == 1 ? "" : "s") << " of the micro-batch " << in.batch.micro_batch << " x "
     << in.batch.seq_len << " tokens per GPU; ZO2: " << in.evaluations() << " of the global batch "
     << in.batch.micro_batch * s.data << " x " << in.batch.seq_len << ")\n"
     << "  per step and GPU  PCIe " << human_bytes(s.pcie_up) << " up + "
     << human_bytes(s.pcie_down) << " back (1/" << s.gpus << " of every block), NVLink "
     << human_bytes(s.nvlink) << " in (all-gather of " << s.node_evaluations
     << " w buffers per block)\n"
     << "  bandwidths        PCIe " << bw.pcie * 1e-9 << " GB/s, NVLink " << bw.nvlink * 1e-9
     << " GB/s, HBM " << bw.hbm * 1e-12 << " TB/s, GEMM " << bw.gemm_flops * 1e-12
     << " TFLOP/s (--pcie-gbs, --nvlink-gbs, --hbm-tbs, --gemm-tflops)\n"
     << "  predicted         " << ms(s.block_seconds) << " per block (bound by " << s.bound << "), "
     << ms(s.step_seconds) << " per step\n"
     << "  ZO2 on one GPU    " << ms(s.zo2_block_seconds) << " per block, "
     << ms(s.zo2_step_seconds) << " per step at the same global batch\n";
  char line[160];
  std::snprintf(line, sizeof(line),
                "  speed-up          %.2fx at equal global batch, %.2fx per GPU\n", s.speedup(),
                s.speedup() / s.gpus);
  os << line << "  (a formula from the bandwidths above, not a measurement; docs/placement.md)\n";
  return os.str();
}

}  // namespace distzo::app
