#pragma once
// The sliced schedule of Placement II on a node of n GPUs, predicted (`distzo
// plan config.json --gpus-per-node n`): per step and per GPU, the bytes over
// PCIe and over NVLink, and the step time from bandwidths given on the
// command line, next to ZO2 (one GPU, every block over its PCIe link) at the
// same global batch. A formula, not a measurement (docs/placement.md shows
// the arithmetic for OPT-175B).
//
// Per block of P_b parameters (A = 4·P_b bytes), with e evaluations per GPU
// of the micro-batch's N = B·T tokens (each of the D replicas has its own)
// and e_node = 2q evaluations on the node, distzo's schedule
// (block k+1's upload overlaps block k's work, which is serial on the
// compute stream):
//
//   PCIe    A/n up and A/n back per GPU                     t_pcie = A/n / BW_pcie
//   update  θ slice read and written, e_node w± slices      t_upd  = (2 + e_node)·A/n / BW_hbm
//   NVLink  all-gather of the e_node w± buffers             t_nvl  = e_node·A·(n−1)/n / BW_nvlink
//   GEMM    2·N·P_b FLOPs per evaluation                    t_gemm = 2·N·P_b·e / R
//   block   max(t_pcie, t_upd + t_nvl + t_gemm)
//
// ZO2, on the global batch of D·N tokens: max(A / BW_pcie,
// (2 + 2q)·A / BW_hbm + 2·D·N·P_b·2q / R) per block.

#include <string>

#include "app/plan.hpp"

namespace distzo::app {

struct Bandwidths {
  double pcie = 55e9;          // bytes/s per direction, pinned host memory (PCIe 5)
  double nvlink = 370e9;       // bytes/s an all-gather achieves per GPU (NVLink 4)
  double hbm = 4.3e12;         // bytes/s
  double gemm_flops = 700e12;  // achieved FLOP/s
};

struct SlicedSchedule {
  int gpus = 1;                                        // n
  int data = 1;                                        // D = n / P: replicas on the node
  int evaluations = 2;                                 // e: per GPU
  int node_evaluations = 2;                            // e_node = 2q
  double pcie_up = 0, pcie_down = 0, nvlink = 0;       // bytes per step per GPU
  double block_seconds = 0, step_seconds = 0;          // predicted, distzo
  double zo2_block_seconds = 0, zo2_step_seconds = 0;  // predicted, ZO2 on one GPU
  const char* bound = "";  // what limits a block: "PCIe" or "update + NVLink + GEMM"
  double speedup() const { return zo2_step_seconds / step_seconds; }
};

/// Every block offloaded (K = 0: `in` must say so), the n GPUs of one node
/// slicing them; the P of `in` splits the evaluations, D = n / P replicas
/// each take a micro-batch of `in`'s size. Throws distzo::Error unless P
/// divides n.
SlicedSchedule sliced_schedule(const PlanInputs& in, int gpus, const Bandwidths& bw);

std::string describe_sliced_schedule(const PlanInputs& in, const SlicedSchedule& s,
                                     const Bandwidths& bw);

}  // namespace distzo::app
