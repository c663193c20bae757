#pragma once
// Hardware as data: a GPU, the inter-node fabric, and an instance type (node) built from them.
// Values come from models/catalog/instances.yaml or an inline `cluster.instance:` mapping.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace micsim {

enum class GpuArch { Volta, Ampere, Hopper, Blackwell };
const char* to_string(GpuArch a);

enum class Precision { FP16, BF16, FP32 };
const char* to_string(Precision p);
std::optional<Precision> parse_precision(const std::string& s);  // "fp16" | "bf16" | "fp32"
inline int bytes_per_element(Precision p) { return p == Precision::FP32 ? 4 : 2; }

// The fused attention kernel a stack runs (training.attention_kernel). fa2 is the FlashAttention-2
// class, written for Ampere's mma.sync: flash-attn 2.x and PyTorch SDPA's flash backend; on Hopper it
// reaches about 30 % of peak. fa3 (flash-attn 3) and cuDNN's fused attention use Hopper's wgmma/TMA
// and reach 45-70 % there. triton is FlashAttention in Triton (flash_attn_triton.py on the pre-MLIR
// Triton, llm-foundry's attn_impl: triton), which FlashAttention-2 outruns 1.3-1.5x forward and ~2x
// backward (Dao 2023, arXiv 2307.08691 sec. 4.1, A100).
enum class AttentionKernel { FA2, FA3, CuDNN, Triton };
const char* to_string(AttentionKernel k);

// How a fused attention kernel's rate grows with sequence length S: every query tile pays a fixed cost
// (loading its queries, writing the output and log-sum-exp, under a causal mask the partly masked
// diagonal tiles and the short rows near the start) against a loop over the keys it attends to, so the
// kernel runs at its long-sequence efficiency x S / (S + half). `half` is the length at which it runs at
// half that rate, fitted per kernel on published sweeps (micsim calibrate --kernels); causal and full
// masks apart (causal tiles attend to S/2 keys on average). 0 = no length dependence.
struct AttentionSeqHalf {
  double causal = 0, full = 0;  // tokens
  double factor(double seq, bool is_causal) const {
    const double h = is_causal ? causal : full;
    return seq > 0 && h > 0 ? seq / (seq + h) : 1.0;
  }
};

// A fused attention kernel's measured fractions of peak at long sequences (backward 0 = as forward).
struct AttentionKernelEfficiency {
  double forward = 0, backward = 0;
  AttentionSeqHalf seq_half;  // all zero = the GPU's FlashAttention-2 class length terms
};

// One measured point of a GPU's power curve: at a limit of `limit_fraction` x TDP, compute-bound work
// runs at `throughput_fraction` of its rate at TDP.
struct PowerPoint {
  double limit_fraction = 1, throughput_fraction = 1;
};

struct GpuSpec {
  std::string name;
  GpuArch arch = GpuArch::Ampere;
  double memory_bytes = 0;                // capacity (GiB in the catalog)
  std::map<Precision, double> peak_flops; // FLOP/s, dense; absent = unsupported
  double hbm_bytes_per_s = 0;
  double gemm_efficiency = 0.8;           // achievable / peak for large GEMMs (default compute model)
  double gemm_dim_half = 32;              // GEMM efficiency x d/(d + half) for the smallest dimension d
  double gemm_overhead_s = 8e-6;          // fixed cost per GEMM (wave quantisation, tail)
  double attention_efficiency = 0.4;      // attention kernels (FlashAttention-2 class or batched GEMMs), forward, long sequences
  double attention_backward_efficiency = 0;  // backward (0 = as forward)
  AttentionSeqHalf attention_seq_half;    // the same kernels' rate against sequence length
  std::map<AttentionKernel, AttentionKernelEfficiency> attention_kernels;  // fa3, cudnn where measured on this GPU
  double peak_fp8_flops = 0;              // FLOP/s dense FP8 (0 = no FP8 tensor cores)
  double gemm_fp8_efficiency = 0;         // large FP8 GEMMs: achievable / FP8 peak (0 = as gemm_efficiency)
  double hbm_efficiency = 0.8;            // memory-bound kernels: achievable / HBM peak (STREAM-like copies)
  double sustained_gemm_scale = 1.0;      // GEMM efficiency in a training step / in a kernel benchmark (fitted on the corpus)
  double sustained_attention_scale = 0;   // attention time in a training step / in its kernel benchmark (fitted; 0 = the compute default)
  // Power: the board power its clocks are specified at, the limit it runs under (nvidia-smi -pl) and the
  // measured throughput of compute-bound work against the limit (models/hardware/power_limit.hpp).
  double tdp_w = 0;                       // 0 = not stated
  double power_limit_w = 0;               // 0 = its TDP
  std::vector<PowerPoint> power_curve;    // ascending limit fractions, the last at 1.0
  std::string power_curve_source;
  std::string source;
  bool supports(Precision p) const { return peak_flops.count(p) > 0; }
  double peak(Precision p) const;         // throws std::logic_error if unsupported (validated earlier)
};

