// Tensor, pipeline and context parallelism: invariants, closed forms, published Megatron-LM runs and
// input errors.
#include <doctest/doctest.h>

#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "models/io/input_error.hpp"
#include "models/memory/memory_model.hpp"
#include "sim/des/simulate_simgrid.hpp"
#include "validation/megatron_validation.hpp"

using namespace micsim;
using namespace micsim::test;

namespace {

// GPT-3 175B shape (Korthikanti et al. 2022, Table 3) on DGX A100 nodes.
std::string gpt175(int nodes, const std::string& parallelism, int64_t global_batch = 64, const std::string& strategy = "ddp",
                   const std::string& instance = "dgx-a100-80gb") {
  return "cluster: {instance: " + instance + ", nodes: " + std::to_string(nodes) + "}\n" +
         "model: {arch: gpt, layers: 96, hidden: 12288, heads: 96, ffn: 49152, vocab: 51200, max_position: 2048}\n" +
         "training: {seq_len: 2048, micro_batch: 1, global_batch: " + std::to_string(global_batch) +
         ", precision: fp16, activation_checkpointing: selective-op, flash_attention: false}\n" +
         (parallelism.empty() ? "" : "parallelism: " + parallelism + "\n") + "strategy: {kind: " + strategy + "}\n";
}

SimulationResult simulate_text(const std::string& yaml) { return run(parse_scenario_text(yaml, "<test>")); }

}  // namespace

TEST_CASE("without model parallelism the step is what micsim computed before 3-D parallelism existed") {
  // build/demo-*.json written by ./scripts/demo at 17:12 on 2026-11-30, before the parallelism key was added
  // (commit 41d4278's engine), gave 7.748243544559685 s and 9.203637299227118 s: the bundled scenario under
  // MiCS and under ZeRO-3. Re-based twice since, on purpose: when materialised attention became two batched
  // GEMMs (docs/model.md §1.3), and when the head's loss and a recomputed block stopped being counted as
  // alive together (docs/model.md §3.2: 0.58 GiB less peak memory under MiCS, so less allocator pressure),
  // and on 2026-12-01 when the corpus constants were refitted with each row's attention kernel (the
  // allocator-pressure slope and jitter moved; BERT on V100 runs no fused attention), and on 2026-12-02 when
  // they were refitted with attention's rate depending on sequence length (slope 0.19 -> 0.16, jitter
  // 0.051 -> 0.048) and again with the scale constants' prior (docs/model.md §8.2), and once more on
  // 2026-12-02 (7.564484621185117 s and 9.194052956225612 s before) when jitter came to meet only the ranks
  // a micro-step synchronises with and to be absorbed where communication hides compute (docs/model.md
  // §2.6), and on 2026-12-02 (session 10; 7.09500694888412 s and 8.589958634643818 s before) when the corpus
  // constants were refitted with GPU power limits modelled (jitter 0.0487 -> 0.0472, allocator slope 0.124 ->
  // 0.119; this V100 scenario has no power limit), and on 2026-12-03 (7.087573047503128 s and 8.587786358444372 s
  // before) when overlapped collectives' HBM traffic came to be charged to the compute stream (docs/model.md
  // §2.5) and the corpus constants were refitted with it, and the same day (7.113331298084983 s and
  // 8.587888543353085 s before) with FSDP1's gradient concatenation and that refit (A100 GEMM 1.019 -> 1.025),
  // and on 2026-12-04 (7.115148144121663 s and 8.588323357858961 s before) with the refit after recompute early
  // stop (jitter 0.0427 -> 0.0472, allocator slope 0.111 -> 0.078; this scenario recomputes in full, ideal),
  // and the same day (7.117456288128498 s and 8.59314614371348 s before) with the refit after the FP8 recipes
  // (jitter 0.0471, allocator slope 0.081), and on 2026-12-04 again (7.118372539066695 s and 8.592997899800897 s
  // before) with the refit after two corpus corrections (AWS's "float8" row ran bf16, torchao's rows on the
  // 500 W H100; jitter 0.0471 -> 0.0463), and on 2026-12-06 (ZeRO-3 8.591811948500279 s before) when the
  // analytic engine came to add up the bytes of every collective on a tier (docs/model.md §6.2): ZeRO-3's
  // gathers and reduce-scatters on the p3dn NIC, 0.37 % under the SimGrid engine's 8.6233 s, are 0.11 % under,
  // and again on 2026-12-06 (7.115489113609886 s and 8.613396978369275 s before) when the 2019 EFA fabric's
  // two-node ring efficiency came to be the ring's measured 7.5 GB/s (0.80 -> 0.60, NVIDIA/nccl-tests#22): at
  // 16 nodes e(k) goes 0.5725 -> 0.5475 of the NIC, and on 2026-12-06 again (7.3568797019929715 s and
  // 8.980198428416045 s before) when compute/communication interference came to be fitted on the corpus under
  // its published prior (0.15 -> 0.231, docs/model.md sec 2.5) and the corpus constants with it (jitter
  // 0.0463 -> 0.0392), and on 2026-12-06 again (7.350589338063562 s and 8.994731477226019 s before) when the
  // corpus rows came to run each source's AdamW implementation and the constants were refitted with them
  // (jitter 0.0392 -> 0.0380, allocator slope 0.092 -> 0.090). The 3-D code paths themselves must never move these.
  const std::string sc = std::string(MICSIM_SOURCE_DIR) + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml";
  CHECK(run(load_scenario(sc)).iteration_time_s == rel_approx(7.3454181782418955).epsilon(1e-12));
  CHECK(run(load_scenario(sc, {"strategy.kind=zero3"})).iteration_time_s == rel_approx(8.992875092351696).epsilon(1e-12));
}

