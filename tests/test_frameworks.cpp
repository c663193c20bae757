// Framework profiles: each one's distinguishing mechanism shown on a small scenario, ideal = micsim's
// original schedule, and the MiCS paper's headline reproduced by mechanism (DeepSpeed of 2021 vs the
// MiCS prototype), with DeepSpeed issue #1069's published ZeRO-3 throughput on p3dn as an outside check.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "helpers.hpp"
#include "sim/des/simulate_simgrid.hpp"
#include "validation/training_corpus.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

namespace {

struct Counted {
  SimulationResult r;
  int gathers = 0, reduces = 0, all_reduces = 0, host_tasks = 0, copies = 0;
};

Counted count(const Scenario& sc) {
  PreparedSimulation p = prepare_simulation(sc, {0});  // every micro-step built
  Counted c;
  for (const auto& t : p.graph.tasks) {
    c.gathers += t.kind == TaskKind::ParamAllGather;
    c.reduces += t.kind == TaskKind::GradReduceScatter;
    c.all_reduces += t.kind == TaskKind::GradAllReduce;
    c.host_tasks += t.stream == StreamId::Host;
    c.copies += t.kind == TaskKind::ParamCopyOut;
  }
  c.r = simulate_analytic(p);
  return c;
}

Scenario bert(const std::string& kind, const std::string& framework, std::vector<std::string> extra = {}, int nodes = 2) {
  extra.push_back("strategy.framework=" + framework);
  return scenario("p4d.24xlarge", nodes, "bert-10b", kind, 8, 8 * 8 * nodes * 4, extra);
}

}  // namespace

TEST_CASE("ideal is micsim's schedule: the same step as a scenario that names no framework") {
  for (const char* kind : {"zero3", "mics", "hsdp", "ddp", "zero2"}) {
    auto plain = run(scenario("p4d.24xlarge", 2, "bert-10b", kind, 8, 8 * 16 * 4));
    auto ideal = run(bert(kind, "ideal"));
    CHECK(ideal.iteration_time_s == plain.iteration_time_s);  // bit for bit
    CHECK(ideal.framework == "ideal");
  }
}

TEST_CASE("DeepSpeed of 2021 gathers per parameter tensor: more, smaller collectives than FSDP1's flat parameters") {
  auto ds = count(bert("zero3", "deepspeed", {"strategy.version=0.5.4"}));
  auto fsdp = count(bert("zero3", "fsdp1"));
  // BERT: Q, K, V, attention output, FFN up, FFN down per block (biases and norms persist).
  CHECK(ds.gathers > 5 * fsdp.gathers);
  CHECK(ds.reduces > 5 * fsdp.reduces);
  CHECK(ds.host_tasks > 0);
  // Its device synchronize at every fetch leaves the current module's gather exposed: slower than FSDP1.
  CHECK(ds.r.exposed_comm_s > fsdp.r.exposed_comm_s);
  CHECK(ds.r.iteration_time_s > fsdp.r.iteration_time_s);
  // Each mechanism costs time: removing it never makes the step slower (and the synchronize matters most).
  const double full = ds.r.iteration_time_s;
  for (const char* m : {"strategy.mechanisms.device_sync=false", "strategy.mechanisms.sync_per_collective=false",
                        "strategy.mechanisms.host_per_collective_us=0", "strategy.mechanisms.gather_granularity=unit"}) {
    auto without = run(bert("zero3", "deepspeed", {"strategy.version=0.5.4", m}));
    CHECK_MESSAGE(without.iteration_time_s <= full * (1 + 1e-9), m);
  }
  CHECK(run(bert("zero3", "deepspeed", {"strategy.version=0.5.4", "strategy.mechanisms.device_sync=false"})).iteration_time_s < 0.95 * full);
}

TEST_CASE("HSDP: FSDP1 all-reduces in every backward, FSDP2 can defer it to the last micro-step as MiCS does") {
  auto f1 = count(bert("hsdp", "fsdp1", {"strategy.partition_size=8"}));
  auto f2 = count(bert("hsdp", "fsdp2", {"strategy.partition_size=8", "strategy.two_hop_sync=true"}));
  CHECK(f1.all_reduces == 4 * f2.all_reduces);  // 4 micro-steps
  CHECK(f2.copies > 0);                          // FSDP2 copies gathered parameters out of the flat buffer
  CHECK(f1.copies == 0);
  // FSDP1 cannot defer: asking for it is an error at the key.
  CHECK_THROWS_AS(bert("hsdp", "fsdp1", {"strategy.partition_size=8", "strategy.two_hop_sync=true"}), InputError);
}