// NCCL's algorithms. CollNet (in-network reduction, InfiniBand SHARP) runs only where the cluster has it
// (NetworkSpec::collnet): CollNetDirect and CollNetChain across nodes, and NVLS across nodes (NVLS inside
// each node, SHARP between them); without CollNet NVLS spans one node and NVLS-Tree crosses nodes.
enum class NcclAlgorithm { Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain };
const char* to_string(NcclAlgorithm a);
// "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"
std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& s);
inline constexpr NcclAlgorithm kAllNcclAlgorithms[] = {NcclAlgorithm::Ring, NcclAlgorithm::Tree, NcclAlgorithm::NVLS,
                                                       NcclAlgorithm::NVLSTree, NcclAlgorithm::CollNetDirect,
                                                       NcclAlgorithm::CollNetChain};

// The lowest per-hop latencyInter a fabric may have: NCCL's smallest network hop (ring LL, hwLat[NET] 2.7 us)
// stays above zero with it. Below zero means hops faster than NCCL's InfiniBand table assumes.
inline constexpr double kMinInterLatencyS = -2.5e-6;

// Node counts of the collective measurements a set of network terms rests on (a fabric's published rows,
// a calibration's logs): YAML `measured_nodes: [lo, hi]` (parse_node_range, models/hardware/catalog.hpp).
struct NodeRange {
  int lo = 0, hi = 0;
  NodeRange including(int nodes) const { return {std::min(lo, nodes), std::max(hi, nodes)}; }
  std::string str() const;  // "4 nodes" or "2-8 nodes"
  bool operator==(const NodeRange& o) const { return lo == o.lo && hi == o.hi; }
};