TEST_CASE("tp = pp = cp = 1 reproduces today's results exactly, for every strategy") {
  for (const char* kind : {"ddp", "zero1", "zero2", "zero3", "mics", "hsdp"}) {
    Scenario plain = scenario("p4d.24xlarge", 4, "gpt2-10b", kind, 2, 256);
    Scenario ones = scenario("p4d.24xlarge", 4, "gpt2-10b", kind, 2, 256,
                             {"parallelism.tp=1", "parallelism.pp=1", "parallelism.cp=1", "parallelism.virtual_stages=1"});
    nlohmann::json a = to_json(run(plain)), b = to_json(run(ones));
    CAPTURE(kind);
    CHECK(a.dump() == b.dump());
    CHECK(!b.contains("parallelism"));
  }
}

TEST_CASE("FLOPs of the model do not depend on the parallel layout: a rank's share times tp x cp x stages is the whole") {
  const ModelSpec m = *find_model_preset("gpt-175b");
  WorkloadOptions base;
  base.micro_batch = 2;
  base.seq_len = 2048;
  const Workload whole = build_workload(m, base);
  const int first = whole.first_block();
  const double block_fwd = whole.units[size_t(first)].forward.flops(), block_bwd = whole.units[size_t(first)].backward.flops();
  for (auto [tp, pp, cp] : std::vector<std::array<int, 3>>{{8, 1, 1}, {4, 8, 1}, {2, 4, 2}, {8, 12, 1}, {1, 1, 4}}) {
    WorkloadOptions o = base;
    o.mp.tp = tp, o.mp.pp = pp, o.mp.cp = cp, o.mp.sequence_parallel = tp > 1;
    const Workload w = build_workload(m, o);
    CAPTURE(tp);
    CAPTURE(pp);
    CAPTURE(cp);
    const UnitWork& b = w.units[size_t(w.first_block())];
    CHECK(b.forward.flops() * tp * cp == rel_approx(block_fwd).epsilon(1e-12));
    CHECK(b.backward.flops() * tp * cp == rel_approx(block_bwd).epsilon(1e-12));
    CHECK(w.stage_layers * pp == m.layers);
    // Parameters: a rank holds 1/(tp·pp) of the blocks' (each block's weights split by tp).
    CHECK(double(w.rank_block_params) * tp == rel_approx(double(whole.params.per_layer)).epsilon(1e-6));
  }
  // The step's reported model FLOPs are the same whatever the layout.
  const auto a = simulate_text(gpt175(8, "{tp: 8, pp: 8, virtual_stages: 3}"));
  const auto b = simulate_text(gpt175(8, "{tp: 4, pp: 16}"));
  CHECK(a.model_flops_per_step == b.model_flops_per_step);
  CHECK(a.hw_flops_per_step == b.hw_flops_per_step);
}

TEST_CASE("a larger pp with the same micro-batches never shrinks the bubble fraction, interleaving shrinks it by v") {
  // 64 GPUs, tp 8, 16 micro-batches per pipeline whatever pp: global batch = 16 x dp.
  double last = -1;
  for (int pp : {1, 2, 4, 8}) {
    const int dp = 8 / pp;
    const auto r = simulate_text(gpt175(8, "{tp: 8, pp: " + std::to_string(pp) + "}", 16 * dp));
    CAPTURE(pp);
    CHECK(r.grad_accumulation_steps == 16);
    const double fraction = r.pipeline_bubble_s / r.iteration_time_s;
    CHECK(fraction >= last);
    if (pp == 1) CHECK(r.pipeline_bubble_s == 0);
    last = fraction;
  }
  // The bubble is (pp - 1) / v micro-batch slots (Narayanan et al. 2021, §2.2).
  const auto one = simulate_text(gpt175(8, "{tp: 8, pp: 8}", 64));
  const auto three = simulate_text(gpt175(8, "{tp: 8, pp: 8, virtual_stages: 3, schedule: interleaved}", 64));
  CHECK(three.pipeline_bubble_s == rel_approx(one.pipeline_bubble_s / 3).epsilon(0.02));
  CHECK(three.iteration_time_s < one.iteration_time_s);
}

TEST_CASE("tensor parallelism across nodes is slower than inside a node") {
  // The same 16 GPUs and the same per-GPU links: 8 GPUs per node (tp inside NVLink) or 4 (tp 8 spans two nodes).
  auto yaml = [](int gpn, int nodes) {
    return "cluster:\n  instance: {gpu: A100-SXM4-80GB, gpus_per_node: " + std::to_string(gpn) +
           ", intra_node: {kind: nvlink, gbytes_per_s: 240}, network: {nics: " + std::to_string(gpn) +
           ", gbits_per_nic: 200, fabric: infiniband-hdr}}\n  nodes: " + std::to_string(nodes) +
           "\nmodel: {preset: gpt2-10b}\ntraining: {seq_len: 512, micro_batch: 2, global_batch: 16, precision: bf16}\n"
           "parallelism: {tp: 8}\nstrategy: {kind: ddp}\n";
  };
  const Scenario inside = parse_scenario_text(yaml(8, 2), "<inside>");
  const Scenario across = parse_scenario_text(yaml(4, 4), "<across>");
  CHECK(across.warnings.size() > inside.warnings.size());  // tp beyond the NVLink domain is warned
  CHECK(run(across).iteration_time_s > 1.05 * run(inside).iteration_time_s);
}