TEST_CASE("ZeRO-2 under FSDP is SHARD_GRAD_OP: a gather per unit before each forward and none after the step, where DeepSpeed gathers after it") {
  const int micro_steps = 4;
  auto kinds = [](const Scenario& sc) {
    PreparedSimulation p = prepare_simulation(sc, {0});  // every micro-step built
    std::map<TaskKind, int> n;
    std::map<TaskKind, double> bytes;
    for (const auto& t : p.graph.tasks)
      if (!is_compute(t.kind)) ++n[t.kind], bytes[t.kind] += p.graph.comm_ops[t.op].bytes;
    return std::make_tuple(n, bytes, p);
  };
  for (const char* fw : {"fsdp1", "fsdp2"}) {
    auto [n, bytes, p] = kinds(bert("zero2", fw));
    const int units = int(p.workload.units.size());
    CHECK(n[TaskKind::ParamAllGather] == micro_steps * units);  // forward only: kept through the backward
    CHECK(n[TaskKind::ParamAllGatherAfterStep] == 0);
    // Bytes conserved: each micro-batch gathers every unit's 16-bit parameters once (the head's tied
    // embedding with it, as under FULL_SHARD).
    double unit_params = 0;
    for (const auto& u : p.workload.units) unit_params += double(u.gather_params);
    CHECK(unit_params > double(p.workload.rank_params));
    CHECK(bytes[TaskKind::ParamAllGather] == rel_approx(micro_steps * 2.0 * unit_params).epsilon(1e-9));
    // Sharded at rest, the whole model gathered at the forward -> backward turn.
    CHECK(p.sharding.param_shards == p.layout.dp);
    CHECK(p.layout.dp == 16);
    CHECK(p.memory.params_bytes == rel_approx(2.0 * double(p.workload.rank_params) / p.layout.dp));
    CHECK(p.memory.gathered_params_bytes == rel_approx(2.0 * double(p.workload.rank_params)));
  }
  auto [ds, ds_bytes, pd] = kinds(bert("zero2", "deepspeed"));
  CHECK(ds[TaskKind::ParamAllGather] == 0);
  CHECK(ds[TaskKind::ParamAllGatherAfterStep] >= 1);
  CHECK(ds_bytes[TaskKind::ParamAllGatherAfterStep] == rel_approx(2.0 * double(pd.workload.rank_params)).epsilon(1e-9));
  CHECK(pd.memory.params_bytes == rel_approx(2.0 * double(pd.workload.rank_params)));
  // ZeRO-3 under FSDP1 gathers again in backward: twice SHARD_GRAD_OP's gathers.
  auto [z3, z3_bytes, p3] = kinds(bert("zero3", "fsdp1"));
  CHECK(z3[TaskKind::ParamAllGather] == 2 * micro_steps * int(p3.workload.units.size()));
}

TEST_CASE("error bands: a run's strategy family is whether it shards its parameters, FSDP's SHARD_GRAD_OP included") {
  auto row = [](const char* framework, const char* strategy) {
    CorpusRow r;
    r.framework = framework, r.strategy = strategy;
    return r;
  };
  CHECK(row("fsdp1", "zero2").sharded());  // SHARD_GRAD_OP: sharded at rest, gathered per unit in forward
  CHECK(row("fsdp2", "zero2").sharded());
  CHECK_FALSE(row("deepspeed", "zero2").sharded());  // stage 2 keeps whole parameters
  CHECK_FALSE(row("ideal", "zero2").sharded());
  CHECK(row("fsdp1", "zero3").sharded());
  CHECK(row("smp", "zero1").sharded());  // SageMaker's sharded data parallelism is MiCS
  CHECK_FALSE(row("deepspeed", "ddp").sharded());
  // simulate picks its band by the same rule.
  CHECK(shards_parameters(bert("zero2", "fsdp1").strategy));
  CHECK_FALSE(shards_parameters(bert("zero2", "deepspeed").strategy));
}

