#pragma once
// Collectives as NCCL runs them. One request (operation, bytes, how the group's ranks sit on nodes)
// gives one estimate: the algorithm and protocol NCCL would pick (minimum predicted time, as NCCL's
// tuner does), the time, and the bytes each tier carries. Sizes follow nccl-tests: `bytes` is the
// whole gathered buffer for all_gather, the whole input for reduce_scatter, the buffer for all_reduce.
//
// Where to look: ring.cpp, tree.cpp, nvls.cpp, collnet.cpp say how each algorithm moves bytes;
// nccl_constants.cpp holds NCCL's latency/bandwidth tables; collective_model.cpp picks the fastest.
#include <optional>
#include <string>
#include <vector>

#include "models/collective/nccl_tuner.hpp"
#include "models/hardware/hardware.hpp"

namespace micsim {

enum class CollectiveOp { AllGather, ReduceScatter, AllReduce, Broadcast, Reduce };
const char* to_string(CollectiveOp op);
std::optional<CollectiveOp> parse_collective_op(const std::string& s);  // "all_gather", ...

enum class Protocol { LL, LL128, Simple };
const char* to_string(Protocol p);
std::optional<Protocol> parse_protocol(const std::string& s);  // "LL", "LL128", "Simple"
// An NCCL_PROTO value ("simple", "LL,LL128", "^LL128"; any case) as the protocols it allows; nullopt if
// an item is not a protocol or nothing is left; an empty string allows all (empty vector).
std::optional<std::vector<Protocol>> parse_nccl_proto(const std::string& value);
// What a loader says when parse_nccl_proto refuses a value.
inline constexpr const char* kNcclProtoExpected =
    "expected a comma-separated list of LL, LL128, Simple, or ^ and the ones to leave out (as NCCL_PROTO)";

// A class of link. NVLink/NVSwitch inside a node; the node's NICs and the fabric between nodes.
enum class Tier { Intra, Inter };
const char* to_string(Tier t);

// How one communicator's ranks sit on the cluster. Groups are node-aligned: `ranks_per_node` ranks of
// the group on each of `nodes` nodes. `concurrent_groups` is how many groups of the same shape run the
// same collective at the same time on each node (they share the node's NICs).
struct GroupLayout {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  int concurrent_groups = 1;
  static GroupLayout make(int ranks, int nodes, int concurrent_groups = 1);
};

// The network as the collective model sees it: catalog values, then calibration.
struct NetworkParams {
  GpuArch arch = GpuArch::Ampere;
  double intra_bytes_per_s = 240e9;     // per GPU per direction (NCCL effective NVLink)
  double intra_efficiency = 0.98;       // ring busbw at the top of the ramp / intra_bytes_per_s (A100 fit 0.980)
  double intra_latency_scale = 1.0;     // multiplies NCCL's NVLink hardware latencies
  bool nvls = false;
  double nvls_efficiency = 0.73;        // NVLS all_reduce algbw / intra_bytes_per_s (fitted: p5 0.717, Azure NDv5 0.739)
  double inter_node_bytes_per_s = 50e9; // NICs x line rate, per node
  // One GPU's own path to the network where the fabric stages traffic through host memory (no GPUDirect
  // RDMA: p3dn's EFA), bytes/s; 0 = no limit. It binds only where few GPUs per node carry a group's traffic
  // (one GPU per node: 2.6 GB/s on p3dn where the node's NIC gives 7.5). nic_bandwidth_for applies it.
  double gpu_path_bytes_per_s = 0;
  double inter_efficiency = 0.9;        // fabric bandwidth_efficiency (collective over 2 nodes)
  double inter_efficiency_at_scale = 0.9;  // asymptote for collectives over many nodes
  double inter_latency_s = 0;           // fabric latency per inter-node step (NCCL latencyInter), >= kMinInterLatencyS
  // Once per collective whose group spans nodes, beside NCCL's per-hop sum. NCCL's model charges a
  // network crossing only per hop (hwLat[NET] + latencyInter), so a fabric whose hops cost less than
  // NCCL's IB table says but whose first crossing costs more (a proxy thread, a doorbell, a GDR flush)
  // is fitted with a smaller, even negative, latencyInter and this term: on H100 InfiniBand NDR a small
  // all_reduce takes ~30 us at 2 nodes and ~36 us at 4 (validation/data/nccl-tests), a 3-us hop where
  // NCCL's tree LL hop is 5 us + latencyInter.
  double inter_fixed_latency_s = 0;
  // That cost for a group over `nodes` nodes: none inside one node.
  double crossing_latency(int nodes) const { return nodes > 1 ? inter_fixed_latency_s : 0.0; }
  // Protocol and algorithm terms across nodes, relative to NCCL's own model. NCCL gives LL128 0.92 (ring)
  // or 120/128 (tree) of Simple's bandwidth; a fabric that delivers 128-byte lines slower than Simple's
  // large chunks reaches a fraction of that (inter_ll128_efficiency < 1). Trees over >= 3 nodes pipeline
  // through interior nodes that send and receive for both trees at once; where the fabric loses
  // bandwidth to that, tree and NVLS-tree reach inter_tree_efficiency of a ring's.
  double inter_ll128_efficiency = 1.0;
  double inter_tree_efficiency = 1.0;
  double call_overhead_s = 0;           // host/launch cost per collective call (instance-specific)
  // What NCCL's tuning model is told of the network: the latency its net plugin reports (FabricSpec).
  double nccl_net_latency_s = 0;
  // Algorithm/protocol picked by the fastest calibrated cost (a what-if tuner) instead of by NCCL's model.
  bool choose_fastest = false;
  bool amd_cpu = false;                 // the hosts' CPU vendor: NCCL's LL bandwidth cap across nodes depends on it
  // In-network reduction (InfiniBand SHARP through the CollNet plugin, NCCL_COLLNET_ENABLE=1): CollNet-Direct,
  // CollNet-Chain and NVLS across nodes become all_reduce candidates (collnet.cpp).
  bool collnet = false;
  double collnet_efficiency = 0.9;      // SHARP all_reduce through the NICs: fraction of their line rate
  // NCCL's own rating of CollNet-Direct's bandwidth (tuning.cc: x 0.85 on compute capability >= 9.0); the
  // transfer itself has no such factor, so only as_nccl_models_it() sets it.
  double collnet_direct_rating = 1.0;
  int channels = 16;
  // Size-dependent bandwidth efficiency of the Simple and LL128 pipelines (the mid-size ramp seen in
  // every nccl-tests curve): a ring step of s bytes per rank (S/n) runs at
  //   e(s) = e_min + (1 - e_min) · s / (s + s_half)
  // of the tier's rate. Small steps (small messages, or many ranks) waste bandwidth; e_min = 1 turns it off.
  double intra_ramp_min = 1.0, intra_ramp_half_bytes = 0;
  double inter_ramp_min = 1.0, inter_ramp_half_bytes = 0;
  int gpus_per_node = 8;
  int nics = 1;
  std::vector<NcclAlgorithm> inter_algorithms;  // allowed across nodes (empty = all)
  std::vector<Protocol> inter_protocols;        // allowed across nodes (empty = all)
  std::vector<Protocol> protocols;              // allowed for every collective: the instance's NCCL_PROTO (empty = all)
  // The tuner plugin the instance loads (nullptr: none). Where one of its regions holds a collective,
  // its choice replaces the fastest-candidate rule, and it may pick a protocol the fabric's free
  // choice excludes (inter_protocols), as the plugin does on NCCL's cost table.
  const NcclTuner* tuner = nullptr;
  std::string source;