TEST_CASE("sequence parallelism: each block's backward waits for the all-gather of its output gradient unless TP communication overlaps") {
  // Megatron-LM: the backward of the forward's reduce-scatter is an all-gather that nothing overlaps;
  // without sequence parallelism the row-parallel backward starts at once (its all-reduce is overlapped).
  auto blocking_gathers = [](bool sp, bool overlap = false) {
    const std::string y = std::string("cluster: {instance: p4d.24xlarge, nodes: 1}\nmodel: {preset: gpt2-10b}\n") +
                          "training: {seq_len: 512, micro_batch: 2, global_batch: 2, precision: bf16}\n" +
                          "parallelism: {tp: 8, sequence_parallel: " + (sp ? "true" : "false") +
                          ", tp_comm_overlap: " + (overlap ? "true" : "false") + "}\nstrategy: {kind: ddp}\n";
    const PreparedSimulation p = prepare_simulation(parse_scenario_text(y, "<sp>"));
    int n = 0;
    for (const Task& t : p.graph.tasks) {
      if (t.kind != TaskKind::Backward || p.workload.units[size_t(t.unit)].kind != UnitKind::Block) continue;
      for (uint32_t d = t.deps_begin; d < t.deps_end; ++d) {
        const Task& dep = p.graph.tasks[p.graph.deps[d]];
        if (dep.kind == TaskKind::TensorParallelComm && dep.unit == t.unit && p.graph.comm_ops[dep.op].op == CollectiveOp::AllGather) ++n;
      }
    }
    return n;
  };
  CHECK(blocking_gathers(true) == find_model_preset("gpt2-10b")->layers);
  CHECK(blocking_gathers(false) == 0);
  // --tp-comm-overlap / async TP pipeline that gather with its GEMM: it no longer blocks.
  CHECK(blocking_gathers(true, true) == 0);
}

TEST_CASE("tp_backward_overlap: false makes the backward's tensor-parallel all-reduces wait for the block and the step longer") {
  // Megatron-LM before 2021-08-30 (Narayanan et al. 2021's runs) all-reduced input gradients synchronously.
  auto prepare = [](bool overlap) {
    const std::string y = std::string("cluster: {instance: p4d.24xlarge, nodes: 1}\nmodel: {preset: gpt2-10b}\n") +
                          "training: {seq_len: 512, micro_batch: 2, global_batch: 4, precision: bf16}\n" +
                          "parallelism: {tp: 8, sequence_parallel: false, tp_backward_overlap: " + (overlap ? "true" : "false") +
                          "}\nstrategy: {kind: ddp}\n";
    return prepare_simulation(parse_scenario_text(y, "<tp-bwd>"));
  };
  auto after_backward = [](const PreparedSimulation& p) {  // backward TP collectives that depend on their block's backward
    int n = 0;
    for (const Task& t : p.graph.tasks) {
      if (t.kind != TaskKind::TensorParallelComm) continue;
      for (uint32_t d = t.deps_begin; d < t.deps_end; ++d) {
        const Task& dep = p.graph.tasks[p.graph.deps[d]];
        if (dep.kind == TaskKind::Backward && dep.unit == t.unit) ++n;
      }
    }
    return n;
  };
  const PreparedSimulation overlapped = prepare(true), blocking = prepare(false);
  CHECK(after_backward(overlapped) == 0);
  CHECK(after_backward(blocking) >= find_model_preset("gpt2-10b")->layers);
  CHECK(simulate_analytic(blocking).iteration_time_s > simulate_analytic(overlapped).iteration_time_s);
}

TEST_CASE("FSDP2 under pipelining gathers each unit once per step and reduce-scatters once, after the last micro-batch") {
  // torchtitan: reshard_after_forward is off when pp is enabled; PyTorch pipelining syncs FSDP gradients
  // in the last micro-batch only. ZeRO-3 without the fsdp2 profile gathers and reduces every micro-batch.
  auto count = [](const char* framework) {
    const std::string y = std::string("cluster: {instance: p4d.24xlarge, nodes: 4}\nmodel: {preset: gpt2-10b}\n") +
                          "training: {seq_len: 512, micro_batch: 1, global_batch: 32, precision: bf16}\n" +
                          "parallelism: {tp: 8, pp: 2}\nstrategy: {kind: zero3, framework: " + framework + "}\n";
    const PreparedSimulation p = prepare_simulation(parse_scenario_text(y, "<fsdp2-pp>"));
    std::map<int, int> gathers, reductions;  // per micro-step
    for (const Task& t : p.graph.tasks) {
      if (t.kind == TaskKind::ParamAllGather) ++gathers[t.micro_step];
      if (t.kind == TaskKind::GradReduceScatter) ++reductions[t.micro_step];
    }
    return std::make_tuple(p.graph.micro_steps, gathers, reductions);
  };
  const auto [steps, gathers, reductions] = count("fsdp2");
  REQUIRE(steps >= 3);  // 16 micro-batches; the graph builds the first, some middle ones and the last
  CHECK(gathers.size() == 1);
  CHECK(gathers.count(0) == 1);
  CHECK(reductions.size() == 1);
  CHECK(reductions.count(steps - 1) == 1);
  const auto [steps1, gathers1, reductions1] = count("ideal");
  CHECK(gathers1.size() == size_t(steps1));
  CHECK(reductions1.size() == size_t(steps1));
}