TEST_CASE("framework and strategy must go together, versions resolve to their profile") {
  CHECK_THROWS_AS(bert("hsdp", "deepspeed"), InputError);      // DeepSpeed has no HYBRID_SHARD
  CHECK_THROWS_AS(bert("mics", "fsdp2"), InputError);          // FSDP has no MiCS gather
  CHECK_THROWS_AS(bert("zero3", "deepspeed", {"strategy.version=0.1"}), InputError);
  CHECK(bert("zero3", "deepspeed", {"strategy.version=0.5.4"}).strategy.framework->name == "deepspeed-2021");
  CHECK(bert("zero3", "deepspeed", {"strategy.version=0.5.8"}).strategy.framework->name == "deepspeed-0.5");
  CHECK(bert("mics", "deepspeed", {"strategy.version=0.5.4", "strategy.partition_size=8"}).strategy.framework->name == "deepspeed-mics-2021");
  CHECK(bert("zero3", "deepspeed", {"strategy.version=0.17.6"}).strategy.framework->name == "deepspeed");
  CHECK(bert("zero3", "deepspeed").strategy.framework->name == "deepspeed");
  CHECK(compare_versions("0.5.10", "0.5.4") > 0);
}

TEST_CASE("DeepSpeed 2021 ZeRO-3 on p3dn matches DeepSpeed issue #1069 (RoBERTa-10B, batch 8, 2-16 hosts) within 10 %") {
  // Published samples/s (deepspeedai/DeepSpeed#1069, 2021-05-13): 11.6, 23, 41, 77 on 2, 4, 8, 16 p3dn hosts.
  // Nothing was fitted to these rows: the profile's constants come from the code and from #1069's p4d timing,
  // the network's from nccl-tests. Hugging Face RoBERTa's attention of 2021 is eager PyTorch (as bing_bert's).
  // micsim gives 11.5, 21.5, 40.9, 77.1 (-1, -7, 0, 0 %; 11.6, 21.8, 41.3, 77.8 with a fused softmax). Until 2026-12-06 the
  // 2019 EFA fabric put a two-node ring at 10 GB/s (a figure that did not say its algorithm) instead of the
  // ring's measured 7.5 GB/s (NVIDIA/nccl-tests#22), and 2 hosts came out at 13.8 (+19 %; the bound was 20 %).
  const std::map<int, double> published = {{2, 11.6}, {4, 23}, {8, 41}, {16, 77}};
  for (const auto& [hosts, samples] : published) {
    auto r = run(scenario("p3dn.24xlarge", hosts, "roberta-10b", "zero3", 8, 8 * 8 * hosts,
                          {"strategy.framework=deepspeed", "strategy.version=0.5.4", "training.eager_attention=true"}));
    CHECK_MESSAGE(std::fabs(r.samples_per_s / samples - 1) <= 0.10, hosts << " hosts: " << r.samples_per_s);
  }
}

TEST_CASE("DeepSpeed 0.5 -> 0.6 ZeRO-3 on 8 p4d: the profiles' speed-up is PR #1453's (RoBERTa-10B, 1.68x) within 10 %") {
  // deepspeedai/DeepSpeed#1453 (Justin Chiu, MiCS co-author; in v0.6.0): on 8 p4d.24xlarge, batch 16 per
  // GPU, sequence 512, layer-wise activation checkpointing, "Roberta-10B: 54.86 -> 92.07 TFLOPS/GPU"
  // (1.678x). Nothing is fitted to it: the speed-up comes from the mechanisms the profiles read from the
  // code (per-parameter gathers after a device synchronize, list-form reductions and bucket waits in 0.5;
  // coalesced per-module fetches on their own stream with a 2-deep queue in 0.6). The absolute figures are
  // not compared: micsim gives 77 -> 125 TFLOPS/GPU (+40 %, docs/frameworks.md sec 1.6). Hugging Face
  // RoBERTa of 2021: no FlashAttention, eager attention (1.62x and 1.56x; 1.65x and 1.59x with a fused softmax).
  auto at = [](const char* version) {
    return run(scenario("p4d.24xlarge", 8, "roberta-10b", "zero3", 16, 16 * 64,
                        {"strategy.framework=deepspeed", std::string("strategy.version=") + version, "training.flash_attention=false",
                         "training.eager_attention=true"}));
  };
  const double after = at("0.6.0").tflops_per_gpu;
  for (const std::string before : {"0.5.4", "0.5.10"}) {
    const double speedup = after / at(before.c_str()).tflops_per_gpu;
    MESSAGE("DeepSpeed " << before << " -> 0.6.0: " << speedup << "x");
    CHECK(std::fabs(speedup / (92.07 / 54.86) - 1) <= 0.10);
  }
}

