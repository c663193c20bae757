#include "sim/des/des_engine.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <chrono>
#include <map>
#include <memory>

#include "models/collective/flows.hpp"
#include "sim/costs/uplink_sharing.hpp"
#include "sim/des/compute_pace.hpp"
#include "sim/des/platform.hpp"
#include "sim/des/quotient_platform.hpp"
#include "sim/des/symmetry.hpp"

namespace sg4 = simgrid::s4u;

namespace micsim::des {

namespace {

struct NodeState {
  std::vector<double> start, end;
  std::vector<char> done;
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr cv;
  int active_comms = 0;
};

struct Rendezvous {
  int arrived = 0, done = 0;
  sg4::SemaphorePtr started, finished;
};

// A collective as one block node of a quotient run sees it (precomputed: the groups and flows of a
// run repeat every micro-step).
struct BlockCollective {
  int front = 0;                   // the group's first node: with the task, names the rendezvous
  std::vector<int> members;        // the group's nodes inside the block
  struct Flow {
    sg4::Host* from;
    sg4::Mailbox* to;
    double bytes;
  };
  std::vector<Flow> flows;
};

class Run {
 public:
  // `plat` for a run of every node, `quotient` for a run of the block of `sym` (sim/des/symmetry.hpp).
  Run(const PreparedSimulation& p, const ClusterTopology& topo, const Platform* plat, QuotientPlatform* quotient,
      const NodeSymmetry& sym, double interference_speed)
      : p_(p), g_(p.graph), topo_(topo), plat_(plat), quotient_(quotient), nodes_(sym.period),
        world_nodes_(p.layout.nodes), speed_(interference_speed) {
    state_.resize(nodes_);
    for (auto& s : state_) {
      s.start.assign(g_.size(), 0);
      s.end.assign(g_.size(), 0);
      s.done.assign(g_.size(), 0);
      s.mutex = sg4::Mutex::create();
      s.cv = sg4::ConditionVariable::create();
    }
    for (size_t i = 0; i < g_.size(); ++i) by_stream_[int(g_[i].stream)].push_back(uint32_t(i));
    ctx_.gpus_per_node = topo.gpus_per_node;
    ctx_.nic_links = topo.nic_links;
    const auto& inst = p.scenario.cluster.instance;
    ctx_.nvlink_bytes_per_s = inst.intra.bytes_per_s_per_gpu;
    ctx_.nic_link_bytes_per_s = inst.network.node_bytes_per_s() / topo.nic_links;
    merge_nic_flows_ = nic_flows_mergeable();
    // Slow nodes, stragglers and jitter drawn per node and micro-step; a quotient run simulates the copy
    // of the block that holds the cluster's slowest sync group (the one that sets the pace where groups
    // meet), with that copy's factors (sim/des/compute_pace.hpp).
    pace_ = sample_compute_pace(p, world_nodes_, nodes_);
    block_offset_ = pace_.block_offset;
    if (quotient_) prepare_block_collectives();
  }

  // The cluster's node that a simulated node is.
  int world_node(int n) const { return block_offset_ + n; }

  void spawn() {
    for (int n = 0; n < nodes_; ++n)
      for (int s = 0; s < kStreamCount; ++s)
        sg4::Actor::create(fmt::format("node{}-{}", n, to_string(StreamId(s))), compute_host(n),
                           [this, n, s] { stream_actor(n, s); });
  }

  std::vector<NodeState>& state() { return state_; }
  size_t flows() const { return flows_; }
  size_t events() const { return events_; }

 private:
  const PreparedSimulation& p_;
  const TaskGraph& g_;
  const ClusterTopology& topo_;
  const Platform* plat_;
  QuotientPlatform* quotient_;
  int nodes_, world_nodes_;  // simulated (the block), in the cluster
  double speed_;
  std::vector<NodeState> state_;
  std::vector<uint32_t> by_stream_[kStreamCount];
  std::map<std::pair<uint32_t, int>, std::shared_ptr<Rendezvous>> rendezvous_;
  FlowContext ctx_;
  ComputePace pace_;                    // compute factors per simulated node and micro-step
  int block_offset_ = 0;                 // the first cluster node of the simulated copy of the block
  std::vector<BlockCollective> block_;                  // quotient runs: [comm op x block node]
  size_t flows_ = 0, events_ = 0;
  bool merge_nic_flows_ = false;
  std::vector<std::vector<sg4::Mailbox*>> inboxes_;  // [node][gpu, then the node's NICs], made on first use