TEST_CASE("materialised attention: QK^T and P.V are two batched GEMMs over the head size with the fused kernel's FLOPs") {
  const ModelSpec m = *find_model_preset("gpt-175b");
  WorkloadOptions o;
  o.micro_batch = 2, o.seq_len = 2048, o.mp.tp = 8, o.mp.sequence_parallel = true;
  o.flash_attention = true;
  const Workload fused = build_workload(m, o);
  o.flash_attention = false;
  const Workload materialised = build_workload(m, o);
  const UnitWork& a = fused.units[size_t(fused.first_block())];
  const UnitWork& b = materialised.units[size_t(materialised.first_block())];
  CHECK(b.forward.attention_flops == 0);
  REQUIRE(b.forward.score_gemms.size() == 2);
  const Gemm& qk = b.forward.score_gemms[0];
  CHECK(qk.batch == 2 * m.heads / 8);
  CHECK(qk.m == 2048);
  CHECK(qk.n == 2048);
  CHECK(qk.k == m.head_dim());
  CHECK(b.forward.flops() == rel_approx(a.forward.flops()).epsilon(1e-12));
  CHECK(b.backward.flops() == rel_approx(a.backward.flops()).epsilon(1e-12));
  // Korthikanti's selective recompute replays exactly the attention core: the same two GEMMs.
  o.checkpointing = Checkpointing::SelectiveOp;
  const Workload selective = build_workload(m, o);
  CHECK(selective.units[size_t(selective.first_block())].recompute.flops() == rel_approx(b.forward.score_gemms[0].flops() * 2).epsilon(1e-12));
}

TEST_CASE("rank activations follow Korthikanti et al. 2022 Table 2 with tensor and sequence parallelism") {
  const ModelSpec m = *find_model_preset("gpt-175b");
  const double s = 2048, b = 1, h = double(m.hidden), a = m.heads;
  for (int t : {2, 4, 8}) {
    ModelParallelism mp;
    mp.tp = t;
    mp.sequence_parallel = false;
    CHECK(rank_block_activation_bytes(m, 1, 2048, Precision::FP16, false, mp) ==
          rel_approx(s * b * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t))));
    mp.sequence_parallel = true;
    CHECK(rank_block_activation_bytes(m, 1, 2048, Precision::FP16, false, mp) ==
          rel_approx(s * b * h / t * (34.0 + 5.0 * a * s / h)));
  }
}

TEST_CASE("pipeline memory: 1F1B holds pp micro-batches on the first stage, interleaving a little more") {
  ModelParallelism mp;
  mp.pp = 8;
  CHECK(mp.in_flight_micro_batches(64) == 8);
  CHECK(mp.in_flight_micro_batches(4) == 4);  // never more than there are
  mp.virtual_stages = 3, mp.schedule = PipelineSchedule::Interleaved;
  CHECK(mp.in_flight_micro_batches(64) == rel_approx(8.0 * (1.0 + 7.0 / 24.0)));
  mp.schedule = PipelineSchedule::GPipe, mp.virtual_stages = 1;
  CHECK(mp.in_flight_micro_batches(64) == 64);
}