TEST_CASE("MiCS paper headline by mechanism: BERT-10B on 128 p3dn GPUs, MiCS / ZeRO-3 within 15 % of 2.82x") {
  auto at = [](const char* kind, int nodes) {
    return run(scenario("p3dn.24xlarge", nodes, "bert-10b", kind, 8, 8 * 8 * nodes * 4,
                        {"strategy.framework=deepspeed", "strategy.version=0.5.4", "strategy.partition_size=8", "training.eager_attention=true"}));
  };
  auto mics = at("mics", 16), zero3 = at("zero3", 16);
  const double ratio = mics.samples_per_s / zero3.samples_per_s;
  MESSAGE("MiCS / ZeRO-3 throughput: " << ratio);
  // Relative to the claim (doctest's Approx scales its epsilon by the larger of the two values, which let
  // this pass up to +17.6 %). Issue 12 asks for 15 %; micsim was at +13 % (3.19x) until jitter came to
  // meet only the ranks a micro-step synchronises with (docs/model.md §2.6): a MiCS rank with gradient
  // accumulation meets its partition group of 8 between the per-step all-reduces, a ZeRO-3 rank all 128
  // in every layer, so MiCS waits less, 3.38x (+20 %). Since 2026-12-03 the 16 partition groups also wait
  // at the step's end for the one whose 4 micro-steps added up slowest (jitter_compute_factor): 3.33x
  // (+18 %); 3.27x (+16 %) on 2026-12-06 after the analytic engine's byte conservation, then 3.30x (+17 %)
  // when the 2019 EFA fabric's two-node ring came to run at its measured 7.5 GB/s (which moves e(16) from
  // 0.5725 to 0.5475 of the NIC). Since 2026-12-06 (later) the model code is the paper's: bing_bert's
  // attention is eager PyTorch (training.eager_attention: the scores scaled and masked in passes of their
  // own, q/k/v copied into batches), which slows compute, MiCS's bound, and not ZeRO-3's network: 3.18x
  // (+12.7 %), inside the 15 %. With the fused scale-mask-softmax it is 3.30x (+17 %).
  CHECK(std::fabs(ratio / 2.82 - 1) <= 0.15);
  // Scaling efficiency 16 -> 128 GPUs (weak scaling), MiCS over ZeRO-3: within 15 % of 1.27x. 1.43x (+13 %)
  // until 2026-12-06, 1.27x (-0.3 %) since the two-node ring fix: ZeRO-3's 16-GPU base was 19 % faster than
  // DeepSpeed#1069 measured on 2 p3dn hosts (the test above), which made its scaling look worse.
  auto per_gpu = [](const SimulationResult& r) { return r.samples_per_s / r.world_size; };
  const double eff = (per_gpu(mics) / per_gpu(at("mics", 2))) / (per_gpu(zero3) / per_gpu(at("zero3", 2)));
  MESSAGE("scaling-efficiency ratio: " << eff);
  CHECK(std::fabs(eff / 1.27 - 1) <= 0.15);
  // The SimGrid engine (flows on the links; jitter drawn per node and micro-step with a seed, so a MiCS
  // group's four micro-steps average its noise as the analytic engine's closed form does): 3.25x (+15.3 %)
  // and 1.44x (+13 %), 2026-12-05; 3.28x (+16.3 %) and 1.27x (+0.0 %) after the two-node ring fix. Until
  // 2026-12-05 one draw per node lasted the whole step (3.19x, +13 %), which the analytic engine did not
  // share; now the engines agree within 1 % on MiCS and ZeRO-3 alike. With eager attention: 3.16x (+12.0 %)
  // and 1.28x (+0.8 %); seeds 1-8 give 3.11-3.17x and 1.26-1.29x.
  auto des = [&](const char* kind, int nodes) {
    return simulate_simgrid(prepare_simulation(scenario("p3dn.24xlarge", nodes, "bert-10b", kind, 8, 8 * 8 * nodes * 4,
                                                        {"strategy.framework=deepspeed", "strategy.version=0.5.4", "strategy.partition_size=8",
                                                         "training.eager_attention=true"})));
  };
  const auto dm = des("mics", 16), dz = des("zero3", 16);
  const double des_ratio = dm.samples_per_s / dz.samples_per_s;
  const double des_eff = (per_gpu(dm) / per_gpu(des("mics", 2))) / (per_gpu(dz) / per_gpu(des("zero3", 2)));
  MESSAGE("SimGrid engine: MiCS / ZeRO-3 " << des_ratio << ", scaling-efficiency ratio " << des_eff);
  CHECK(std::fabs(des_ratio / 2.82 - 1) <= 0.15);
  CHECK(des_ratio == rel_approx(ratio).epsilon(0.02));
  CHECK(std::fabs(des_eff / 1.27 - 1) <= 0.15);
}

