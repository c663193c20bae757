// strategy.reduce_dtype: gradient reductions in another precision than training (FSDP's
// MixedPrecision(Policy).reduce_dtype, DeepSpeed's communication_data_type).
#include <doctest/doctest.h>

#include <map>

#include "helpers.hpp"
#include "planner/handoff/handoff.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

namespace {

// Bytes each micro-step's gradient reductions carry, by task kind.
std::map<TaskKind, double> reduction_bytes(const Scenario& sc) {
  PreparedSimulation p = prepare_simulation(sc);
  std::map<TaskKind, double> bytes;
  for (const auto& t : p.graph.tasks)
    if ((t.kind == TaskKind::GradReduceScatter || t.kind == TaskKind::GradAllReduce) && t.micro_step == 0)
      bytes[t.kind] += p.graph.comm_ops[t.op].bytes;
  return bytes;
}

}  // namespace

TEST_CASE("reduce_dtype fp32: every gradient reduction carries 4 bytes per element, unset is the training precision") {
  for (const char* kind : {"zero3", "hsdp"}) {
    auto base = scenario("p4d.24xlarge", 4, "gpt2-10b", kind, 2, 2 * 32 * 2, {}, 512);
    auto same = scenario("p4d.24xlarge", 4, "gpt2-10b", kind, 2, 2 * 32 * 2, {"strategy.reduce_dtype=fp16"}, 512);
    auto fp32 = scenario("p4d.24xlarge", 4, "gpt2-10b", kind, 2, 2 * 32 * 2, {"strategy.reduce_dtype=fp32"}, 512);
    const PreparedSimulation p = prepare_simulation(base);
    const auto b16 = reduction_bytes(base), b32 = reduction_bytes(fp32);
    // Reduce-scatter: the whole gradient once per micro-step (fp16 scenario: 2 bytes per parameter).
    CHECK(b16.at(TaskKind::GradReduceScatter) == rel_approx(2.0 * double(p.workload.params.total)));
    CHECK(b32.at(TaskKind::GradReduceScatter) == rel_approx(2.0 * b16.at(TaskKind::GradReduceScatter)));
    if (b16.count(TaskKind::GradAllReduce))  // HSDP's replication all-reduce of the shard
      CHECK(b32.at(TaskKind::GradAllReduce) == rel_approx(2.0 * b16.at(TaskKind::GradAllReduce)));
    // The training precision stated explicitly is the default, to the last bit.
    CHECK(run(same).iteration_time_s == run(base).iteration_time_s);
    // Twice the bytes on the same links is never faster.
    CHECK(run(fp32).iteration_time_s >= run(base).iteration_time_s);
  }
}

TEST_CASE("reduce_dtype fp32 doubles the gradient buffer (the reduce-scatter input) and the peak grows by as much") {
  auto base = scenario("p4d.24xlarge", 2, "gpt2-10b", "zero3", 2, 2 * 16, {"strategy.framework=fsdp2"}, 512);
  auto fp32 = scenario("p4d.24xlarge", 2, "gpt2-10b", "zero3", 2, 2 * 16, {"strategy.framework=fsdp2", "strategy.reduce_dtype=fp32"}, 512);
  const auto m16 = run(base).memory, m32 = run(fp32).memory;
  REQUIRE(m16.grad_buffer_bytes > 0);
  CHECK(m32.grad_buffer_bytes == rel_approx(2.0 * m16.grad_buffer_bytes));
  CHECK(m32.model_states_bytes == m16.model_states_bytes);  // shards are unchanged
  CHECK(m32.peak_bytes == rel_approx(m16.peak_bytes + m16.grad_buffer_bytes));
}

TEST_CASE("reduce_dtype: a bad value is an error naming the key, hand-offs carry the simulated precision") {
  CHECK_THROWS_WITH_AS(scenario("p4d.24xlarge", 2, "gpt2-10b", "zero3", 2, 32, {"strategy.reduce_dtype=fp64"}),
                       doctest::Contains("strategy.reduce_dtype"), InputError);
  auto fp32 = scenario("p4d.24xlarge", 2, "gpt2-10b", "zero3", 2, 32, {"strategy.reduce_dtype=fp32"});
  auto base = scenario("p4d.24xlarge", 2, "gpt2-10b", "zero3", 2, 32);
  CHECK(fsdp2_script(fp32, nullptr).find("\"reduce_dtype\": \"float32\"") != std::string::npos);
  CHECK(fsdp2_script(base, nullptr).find("\"reduce_dtype\": \"float16\"") != std::string::npos);
  const auto ds = deepspeed_handoff(fp32);
  REQUIRE(ds.config);
  CHECK((*ds.config)["communication_data_type"] == "fp32");
  CHECK_FALSE(deepspeed_handoff(base).config->contains("communication_data_type"));
  // And back: DeepSpeed lower-cases communication_data_type; anything but fp32/fp16/bf16 is refused with its line.
  const auto back = parse_deepspeed_config("{\n  \"communication_data_type\": \"FP32\"\n}\n", "ds.json", 16);
  bool found = false;
  for (const auto& o : back.overrides) found = found || o.assignment == "strategy.reduce_dtype=fp32";
  CHECK(found);
  CHECK_THROWS_WITH_AS(parse_deepspeed_config("{\n  \"communication_data_type\": \"int8\"\n}\n", "ds.json", 16),
                       doctest::Contains("ds.json:2"), InputError);
}