struct FabricSpec {
  std::string name;
  double latency_s = 0;                   // extra latency per inter-node step (NCCL graph.latencyInter; may be < 0, see NetworkParams)
  double fixed_latency_s = 0;             // once per collective that crosses nodes (NetworkParams::inter_fixed_latency_s)
  double bandwidth_efficiency = 0.9;      // fraction of NIC line rate reached by large transfers (2 nodes)
  double bandwidth_efficiency_at_scale = 0.9;  // the same when a collective spans many nodes (fabric hops, ECMP)
  std::vector<NcclAlgorithm> algorithms;  // enabled algorithms across nodes; empty = NCCL defaults
  bool ll128 = true;                      // LL128 across nodes: needs in-order 128-byte delivery end to end
  double ll128_efficiency = 1.0;          // LL128's inter-node bandwidth / what NCCL's model gives it (ring 0.92, tree 120/128 of Simple)
  double tree_efficiency_at_scale = 1.0;  // tree / NVLS-tree inter-node bandwidth / ring's, at >= 3 nodes
  // What one GPU's own path to the network carries where the fabric stages traffic through host memory (no
  // GPUDirect RDMA), bytes/s; 0 = no such limit (NetworkParams::gpu_path_bytes_per_s).
  double gpu_path_bytes_per_s = 0;
  double ramp_min = 1.0;                  // bandwidth efficiency ramp (see NetworkParams): floor ...
  double ramp_half_bytes = 0;             // ... and the per-rank step size at which it is half way up
  // The network latency the NCCL net plugin reports to NCCL's tuning model (ncclNetProperties.latency, us;
  // NCCL >= 2.12): it steers NCCL's choice of algorithm and protocol, not the transfer itself.
  double nccl_net_latency_s = 0;
  // Fraction of the NICs' line rate a CollNet (SHARP) all_reduce reaches through the switches' reduction
  // trees; < 0 when the catalog states none: then the two-node ring efficiency (NetworkParams::from_instance).
  double collnet_efficiency = -1;
  // The switches can reduce in the network (InfiniBand SHARP): a cluster on this fabric may enable CollNet.
  bool sharp = false;
  // Node counts of the published collective measurements its terms were fitted or checked on (catalog
  // `measured_nodes`; none: the terms are assumed). Beyond hi, the efficiency at scale is an extrapolation
  // of the 1/n form (NetworkParams::inter_efficiency_for), and simulate says so.
  std::optional<NodeRange> measured_nodes;
  std::string source;
  // A line for a user whose collectives span `nodes` nodes outside that range ("" inside it or on one node).
  std::string extrapolation_note(int nodes) const;
};

struct IntraNodeSpec {
  std::string kind = "nvlink";            // nvlink | pcie
  double bytes_per_s_per_gpu = 0;         // NCCL effective, per GPU per direction
  bool nvls = false;                      // NVLink SHARP (NVSwitch gen3)
  double ramp_min = 1.0;                  // NVLink bandwidth efficiency ramp: floor ...
  double ramp_half_bytes = 0;             // ... and half-way per-rank step size
  double call_overhead_s = 0;             // host/launch cost per collective call on this instance
};

struct NetworkSpec {
  int nics = 1;
  double bits_per_s_per_nic = 0;
  FabricSpec fabric;
  // In-network reduction usable by NCCL: SHARP-capable switches, the CollNet plugin
  // (nccl-rdma-sharp-plugins) and NCCL_COLLNET_ENABLE=1. NCCL leaves CollNet off by default.
  bool collnet = false;
  double node_bytes_per_s() const { return nics * bits_per_s_per_nic / 8.0; }
};
// Why this network cannot run CollNet ("" when it can, or does not ask to): it asks for it on a fabric whose
// switches do not reduce (FabricSpec::sharp).
std::string collnet_problem(const NetworkSpec& n);
// The same for a network asked to run CollNet, whatever it says itself (a --collnet flag).
inline std::string collnet_problem_if_enabled(NetworkSpec n) {
  n.collnet = true;
  return collnet_problem(n);
}

struct InstanceSpec {
  std::string name;
  GpuSpec gpu;
  int gpus_per_node = 8;
  IntraNodeSpec intra;
  NetworkSpec network;
  std::optional<double> price_usd_per_hour;  // on-demand, whole instance
  bool price_explicit = false;               // given in the instance entry (else from the price book)
  std::string price_note;
  std::string nccl_tuner;                    // NCCL tuner plugin the instance's images load (nccl_tuners.yaml); "" = none
  // NCCL_PROTO as the instance's network plugin sets it for the whole process (every collective, inside
  // a node too), e.g. "simple"; "" = NCCL's free choice. Comma-separated LL, LL128, Simple (any case).
  std::string nccl_proto;
  // Who picks each collective's algorithm and protocol: NCCL, from its own cost model (false, what runs), or
  // a what-if tuner that knows this network's measured costs and always takes the fastest (true).
  bool choose_fastest = false;
  // The hosts' CPU vendor, "intel" or "amd": NCCL picks its LL bandwidth cap across nodes by it.
  std::string cpu = "intel";
  std::string source;
};

}  // namespace micsim