TEST_CASE("InternEvo ZeRO-1: one broadcast per rank after the step, gradient buckets all-reduced, bytes conserved") {
  const int nodes = 4, world = 8 * nodes;
  auto count_kinds = [](const Scenario& sc) {
    PreparedSimulation p = prepare_simulation(sc, {0});
    std::map<TaskKind, int> n;
    std::map<TaskKind, double> bytes;
    for (const auto& t : p.graph.tasks)
      for (TaskKind k : {TaskKind::ParamBroadcastAfterStep, TaskKind::ParamAllGatherAfterStep, TaskKind::GradReduceScatter, TaskKind::GradAllReduce})
        if (t.kind == k) ++n[k], bytes[k] += p.graph.comm_ops[t.op].bytes;
    return std::make_tuple(n, bytes, p.workload.rank_params);
  };
  auto [ie, ie_bytes, params] = count_kinds(bert("zero1", "internevo", {}, nodes));
  auto [ds, ds_bytes, params_ds] = count_kinds(bert("zero1", "ideal", {}, nodes));
  CHECK(ie[TaskKind::ParamBroadcastAfterStep] == world);
  CHECK(ie[TaskKind::ParamAllGatherAfterStep] == 0);
  CHECK(ie[TaskKind::GradReduceScatter] == 0);
  CHECK(ie[TaskKind::GradAllReduce] >= 1);
  CHECK(ds[TaskKind::ParamAllGatherAfterStep] >= 1);
  CHECK(ds[TaskKind::ParamBroadcastAfterStep] == 0);
  // The broadcasts carry the whole 16-bit parameter buffer once (each rank's shard), as the all-gathers do.
  CHECK(ie_bytes[TaskKind::ParamBroadcastAfterStep] == rel_approx(2.0 * double(params)).epsilon(1e-9));
  CHECK(ds_bytes[TaskKind::ParamAllGatherAfterStep] == rel_approx(2.0 * double(params_ds)).epsilon(1e-9));
  CHECK_THROWS_AS(bert("zero3", "internevo"), InputError);  // InternEvo's hybrid ZeRO is ZeRO-1
}

TEST_CASE("InternEvo's published ZeRO-1 scaling (7B, 8 -> 1024 A100): per-GPU throughput -44.1 %, predicted within 5 points") {
  // InternLM/InternEvo doc/en/train_performance.md (zero1 = -1, no checkpointing): 4062 -> 2271 tokens/s/GPU.
  // Nothing is fitted on this series; the drop comes from dp broadcasts per step (latency grows with dp).
  const auto rows = load_training_corpus(std::string(MICSIM_SOURCE_DIR) + "/validation/data/training-corpus");
  std::vector<CorpusRow> series;
  for (const auto& r : rows)
    if (r.series == "internevo-7b-zero1all-noac" && r.skip_reason.empty() && (r.gpus == 8 || r.gpus == 1024)) series.push_back(r);
  REQUIRE(series.size() == 2);
  const auto p = predict_corpus(series, CorpusConstants{}, 2);
  const auto& small = p[0].row->gpus == 8 ? p[0] : p[1];
  const auto& large = p[0].row->gpus == 8 ? p[1] : p[0];
  const double published = large.row->published / small.row->published - 1;
  const double predicted = large.predicted / small.predicted - 1;
  CHECK(published == rel_approx(-0.441).epsilon(0.01));
  CHECK(std::fabs(predicted - published) < 0.05);
}