  // Fewer, larger flows where it changes nothing: when every collective's inter-node traffic uses all
  // NIC links of a node alike (the same bytes on each) and no NIC is degraded, the flows of one node
  // over its L links are sent as one flow of L times the bytes between the nodes' NIC hosts, whose
  // link to the gateway has the links' summed rate. Max-min sharing then gives each node and each
  // collective the same rates as the L flows had (on a NIC link, an uplink, or between collectives
  // on the same node, everything is scaled by L alike), with L times fewer flows to resolve. If any
  // collective uses a subset of the links (NIC sharing between groups) the flows stay per link.
  bool nic_flows_mergeable() const {
    if (topo_.nic_links <= 1 || !p_.scenario.what_if.degraded.empty()) return false;
    const std::vector<int> pair = {0, 1};
    for (const auto& cost : p_.costs.comm) {
      if (cost.estimate.inter_time_s <= 0) continue;
      int inter = 0;
      for (const FlowSpec& f : collective_flows(cost.estimate, ctx_, 0, pair)) inter += f.tier == Tier::Inter && f.bytes > 0;
      if (inter != topo_.nic_links) return false;
    }
    return true;
  }

  // The flows `node` sends for a collective, merged per node where nic_flows_mergeable() allows
  // (gpu = -1 stands for the node's NIC host).
  std::vector<FlowSpec> flows_of(const CollectiveEstimate& est, int node, const std::vector<int>& ring) const {
    std::vector<FlowSpec> flows = collective_flows(est, ctx_, node, ring);
    if (!merge_nic_flows_) return flows;
    std::vector<FlowSpec> out;
    FlowSpec merged{Tier::Inter, node, -1, node, -1, 0.0};
    for (const FlowSpec& f : flows) {
      if (f.tier != Tier::Inter) {
        out.push_back(f);
        continue;
      }
      merged.dst_node = f.dst_node;
      merged.bytes += f.bytes;
    }
    if (merged.bytes > 0) out.push_back(merged);
    return out;
  }
  static inline char kPayload = 0;

  // Flows are mailbox messages to a GPU's inbox, whose permanent receiver (a daemon on that GPU)
  // makes them start the moment they are sent. Not SimGrid's host-to-host sendto: 3.32 detaches
  // those and keeps every one in flight in a single global list that each completion walks, which
  // made the engine quadratic in the flows in flight (SimGrid >= 4.0 keeps a set). The daemon only
  // takes delivered messages out of the inbox; it sets no time.
  sg4::Host* host_of(int node, int gpu) const { return gpu < 0 ? plat_->nics[node] : plat_->gpu[node][gpu]; }
  sg4::Host* compute_host(int node) const { return quotient_ ? quotient_->compute[node] : plat_->compute[node]; }

  sg4::Mailbox* inbox(int node, int gpu) {
    const int gpus = p_.layout.gpus_per_node;
    if (inboxes_.empty()) inboxes_.assign(nodes_, std::vector<sg4::Mailbox*>(gpus + 1, nullptr));
    sg4::Mailbox*& box = inboxes_[node][gpu < 0 ? gpus : gpu];
    if (!box) box = inbox_on(host_of(node, gpu));
    return box;
  }

  static sg4::Mailbox* inbox_on(sg4::Host* host) {
    sg4::Mailbox* box = sg4::Mailbox::by_name(host->get_name() + "-inbox");
    auto drain = sg4::Actor::create(host->get_name() + "-receiver", host, [box] {
      for (;;) box->get<char>();
    });
    drain->daemonize();
    box->set_receiver(drain);
    return box;
  }