TEST_CASE("published Megatron-LM runs (Korthikanti 2022 Table 5, Narayanan 2021 Tables 1-2): MAPE <= 5 %, nothing fitted on them") {
  const auto rows = load_megatron_rows(std::string(MICSIM_SOURCE_DIR) + "/validation/data/megatron");
  const auto preds = predict_megatron(rows);
  double sum = 0, signed_sum = 0;
  int n = 0;
  for (const auto& p : preds) {
    const std::string& id = p.row->id;
    // Megatron-LM's own runs: Korthikanti's step times, Narayanan's Table 1 (micro-batch and virtual
    // stages from the authors' examples/sc21 scripts) and Table 2 PTD-P rows. (Narayanan's ZeRO-3 rows
    // are DeepSpeed's, reported but not bounded.) Issue 15 asks for 5 %; public analytic tools report
    // 3.7 % on these tables. micsim had 2.1 % until 2026-12-01, when the corpus refit with each row's
    // attention kernel moved the A100 sustained GEMM constant these rows run on from 1.09 to 1.058
    // (4.4 %), and 6.7 % since 2026-12-02: the corpus fit with attention's length terms, KempnerForge's
    // cuDNN attention and a prior on the scale constants puts it at 1.017 (every row too slow, the 1T
    // rows by 12-14 %). That was the jitter term more than the GEMMs: 0.049 x E[max of N normals] over
    // the whole world added 7 % at 8 GPUs and 15 % at 512. Jitter now meets the ranks a micro-step
    // synchronises with (a Megatron-LM rank: its tensor group and a pipeline neighbour, the rest once
    // per step; docs/model.md §2.6): 3.1 %, mean signed +0.2 %.
    const bool megatron = id.rfind("kor22-", 0) == 0 || (id.rfind("nar21-", 0) == 0 && p.row->strategy != "zero3");
    if (!megatron || p.row->metric.find("memory") != std::string::npos || p.row->metric.find("per_layer") != std::string::npos) continue;
    CAPTURE(id);
    CHECK(std::fabs(p.error()) < 0.10);  // worst today: the 1T full-recompute row, +8.5 %
    CHECK(p.fits);
    sum += std::fabs(p.error()), signed_sum += p.error(), ++n;
  }
  REQUIRE(n >= 26);
  CHECK(sum / n <= 0.05);
  CHECK(std::fabs(signed_sum / n) <= 0.025);
  // Korthikanti Table 4: one layer of the 22B model (tp 8) with and without sequence parallelism and
  // recomputation, forward and backward.
  double layer = 0, layer_signed = 0;
  int k = 0;
  for (const auto& p : preds)
    if (p.row->metric.find("per_layer") != std::string::npos) {
      CAPTURE(p.row->id);
      CHECK(std::fabs(p.error()) < 0.12);
      layer += std::fabs(p.error()), layer_signed += p.error(), ++k;
    }
  REQUIRE(k >= 15);
  CHECK(layer / k <= 0.04);
  CHECK(std::fabs(layer_signed / k) <= 0.04);
  // torchtitan's FSDP2 + TP/PP/CP tables (Dec 2024, H100): tokens/s within 18 % on average (a guard on
  // today's 17.3 %: 14.7 % before full recompute came to stop early (2026-12-04; it moves the 70B 2-D rows
  // from -6.7 / -0.9 to -3.2 / +3.3 % and the pipeline and context-parallel rows, already too fast, 1-6 points
  // further: with the same constants and no early stop 15.1 %), 16.7 % while an early-stopped recompute still
  // replayed the MLP's tensor-parallel collective (70B 2-D rows now -1.2 / +5.6 %), 19.2-20.0 % before the GPUs' 500 W power limit
  // was modelled, 10.0 % before the attention kernels' refit; most rows too fast, the context-parallel rows at
  // cp 4 and 8 the worst).
  double tt = 0;
  int m = 0;
  for (const auto& p : preds)
    if (p.row->id.rfind("tt24dec-", 0) == 0 && p.row->metric == "tokens_per_s_per_gpu") tt += std::fabs(p.error()), ++m;
  REQUIRE(m >= 10);
  CHECK(tt / m <= 0.18);
  // Their peak memory (every table, FSDP-only included) against torchtitan's log, the caching
  // allocator's reserved peak: within 10 % on average (today 9.4 %) and no row beyond 26 % (today the
  // 405B cp 8 row, 25.2 %). The compiled 8B rows, where the loss is the peak and nothing else is left
  // to explain, within 2 % (allocated peak: -4.6..-5.2 %). The pipeline rows are 16-25 % low: before
  // the loss was counted only on the last stage they looked better (6.5-17 %) for the wrong reason. With Megatron-LM's loss memory and
  // attention-core recomputation in place of torchtitan's cross-entropy and per-op policy the average
  // was 23 % on the 11 model-parallel rows.
  double mem = 0;
  int k_mem = 0;
  for (const auto& p : preds)
    if (p.row->id.rfind("tt24dec-", 0) == 0 && p.row->metric == "memory_gb_per_gpu") {
      CAPTURE(p.row->id);
      CHECK(std::fabs(p.error()) < 0.26);
      if (p.row->id.find("-compile") != std::string::npos && p.row->id.find("-8b-") != std::string::npos) CHECK(std::fabs(p.error()) < 0.02);
      mem += std::fabs(p.error()), ++k_mem;
    }
  REQUIRE(k_mem >= 18);
  CHECK(mem / k_mem <= 0.10);
  // `simulate` quotes these gaps to users with tensor or pipeline parallelism (sim/simulation.cpp,
  // "memory with ..."): the 70B TP rows 8-14 % and the 405B pipeline rows 16-25 % below the published
  // peak. Change that line when this fails.
  for (const auto& p : preds)
    if (p.row->id.rfind("tt24dec-", 0) == 0 && p.row->metric == "memory_gb_per_gpu") {
      CAPTURE(p.row->id);
      if (p.row->id.find("-70b-") != std::string::npos) CHECK((p.error() <= -0.075 && p.error() >= -0.145));
      if (p.row->id.find("-405b-") != std::string::npos) CHECK((p.error() <= -0.155 && p.error() >= -0.255));
    }
  // Trainy's H200 runs (June 2025) compile the loss with the model: never part of any fit, within 7 %.
  int k_h200 = 0;
  for (const auto& p : preds)
    if (p.row->id.rfind("tt25-h200-", 0) == 0 && p.row->metric == "memory_gb_per_gpu") {
      CAPTURE(p.row->id);
      CHECK(std::fabs(p.error()) < 0.07);
      ++k_h200;
    }
  CHECK(k_h200 == 2);
  // torchao's float8 README (8 H100, early 2025: compiled blocks, eager loss), added after the model was
  // set: within 2 % (the allocated peak alone is 4 % low).
  int k_ao = 0;
  for (const auto& p : preds)
    if (p.row->id.rfind("torchao25-", 0) == 0) {
      CAPTURE(p.row->id);
      CHECK(std::fabs(p.error()) < 0.02);
      ++k_ao;
    }
  CHECK(k_ao == 3);
}