TEST_CASE("InternEvo ZeRO-1 in groups (zero1 = 8): optimizer over 8 ranks, 8 broadcasts inside the group, only with internevo") {
  const int nodes = 4;
  PreparedSimulation all = prepare_simulation(bert("zero1", "internevo", {}, nodes), {0});
  PreparedSimulation grouped = prepare_simulation(bert("zero1", "internevo", {"strategy.partition_size=8"}, nodes), {0});
  int broadcasts = 0;
  double bytes = 0;
  for (const auto& t : grouped.graph.tasks)
    if (t.kind == TaskKind::ParamBroadcastAfterStep) {
      ++broadcasts, bytes += grouped.graph.comm_ops[t.op].bytes;
      CHECK(grouped.graph.comm_ops[t.op].group == GroupKind::Partition);
    }
  CHECK(broadcasts == 8);
  CHECK(bytes == rel_approx(2.0 * double(grouped.workload.rank_params)).epsilon(1e-9));
  CHECK(grouped.layout.partition_size == 8);
  CHECK(grouped.layout.replication_size == 4);
  // Optimizer states over 8 instead of 32 ranks: four times the bytes per GPU; parameters and gradients whole.
  CHECK(grouped.memory.optimizer_bytes == rel_approx(4 * all.memory.optimizer_bytes).epsilon(1e-6));
  CHECK(grouped.memory.params_bytes == all.memory.params_bytes);
  // Inside a node the broadcasts do not cross the fabric: the step is faster than over all 32 ranks.
  CHECK(simulate_analytic(grouped).iteration_time_s < simulate_analytic(all).iteration_time_s);
  // Other frameworks' ZeRO-1 shards over all ranks: partition_size is ignored with a warning.
  Scenario ideal = bert("zero1", "ideal", {"strategy.partition_size=8"}, nodes);
  REQUIRE(ideal.warnings.size() >= 1);
  CHECK(ideal.warnings[0].find("zero1 with framework internevo") != std::string::npos);
  CHECK(prepare_simulation(ideal).layout.partition_size == 32);
}

TEST_CASE("DeepSpeed <= 0.5.4 list-form collectives: each costs n copies of a rank's piece more, 0.5.5+ gathers by _all_gather_base") {
  const std::vector<std::string> ds = {"strategy.framework=deepspeed", "strategy.version=0.5.4"};
  std::vector<std::string> flat = ds;
  flat.push_back("strategy.mechanisms.gather_list_form=false");
  flat.push_back("strategy.mechanisms.reduce_list_form=false");
  auto listed = prepare_simulation(scenario("p4d.24xlarge", 4, "gpt2-10b", "zero3", 2, 2 * 32 * 2, ds));
  auto plain = prepare_simulation(scenario("p4d.24xlarge", 4, "gpt2-10b", "zero3", 2, 2 * 32 * 2, flat));
  REQUIRE(listed.graph.comm_ops.size() == plain.graph.comm_ops.size());
  const ComputeModel compute(listed.scenario.cluster.instance.gpu, listed.scenario.training.precision, listed.compute_calibration);
  int gathers = 0, scatters = 0;
  for (size_t i = 0; i < listed.graph.comm_ops.size(); ++i) {
    const CommOp& op = listed.graph.comm_ops[i];
    const int n = listed.layout.world_group().ranks;  // ZeRO-3: every collective spans the 32 GPUs
    const double copies = op.list_form ? n * compute.copy_time(op.bytes / n) : 0.0;
    CHECK(listed.costs.comm[i].time_s == rel_approx(plain.costs.comm[i].time_s + copies));
    gathers += op.list_form && op.op == CollectiveOp::AllGather;
    scatters += op.list_form && op.op == CollectiveOp::ReduceScatter;
  }
  CHECK(gathers > 0);
  CHECK(scatters > 0);
  CHECK(run(scenario("p4d.24xlarge", 4, "gpt2-10b", "zero3", 2, 2 * 32 * 2, ds)).iteration_time_s >
        run(scenario("p4d.24xlarge", 4, "gpt2-10b", "zero3", 2, 2 * 32 * 2, flat)).iteration_time_s);
  // DeepSpeed 0.5.5-0.5.10 all-gather with _all_gather_base; their reduce-scatters stay list-form.
  auto later = prepare_simulation(scenario("p4d.24xlarge", 4, "gpt2-10b", "zero3", 2, 2 * 32 * 2,
                                           {"strategy.framework=deepspeed", "strategy.version=0.5.8"}));
  for (const auto& op : later.graph.comm_ops) CHECK(op.list_form == (op.op == CollectiveOp::ReduceScatter));
}