  // Quotient runs: every collective's group and flows for every block node, and the hosts their ends
  // need (which the platform makes before it is sealed). A flow to node m goes to m's block copy,
  // m mod B, through the uplinks when the full route would cross them.
  void prepare_block_collectives() {
    const size_t ops = g_.comm_ops.size();
    block_.resize(ops * size_t(nodes_));
    std::vector<std::vector<std::pair<FlowEnd, FlowEnd>>> ends(block_.size());
    for (size_t op = 0; op < ops; ++op)
      for (int n = 0; n < nodes_; ++n) {
        const std::vector<int> ring = group_nodes(g_.comm_ops[op].group, p_.layout, n);
        BlockCollective& bc = block_[op * nodes_ + n];
        bc.front = ring.front();
        for (int m : ring)
          if (m < nodes_) bc.members.push_back(m);
        for (const FlowSpec& f : flows_of(p_.costs.comm[op].estimate, n, ring)) {
          if (f.bytes <= 0) continue;
          const bool crossing = topo_.leaf_of_node[f.src_node] != topo_.leaf_of_node[f.dst_node];
          ends[op * nodes_ + n].push_back({{f.src_node, f.src_gpu, f.tier, crossing}, {f.dst_node % nodes_, f.dst_gpu, f.tier, crossing}});
          bc.flows.push_back({quotient_->sender(ends[op * nodes_ + n].back().first), nullptr, f.bytes});
          quotient_->receiver(ends[op * nodes_ + n].back().second);
        }
      }
    quotient_->seal();
    std::map<sg4::Host*, sg4::Mailbox*> boxes;
    for (size_t i = 0; i < block_.size(); ++i)
      for (size_t k = 0; k < block_[i].flows.size(); ++k) {
        sg4::Host* to = quotient_->receiver(ends[i][k].second);
        sg4::Mailbox*& box = boxes[to];
        if (!box) box = inbox_on(to);
        block_[i].flows[k].to = box;
      }
  }

  void wait_for(int n, uint32_t dep) {
    NodeState& s = state_[n];
    if (s.done[dep]) return;
    std::unique_lock<sg4::Mutex> lock(*s.mutex);
    s.cv->wait(lock, [&] { return s.done[dep] != 0; });
  }

  void finish(int n, uint32_t t) {
    NodeState& s = state_[n];
    s.end[t] = sg4::Engine::get_clock();
    std::unique_lock<sg4::Mutex> lock(*s.mutex);
    s.done[t] = 1;
    s.cv->notify_all();
  }

  void comm_begin(int n) {
    if (state_[n].active_comms++ == 0) compute_host(n)->set_pstate(1);
  }
  void comm_end(int n) {
    if (--state_[n].active_comms == 0) compute_host(n)->set_pstate(0);
  }

  void stream_actor(int n, int stream) {
    for (uint32_t t : by_stream_[stream]) {
      const Task& task = g_[t];
      for (uint32_t d = task.deps_begin; d < task.deps_end; ++d) wait_for(n, g_.deps[d]);
      state_[n].start[t] = sg4::Engine::get_clock();
      if (task.kind == TaskKind::PipelineBubble) {
        sg4::this_actor::sleep_for(p_.costs.compute_s[task.op]), ++events_;  // idle, not slowed by traffic
      } else if (task.stream == StreamId::Compute) {
        const double seconds = p_.costs.compute_s[task.op] * pace_.at(n, task.micro_step);
        if (seconds > 0) compute_host(n)->exec_init(seconds * speed_)->wait(), ++events_;
      } else if (is_compute(task.kind)) {
        // A copy on a communication stream (hierarchical gather, step 2): device memory, no network.
        sg4::this_actor::sleep_for(p_.costs.compute_s[task.op]), ++events_;
      } else {
        collective(n, t);
      }
      finish(n, t);
    }
  }

