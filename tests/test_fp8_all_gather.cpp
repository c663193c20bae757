// strategy.fp8_all_gather: the blocks' linear weights gathered in FP8 (torchao float8's
// enable_fsdp_float8_all_gather under FSDP2, Megatron-FSDP's fp8_param_gather).
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "planner/handoff/handoff.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

namespace {

// Bytes of the first micro-step's block parameter gathers (one per block use).
double block_gather_bytes(const Scenario& sc) {
  PreparedSimulation p = prepare_simulation(sc);
  double bytes = 0;
  for (const auto& t : p.graph.tasks)
    if (t.kind == TaskKind::ParamAllGather && t.micro_step == 0 && p.workload.units[t.unit].kind == UnitKind::Block)
      bytes += p.graph.comm_ops[t.op].bytes;
  return bytes;
}

Scenario fp8(std::vector<std::string> sets) {
  sets.push_back("training.precision=fp8");
  return scenario("p5.48xlarge", 2, "llama2-7b", "zero3", 1, 16, sets, 4096);
}

}  // namespace

TEST_CASE("fp8_all_gather: a block's gather carries 1 byte per linear weight and 2 per other parameter") {
  // FSDP2 reshards after forward: every block is gathered again in backward.
  const Scenario off = fp8({"strategy.framework=fsdp2"}), on = fp8({"strategy.framework=fsdp2", "strategy.fp8_all_gather=true"});
  const PreparedSimulation p = prepare_simulation(off);
  const ModelSpec& m = p.workload.model;
  // Llama-2-7B's linears: q, k, v, o (4·h²) and gate, up, down (3·h·f); the rest of a block is its norms.
  const double h = double(m.hidden), f = double(m.ffn);
  const double linear = 4 * h * h + 3 * h * f, block = double(p.workload.rank_block_params);
  CHECK(double(block_linear_weights(m)) == linear);
  const double uses = 2.0 * m.layers;
  CHECK(block_gather_bytes(off) == rel_approx(uses * 2.0 * block));
  CHECK(block_gather_bytes(on) == rel_approx(uses * (2.0 * (block - linear) + linear)));
  // Half the bytes on the same links and no per-use weight casts: never slower, and the gathered
  // buffer shrinks by the prefetched block's linear weights.
  const auto r_off = run(off), r_on = run(on);
  CHECK(r_on.iteration_time_s < r_off.iteration_time_s);
  CHECK(r_on.memory.gathered_params_bytes < r_off.memory.gathered_params_bytes);
  CHECK(r_on.memory.model_states_bytes == r_off.memory.model_states_bytes);  // shards stay bf16 + fp32 master
  // Unset is false, to the last bit.
  CHECK(run(fp8({"strategy.framework=fsdp2", "strategy.fp8_all_gather=false"})).iteration_time_s == r_off.iteration_time_s);
  bool cited = false;
  for (const auto& s : r_on.sources) cited |= s.find("strategy.fp8_all_gather") != std::string::npos;
  CHECK(cited);
}

TEST_CASE("fp8_all_gather: only with FP8 training, on frameworks that have it, ignored where nothing is gathered") {
  CHECK_THROWS_WITH_AS(scenario("p5.48xlarge", 2, "llama2-7b", "zero3", 1, 16, {"strategy.fp8_all_gather=true"}, 4096),
                       doctest::Contains("needs training.precision: fp8"), InputError);
  CHECK_THROWS_WITH_AS(fp8({"strategy.fp8_all_gather=true", "strategy.framework=fsdp1"}), doctest::Contains("framework fsdp1"),
                       InputError);
  CHECK_THROWS_WITH_AS(fp8({"strategy.fp8_all_gather=true", "strategy.framework=deepspeed"}), doctest::Contains("framework deepspeed"),
                       InputError);
  CHECK_NOTHROW(fp8({"strategy.fp8_all_gather=true", "strategy.framework=fsdp2"}));
  const Scenario z2 = fp8({"strategy.fp8_all_gather=true", "strategy.kind=zero2"});
  bool warned = false;
  for (const auto& w : z2.warnings) warned |= w.find("fp8_all_gather: ignored") != std::string::npos;
  CHECK(warned);
  CHECK(run(z2).iteration_time_s == run(fp8({"strategy.kind=zero2"})).iteration_time_s);
  // ZeRO-2 under FSDP2 is reshard_after_forward=False: its forward gathers carry FP8 weights, no warning.
  const Scenario sgo = fp8({"strategy.fp8_all_gather=true", "strategy.kind=zero2", "strategy.framework=fsdp2"});
  for (const auto& w : sgo.warnings) CHECK(w.find("fp8_all_gather: ignored") == std::string::npos);
  const Scenario sgo_bf16 = fp8({"strategy.kind=zero2", "strategy.framework=fsdp2"});
  CHECK(block_gather_bytes(sgo) < 0.6 * block_gather_bytes(sgo_bf16));
  CHECK(block_gather_bytes(sgo_bf16) > 0);
}