TEST_CASE("recompute early stop: FSDP profiles stop before the MLP down GEMM, the others rerun the whole block") {
  auto llama = [](const std::string& fw, std::vector<std::string> extra) {
    extra.push_back("strategy.framework=" + fw);
    extra.push_back("training.activation_checkpointing=full");
    return scenario("p5.48xlarge", 1, "llama3-8b", "zero3", 2, 16, extra, 2048);
  };
  for (const char* fw : {"fsdp1", "fsdp2"}) {
    auto profile = run(llama(fw, {}));
    auto reentrant = run(llama(fw, {"training.recompute_early_stop=false"}));
    auto explicit_on = run(llama(fw, {"training.recompute_early_stop=true"}));
    CHECK(profile.iteration_time_s == explicit_on.iteration_time_s);
    CHECK(profile.iteration_time_s < reentrant.iteration_time_s);
    // One block's down GEMM is about a quarter of its forward FLOPs (Llama-3-8B, seq 2048): the step
    // (forward + backward + recompute, about 4 forwards) is 3 to 9 % shorter, never more than that.
    const double saved = 1.0 - profile.iteration_time_s / reentrant.iteration_time_s;
    CHECK(saved > 0.03);
    CHECK(saved < 0.09);
    CHECK(profile.hw_flops_per_step < reentrant.hw_flops_per_step);
    CHECK(profile.model_flops_per_step == reentrant.model_flops_per_step);
  }
  // ideal and DeepSpeed rerun the whole forward unless told otherwise (ideal = micsim before profiles).
  for (const char* fw : {"ideal", "deepspeed"}) {
    auto profile = run(llama(fw, {}));
    CHECK(profile.iteration_time_s == run(llama(fw, {"training.recompute_early_stop=false"})).iteration_time_s);
    CHECK(profile.iteration_time_s > run(llama(fw, {"training.recompute_early_stop=true"})).iteration_time_s);
  }
}

TEST_CASE("optimizer implementation: FSDP1 runs torch's default foreach AdamW, the others a fused kernel, unless the scenario says") {
  // One node of 8 H100 holding Llama-3-8B's Adam state: 1 B parameters per GPU, so the update's bytes show
  // (84 per parameter foreach, 32 fused: docs/model.md sec 2.3).
  auto llama = [](const std::string& fw, std::vector<std::string> extra) {
    extra.push_back("strategy.framework=" + fw);
    return scenario("p5.48xlarge", 1, "llama3-8b", "zero3", 1, 8, extra, 2048);
  };
  for (const char* fw : {"fsdp1", "fsdp2", "deepspeed", "ideal"}) {
    CAPTURE(fw);
    const bool foreach = std::string(fw) == "fsdp1";
    const Scenario sc = llama(fw, {});
    CHECK(optimizer_implementation_of(sc) == (foreach ? OptimizerImplementation::Foreach : OptimizerImplementation::Fused));
    const auto profile = run(sc);
    const auto fused = run(llama(fw, {"training.optimizer_implementation=fused"}));
    const auto multi = run(llama(fw, {"training.optimizer_implementation=foreach"}));
    CHECK(profile.iteration_time_s == (foreach ? multi : fused).iteration_time_s);
    // The difference is the 52 extra bytes of ~1 B local parameters at H100's HBM rate: 15-30 ms.
    const double extra = multi.iteration_time_s - fused.iteration_time_s;
    CHECK(extra > 0.015);
    CHECK(extra < 0.030);
  }
  // InternEvo wraps torch's AdamW unfused too (its profile); LAMB and SGD have no multi-tensor cost here:
  // fused whatever the profile says.
  CHECK(optimizer_implementation_of(scenario("p5.48xlarge", 1, "llama3-8b", "zero1", 1, 8, {"strategy.framework=internevo"}, 2048)) ==
        OptimizerImplementation::Foreach);
  CHECK(optimizer_implementation_of(llama("fsdp1", {"training.optimizer=sgd"})) == OptimizerImplementation::Fused);
}