  static NetworkParams from_instance(const InstanceSpec& inst);
  // The network as NCCL's own tuning model (tuning.cc) sees it when it picks an algorithm and protocol:
  // its constants (NVLS at its own nvlsEfficiency), the links at their nominal rates, the plugin's reported
  // latency, and none of the efficiencies, ramps or latencies measured on the fabric (NCCL does not know them).
  NetworkParams as_nccl_models_it() const;
  // Fraction of the NIC line rate a collective spanning `nodes` nodes reaches. Two nodes sit on one
  // switch; more nodes cross the fabric, where flow collisions cost bandwidth (EFA 2019: rings at 7.5 GB/s
  // on 2 nodes, NVIDIA/nccl-tests#22; 6-8 GB/s on 8-32, NVIDIA/nccl#235): e(k) = e_scale + (e_2 - e_scale)·2/k.
  double inter_efficiency_for(int nodes) const;
  // Tree and NVLS-tree bandwidth across `nodes` nodes relative to a ring's: 1 up to two nodes (no
  // interior nodes), inter_tree_efficiency beyond.
  double tree_efficiency_for(int nodes) const { return nodes > 2 ? inter_tree_efficiency : 1.0; }
  // Inter-node bandwidth one group gets on a node: the node's NICs split among `concurrent_groups`
  // groups, and never more than its `ranks_per_node` GPUs can drive (a GPU reaches its own NICs:
  // nics/gpus_per_node of them when there are more NICs than GPUs, else one shared NIC).
  double inter_bandwidth_for(const GroupLayout& g) const { return nic_bandwidth_for(g, inter_efficiency_for(g.nodes)); }
  // The same at a given fraction of the NICs' line rate (CollNet's, collnet.cpp).
  double nic_bandwidth_for(const GroupLayout& g, double efficiency) const;
  static double ramp_efficiency(double step_bytes, double e_min, double half_bytes);
  double intra_ramp(double step_bytes) const { return ramp_efficiency(step_bytes, intra_ramp_min, intra_ramp_half_bytes); }
  double inter_ramp(double step_bytes) const { return ramp_efficiency(step_bytes, inter_ramp_min, inter_ramp_half_bytes); }
};

struct CollectiveEstimate {
  CollectiveOp op = CollectiveOp::AllReduce;
  double bytes = 0;
  GroupLayout layout;
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  Protocol protocol = Protocol::Simple;
  double time_s = 0;
  double latency_s = 0;                 // the size-independent part
  double intra_bytes_per_gpu = 0;       // bytes each GPU sends over NVLink/NVSwitch
  double inter_bytes_per_node = 0;      // bytes each node sends through its NICs, for this group
  Tier bottleneck = Tier::Intra;        // tier whose transfer time dominates
  double intra_time_s = 0;              // transfer time on each tier (protocol and ramp included);
  double inter_time_s = 0;              // time_s = latency_s + max(intra_time_s, inter_time_s)
  const NcclTuner* tuner = nullptr;     // the plugin whose region chose algorithm/protocol (nullptr: NCCL's cost model)
  double algbw() const { return time_s > 0 ? bytes / time_s : 0; }
  double busbw() const;
};

// nccl-tests' bus-bandwidth factor for an operation over n ranks (PERFORMANCE.md).
double busbw_factor(CollectiveOp op, int ranks);

struct CollectiveChoice {                // what-if overrides, like NCCL_ALGO / NCCL_PROTO
  std::optional<NcclAlgorithm> algorithm;
  std::optional<Protocol> protocol;
};

// One algorithm+protocol candidate; nullopt when it does not apply (e.g. tree for all_gather).
std::optional<CollectiveEstimate> estimate_ring(const NetworkParams& net, CollectiveOp op, double bytes,
                                                const GroupLayout& g, Protocol proto);
std::optional<CollectiveEstimate> estimate_tree(const NetworkParams& net, CollectiveOp op, double bytes,
                                                const GroupLayout& g, Protocol proto);
std::optional<CollectiveEstimate> estimate_nvls(const NetworkParams& net, CollectiveOp op, double bytes,
                                                const GroupLayout& g, Protocol proto);
// CollNet-Direct, CollNet-Chain or NVLS across nodes (`algorithm`), where the network has CollNet.
std::optional<CollectiveEstimate> estimate_collnet(const NetworkParams& net, CollectiveOp op, double bytes,
                                                   const GroupLayout& g, Protocol proto, NcclAlgorithm algorithm);

class CollectiveModel {
 public:
  explicit CollectiveModel(NetworkParams net) : net_(std::move(net)) {}
  // What runs: the algorithm/protocol NCCL's own model rates fastest among those allowed (or the tuner
  // plugin's, or the truly fastest when the network says choose_fastest), costed on the calibrated network.
  // Ties are broken by a fixed order, so results are deterministic.
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const GroupLayout& g,
                              const CollectiveChoice& choice = {}) const;
  // Every applicable candidate, for reports and tests.
  std::vector<CollectiveEstimate> candidates(CollectiveOp op, double bytes, const GroupLayout& g) const;
  const NetworkParams& network() const { return net_; }
  // What the network's tuner plugin forces here, if anything (NCCL_ALGO/NCCL_PROTO overrides win over it).
  std::optional<CollectiveEstimate> tuner_choice(CollectiveOp op, double bytes, const GroupLayout& g) const;

 private:
  NetworkParams net_;
};

// The MiCS hierarchical all-gather of a partition group spanning k nodes with g GPUs each
// (docs/reference/mics.md §5.3): (1) inter-node all-gather among the k GPUs that share a local
// rank (g such groups run at once and share the NICs), (2) re-arrangement copy, (3) intra-node
// all-gather, issued as k coalesced sub-all-gathers.
struct HierarchicalAllGather {
  CollectiveEstimate inter;
  double copy_bytes = 0;                // bytes each GPU copies in step 2
  CollectiveEstimate intra;             // the k coalesced sub-all-gathers, as one estimate
  double inter_bytes_per_node() const { return inter.inter_bytes_per_node * inter.layout.concurrent_groups; }
};
HierarchicalAllGather estimate_hierarchical_allgather(const CollectiveModel& model, double bytes, int nodes,
                                                      int gpus_per_node, int partition_groups_per_node = 1);

}  // namespace micsim