TEST_CASE("parallelism errors name the key and what it must divide") {
  auto error_of = [](const std::string& yaml) {
    try {
      parse_scenario_text(yaml, "<p>");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(gpt175(8, "{tp: 5}")).find("parallelism.tp") != std::string::npos);
  CHECK(error_of(gpt175(8, "{tp: 5}")).find("96 attention heads") != std::string::npos);
  CHECK(error_of(gpt175(8, "{tp: 8, pp: 4, virtual_stages: 25}")).find("parallelism.virtual_stages") != std::string::npos);
  CHECK(error_of(gpt175(8, "{tp: 8, pp: 4, virtual_stages: 25}")).find("96 layers") != std::string::npos);
  // Uneven chunks are allowed (Megatron-LM and torchtitan support them), with a warning saying what each
  // stage holds: 96 layers in 20 chunks of 4 and 5 (torchtitan's split) come to 24 per stage; 96 in 7
  // stages to 13 (first and last) or 14.
  const Scenario uneven = parse_scenario_text(gpt175(8, "{tp: 8, pp: 4, virtual_stages: 5}"), "<p>");
  REQUIRE(!uneven.warnings.empty());
  CHECK(uneven.warnings.back().find("every stage holds 24 layers") != std::string::npos);
  ModelParallelism seven;
  seven.pp = 7;
  std::vector<int> sizes;
  for (int s = 0; s < 7; ++s) sizes.push_back(int(seven.stage_layer_indices(96, s).size()));
  CHECK(sizes == std::vector<int>{13, 14, 14, 14, 14, 14, 13});
  CHECK(seven.stage_layers(96) == 14);
  CHECK(error_of(gpt175(8, "{tp: 8, pp: 3}")).find("must divide the 64 GPUs") != std::string::npos);
  CHECK(error_of(gpt175(8, "{tp: 8, schedule: interleaved, pp: 2}")).find("virtual_stages") != std::string::npos);
  CHECK(error_of(gpt175(8, "{cp: 3}")).find("parallelism.cp") != std::string::npos);
  CHECK(error_of(gpt175(8, "{tp: 8, pp: 2}", 63)).find("training.global_batch") != std::string::npos);
  // Through the CLI: exit status 2, file and key named.
  const std::string path = temp_file("bad-pp.yaml", gpt175(8, "{tp: 8, pp: 5}"));  // 8 x 5 does not divide 64 GPUs
  Cmd c = run_cli("simulate " + path);
  CHECK(c.status == 2);
  CHECK(c.output.find("parallelism.pp") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("the SimGrid engine runs a 3-D step and agrees with the analytic engine when nothing contends") {
  const std::string path = temp_file("3d.yaml", gpt175(8, "{tp: 8, pp: 8, virtual_stages: 3}"));
  Cmd a = run_cli("simulate " + path + " --json -", false);
  Cmd s = run_cli("simulate " + path + " --set engine=simgrid --json -", false);
  std::remove(path.c_str());
  REQUIRE(a.status == 0);
  REQUIRE(s.status == 0);
  const auto ja = nlohmann::json::parse(a.output), js = nlohmann::json::parse(s.output);
  CHECK(js["parallelism"]["pp"] == 8);
  // Jitter is sampled in SimGrid and taken in expectation analytically: a few per cent apart at most.
  CHECK(double(js["iteration_time_s"]) == rel_approx(double(ja["iteration_time_s"])).epsilon(0.05));
}

TEST_CASE("a 3-D configuration hands off Megatron-LM arguments and torchtitan TP/PP degrees that multiply to the world") {
  const std::string dir = temp_dir("handoff3d");
  REQUIRE(!dir.empty());
  const std::string path = dir + "/s.yaml";
  {
    std::ofstream f(path);
    f << gpt175(8, "{tp: 8, pp: 8, virtual_stages: 3}", 64, "zero1");
  }
  Cmd c = run_cli("simulate " + path + " -q --handoff-dir " + dir + "/out");
  REQUIRE(c.status == 0);
  const std::string args = read_text(dir + "/out/megatron_args.sh");
  CHECK(args.find("--tensor-model-parallel-size 8") != std::string::npos);
  CHECK(args.find("--pipeline-model-parallel-size 8") != std::string::npos);
  CHECK(args.find("--num-layers-per-virtual-pipeline-stage 4") != std::string::npos);  // 96 / (8 x 3)
  CHECK(args.find("--sequence-parallel") != std::string::npos);
  CHECK(args.find("--use-distributed-optimizer") != std::string::npos);
  CHECK(args.find("--recompute-granularity selective") != std::string::npos);
  const std::string toml = read_text(dir + "/out/torchtitan.toml");
  CHECK(toml.find("tensor_parallel_degree = 8") != std::string::npos);
  CHECK(toml.find("pipeline_parallel_schedule = \"Interleaved1F1B\"") != std::string::npos);
  Cmd check = run_shell(std::string(MICSIM_SOURCE_DIR) + "/scripts/check-handoff " + dir + "/out --world 64 2>&1");
  CHECK_MESSAGE(check.status == 0, check.output);
  run_shell("rm -rf '" + dir + "'");
}

TEST_CASE("3-D simulate and plan JSON validate against their schemas") {
  if (std::system("/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: python3-jsonschema is not installed");
    return;
  }
  const std::string dir = temp_dir("schema3d");
  REQUIRE(!dir.empty());
  Cmd s = run_cli("simulate " + std::string(MICSIM_SOURCE_DIR) + "/scenarios/3d/gpt-175b-3d-vs-mics.yaml --set parallelism.tp=4 "
                  "--set parallelism.pp=4 --set strategy.kind=zero1 -q --json " + dir + "/s.json");
  REQUIRE(s.status == 0);
  Cmd p = run_cli("plan " + std::string(MICSIM_SOURCE_DIR) + "/scenarios/3d/gpt-175b-3d-vs-mics.yaml --instances p5.48xlarge --refine 0 -q --json " +
                  dir + "/p.json");
  REQUIRE(p.status == 0);
  for (auto [schema, file] : std::vector<std::pair<std::string, std::string>>{{"simulate", "/s.json"}, {"plan", "/p.json"}}) {
    Cmd c = run_shell("/usr/bin/python3 " + std::string(MICSIM_SOURCE_DIR) + "/scripts/check-json-schema " + schema + " " + dir + file + " 2>&1");
    CHECK_MESSAGE(c.status == 0, c.output);
  }
  run_shell("rm -rf '" + dir + "'");
}

TEST_CASE("context-parallel ranks hold the same parameters: sharded and gradient-reduced with the data-parallel ones") {
  // 16 GPUs, cp 4: 4 data-parallel ranks split the batch, 16 ranks hold the same parameters.
  auto yaml = [](const std::string& kind) {
    return "cluster: {instance: p5.48xlarge, nodes: 2}\nmodel: {preset: llama3-8b}\n"
           "training: {seq_len: 32768, micro_batch: 1, global_batch: 4, precision: bf16, activation_checkpointing: full}\n"
           "parallelism: {cp: 4}\nstrategy: {kind: " + kind + "}\n";
  };
  const Scenario z = parse_scenario_text(yaml("zero3"), "<cp>");
  CHECK(z.data_parallel_size() == 4);
  CHECK(z.grad_accumulation_steps() == 1);
  const auto rz = run(z);
  CHECK(rz.partition_size == 16);
  CHECK(rz.memory.params_bytes == rel_approx(2.0 * double(rz.params) / 16).epsilon(1e-9));
  const auto rd = run(parse_scenario_text(yaml("ddp"), "<cp>"));
  bool all_reduce_over_16 = false;
  for (const auto& c : rd.collectives)
    if (c.task == "grad_all_reduce" && c.estimate.layout.ranks == 16) all_reduce_over_16 = true;
  CHECK(all_reduce_over_16);
}

TEST_CASE("only the last pipeline stage holds the logits and the loss") {
  // Llama 3 8B in 4 stages of 8 blocks, full checkpointing, torchtitan's eager loss.
  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 1, o.seq_len = 4096, o.precision = Precision::BF16, o.flash_attention = true;
  o.cross_entropy = CrossEntropy::Torch;
  o.mp.pp = 4;
  ActivationOptions a{Checkpointing::Full, 1, true};
  a.cross_entropy = CrossEntropy::Torch;
  const double input = 2.0 * 4096 * m.hidden, block = block_activation_bytes(m, 1, 4096, Precision::BF16, true);
  const double head = head_activation_bytes(m, 1, 4096, Precision::BF16, {}, CrossEntropy::Torch);
  REQUIRE(head > block);
  for (int stage = 0; stage < 4; ++stage) {
    o.stage = stage;
    const Workload w = build_workload(m, o);
    REQUIRE(w.stage_layers == 8);
    ShardingSpec sharded;  // over 8, as FSDP: the optimizer's fp32 gradient copy is not the peak
    sharded.param_shards = sharded.grad_shards = sharded.optimizer_shards = 8;
    const MemoryEstimate e = estimate_memory(w, sharded, a, Optimizer::Adam, 80e9);
    CAPTURE(stage);
    if (stage < 3) {
      CHECK(e.activations_bytes == rel_approx(8 * input + block));  // blocks' inputs + one recomputed block
      CHECK(e.allocator_reserved_bytes == rel_approx(e.peak_bytes));
    } else {
      CHECK(e.activations_bytes == rel_approx(8 * input + head));
      CHECK(e.allocator_reserved_bytes - e.peak_bytes == rel_approx(2.0 * 4096 * double(m.vocab)));
    }
  }
}

TEST_CASE("every pipeline stage is built: the slowest sets the step, the others its bubble, the fullest the memory") {
  // 96 layers in 7 stages: 13 (+ embedding), 14 x 5, 13 (+ head) blocks (torchtitan's split).
  const Scenario sc = parse_scenario_text(gpt175(7, "{tp: 8, pp: 7}", 56), "<stages>");
  const PreparedSimulation p = prepare_simulation(sc);
  REQUIRE(p.stages.size() == 3);
  int stages = 0, layers = 0;
  double all_slots = 0, fullest = 0;
  const StageSummary* slowest = &p.stages.front();
  for (const StageSummary& s : p.stages) {
    stages += s.stages, layers += s.layers * s.stages, all_slots += s.slot_s * s.stages;
    fullest = std::max(fullest, s.peak_bytes);
    if (s.step_s > slowest->step_s) slowest = &s;
  }
  CHECK(stages == 7);
  CHECK(layers == 96);
  CHECK((p.stages[0].embedding && p.stages[0].layers == 13 && p.stages[0].stages == 1));
  CHECK((p.stages[1].layers == 14 && p.stages[1].stages == 5));
  CHECK((p.stages[2].head && p.stages[2].layers == 13));
  // The simulated graph is the slowest stage's, and its workload holds that stage's blocks.
  CHECK(p.stage == slowest->stage);
  CHECK(p.workload.stage == p.stage);
  CHECK(p.workload.stage_layers == slowest->layers);
  // Its bubble is what the other six stages spend on one micro-batch.
  const SimulationResult r = simulate_analytic(p);
  CHECK(r.pipeline_bubble_s == rel_approx(all_slots - slowest->slot_s));
  CHECK(r.iteration_time_s == rel_approx(slowest->step_s));
  // The memory reported is the fullest stage's (here a 14-block one: more model states than the first
  // stage's 13 blocks with 7 micro-batches in flight, against 6).
  CHECK(p.memory.peak_bytes == rel_approx(fullest));
  CHECK(p.memory.peak_bytes == rel_approx(p.stages[1].peak_bytes));
  // Equal stages give the textbook (pp - 1)/v slots of the simulated stage, up to the ends' extra work.
  const PreparedSimulation even = prepare_simulation(parse_scenario_text(gpt175(8, "{tp: 8, pp: 8}", 64), "<even>"));
  const SimulationResult re = simulate_analytic(even);
  const double slot = even.stages.back().slot_s;
  CHECK(re.pipeline_bubble_s <= 7.0 * slot);
  CHECK(re.pipeline_bubble_s >= 7.0 * slot * 0.9);
}

TEST_CASE("the SimGrid engine runs every distinct pipeline stage and keeps the slowest") {
  const PreparedSimulation p = prepare_simulation(parse_scenario_text(gpt175(7, "{tp: 8, pp: 7}", 56), "<stages>"));
  REQUIRE(p.other_stages.size() == 2);
  const PreparedSimulation* simulated = nullptr;
  const SimulationResult r = simulate_simgrid(p, {}, nullptr, &simulated);
  REQUIRE(simulated != nullptr);
  // Each stage alone through the same engine: the result is the slowest of them, and its stage.
  double slowest = 0;
  int stage = -1;
  std::vector<const PreparedSimulation*> all = {&p};
  for (const auto& o : p.other_stages) all.push_back(&o);
  for (const PreparedSimulation* s : all) {
    PreparedSimulation alone = *s;
    alone.other_stages.clear();
    const double t = simulate_simgrid(alone).iteration_time_s;
    if (t > slowest) slowest = t, stage = s->stage;
  }
  CHECK(r.iteration_time_s == rel_approx(slowest).epsilon(1e-12));
  CHECK(simulated->stage == stage);
  // Every stage reports the run's memory: the fullest stage's.
  for (const PreparedSimulation* s : all) CHECK(s->memory.peak_bytes == rel_approx(p.memory.peak_bytes));
}

TEST_CASE("in-flight micro-batches fall from the first stage to the last") {
  ModelParallelism mp;
  mp.pp = 4;
  for (int s = 0; s < 4; ++s) CHECK(mp.in_flight_micro_batches(64, s) == rel_approx(4 - s));  // 1F1B: pp - s
  CHECK(mp.in_flight_micro_batches(2, 0) == 2);                                                    // never more than exist
  mp.schedule = PipelineSchedule::Interleaved, mp.virtual_stages = 2;
  // Stage 0 is Korthikanti's pp·(1 + (pp-1)/(pp·v)); later stages hold two chunks (one micro-batch) less each.
  CHECK(mp.in_flight_micro_batches(64, 0) == rel_approx(4.0 * (1.0 + 3.0 / 8.0)));
  CHECK(mp.in_flight_micro_batches(64, 0) == rel_approx(mp.in_flight_micro_batches(64)));
  for (int s = 1; s < 4; ++s) CHECK(mp.in_flight_micro_batches(64, s) == rel_approx(mp.in_flight_micro_batches(64, s - 1) - 1.0));
}

TEST_CASE("tensor parallelism with early-stopped recompute: a block replays its attention's collective, not the MLP's") {
  // Without sequence parallelism a Llama block all-reduces twice in forward (after wo and after w2); a full
  // recompute replays both, an early-stopped one (no w2) only the first. With sequence parallelism the
  // two gathers stay and one reduce-scatter goes.
  auto tp_bytes = [](bool sp, bool early) {
    const std::string y = std::string("cluster: {instance: p5.48xlarge, nodes: 1}\nmodel: {preset: llama3-8b}\n") +
                          "training: {seq_len: 2048, micro_batch: 1, global_batch: 1, precision: bf16, activation_checkpointing: full, " +
                          "recompute_early_stop: " + (early ? "true" : "false") + "}\n" +
                          "parallelism: {tp: 8, sequence_parallel: " + (sp ? "true" : "false") + "}\nstrategy: {kind: ddp}\n";
    const PreparedSimulation p = prepare_simulation(parse_scenario_text(y, "<tp-early>"));
    std::map<CollectiveOp, double> bytes;
    for (const Task& t : p.graph.tasks)
      if (t.kind == TaskKind::TensorParallelComm && p.workload.units[size_t(t.unit)].kind == UnitKind::Block)
        bytes[p.graph.comm_ops[t.op].op] += p.graph.comm_ops[t.op].bytes;
    return std::make_pair(bytes, p.workload.tp_activation_bytes);
  };
  const int layers = find_model_preset("llama3-8b")->layers;
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const auto [full, a] = tp_bytes(sp, false);
    const auto early = tp_bytes(sp, true).first;
    const CollectiveOp row = sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce;
    CHECK(full.at(row) - early.at(row) == rel_approx(layers * a));  // one collective of `a` bytes per block
    if (sp) CHECK(full.at(CollectiveOp::AllGather) == early.at(CollectiveOp::AllGather));
  }
}