  // A collective is a rendezvous of its group: members arrive when their stream reaches it; the last
  // to arrive starts it (the group's links become busy, the launch latency passes), then every member
  // sends its own flows, and all leave together when the last flow of any member has arrived. Each
  // member issues its own flows (not the last arrival all of them): SimGrid keeps an actor's pending
  // communications in a list it walks on every completion, so one actor holding a whole group's
  // flows made each collective quadratic in its size.
  void collective(int n, uint32_t t) {
    const Task& task = g_[t];
    const CommOp& op = g_.comm_ops[task.op];
    const CommCost& cost = p_.costs.comm[task.op];
    // A launch that had to wait for a device synchronize (framework profile) delays this rank's arrival.
    if (op.serial_host_s > 0) sg4::this_actor::sleep_for(op.serial_host_s);
    // The group's nodes that this run simulates (a quotient run: those inside the block).
    const BlockCollective* block = quotient_ ? &block_[task.op * size_t(nodes_) + n] : nullptr;
    const std::vector<int> ring = block ? std::vector<int>{} : group_nodes(op.group, p_.layout, n);
    const std::vector<int>& simulated = block ? block->members : ring;
    const int members = int(simulated.size());
    auto key = std::make_pair(t, block ? block->front : ring.front());
    std::shared_ptr<Rendezvous>& slot = rendezvous_[key];
    if (!slot) {
      slot = std::make_shared<Rendezvous>();
      slot->started = sg4::Semaphore::create(0);
      slot->finished = sg4::Semaphore::create(0);
    }
    std::shared_ptr<Rendezvous> rv = slot;
    if (++rv->arrived < members) {
      rv->started->acquire();
    } else {
      for (int m : simulated) comm_begin(m);
      if (cost.estimate.latency_s > 0) sg4::this_actor::sleep_for(cost.estimate.latency_s);
      for (int i = 1; i < members; ++i) rv->started->release();
    }
    std::vector<sg4::CommPtr> comms;
    if (block) {
      for (const BlockCollective::Flow& f : block->flows) {
        sg4::this_actor::set_host(f.from);
        comms.push_back(f.to->put_async(&kPayload, uint64_t(f.bytes)));
      }
    } else {
      for (const FlowSpec& f : flows_of(cost.estimate, n, ring)) {
        if (f.bytes <= 0) continue;
        // The flow leaves from its GPU's host: the sending actor moves there (a comm's route is fixed
        // when it starts), and lands at once in the destination GPU's inbox (see inbox()).
        sg4::this_actor::set_host(host_of(f.src_node, f.src_gpu));
        comms.push_back(inbox(f.dst_node, f.dst_gpu)->put_async(&kPayload, uint64_t(f.bytes)));
      }
    }
    flows_ += comms.size();
    events_ += comms.size() + 1;  // the flows and the rendezvous
    for (auto& c : comms) c->wait();
    if (++rv->done < members) {
      rv->finished->acquire();
      return;
    }
    rendezvous_.erase(key);
    for (int m : simulated) comm_end(m);
    for (int i = 1; i < members; ++i) rv->finished->release();
  }
};

StepTimeline timeline_of(const TaskGraph& g, const NodeState& s) {
  StepTimeline tl;
  tl.tasks.resize(g.size());
  for (size_t i = 0; i < g.size(); ++i) tl.tasks[i] = {s.start[i], s.end[i]};
  summarize_timeline(g, tl);
  return tl;
}


}  // namespace

DesOutcome run_simgrid(const PreparedSimulation& p, const DesOptions& opt) {
  auto wall0 = std::chrono::steady_clock::now();
  int argc = 2;
  char arg0[] = "micsim";
  char arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  // Exact alpha-beta behaviour: no TCP models (SimGrid network/model:CM02 with crosstraffic off), so idle
  // links give the analytic times.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
#ifdef MICSIM_SANITIZED
  // AddressSanitizer cannot follow SimGrid's raw stack switches: run actors as threads instead.
  sg4::Engine::set_config("contexts/factory:thread");
#endif
  const Scenario& sc = p.scenario;
  ClusterTopology topo = build_topology(sc.cluster.instance, sc.cluster.nodes, fabric_layout(sc.cluster), sc.what_if.degraded);
  const double speed = 1e9;  // compute hosts run one "flop" per ns: an Exec of d seconds has d·1e9 flops
  const double interference = p.compute_calibration.interference;
  // A symmetric cluster runs as its block of nodes (sim/des/symmetry.hpp); otherwise every node runs.
  const NodeSymmetry sym = opt.use_symmetry ? find_node_symmetry(p, topo) : NodeSymmetry{topo.nodes, topo.nodes, {}};
  Platform plat;
  std::unique_ptr<QuotientPlatform> quotient;
  if (sym.reduces())
    quotient = std::make_unique<QuotientPlatform>(topo, sym, speed, interference);
  else
    plat = build_platform(topo, speed, interference);
  Run run(p, topo, quotient ? nullptr : &plat, quotient.get(), sym, speed);
  run.spawn();
  engine.run();

  DesOutcome out;
  auto& st = run.state();
  double latest = -1;
  int critical = 0;
  for (int n = 0; n < int(st.size()); ++n) {
    double end = 0;
    for (double e : st[n].end) end = std::max(end, e);
    if (end > latest) latest = end, critical = n;
  }
  out.critical_node = run.world_node(critical);
  out.simulated_nodes = sym.period;
  out.critical = timeline_of(p.graph, st[critical]);
  if (opt.keep_all_timelines) {
    for (const auto& s : st) out.nodes.push_back(timeline_of(p.graph, s));
    for (int n = sym.period; n < sym.nodes; ++n) out.nodes.push_back(out.nodes[n % sym.period]);  // copies run alike
  }
  out.flows = run.flows();
  out.events = run.events();
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace micsim::des
