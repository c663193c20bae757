// Parameter counts computed from the architecture match the published sizes.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "models/workload/model_spec.hpp"

using namespace micsim;

static double billions(const char* preset) { return count_params(*find_model_preset(preset)).total / 1e9; }

TEST_CASE("preset parameter counts match published sizes") {
  CHECK(billions("bert-10b") == rel_approx(10.09).epsilon(0.0005));
  CHECK(billions("llama2-7b") == rel_approx(6.74).epsilon(0.001));
  CHECK(count_params(*find_model_preset("llama2-7b")).total == 6738415616);  // HF Llama-2-7b-hf
  CHECK(billions("llama2-13b") == rel_approx(13.016).epsilon(0.001));
  CHECK(billions("llama2-70b") == rel_approx(68.98).epsilon(0.001));
  CHECK(billions("bert-15b") == rel_approx(15.04).epsilon(0.001));
  CHECK(billions("bert-20b") == rel_approx(20.0).epsilon(0.005));
  CHECK(billions("bert-50b") == rel_approx(50.2).epsilon(0.002));
  CHECK(billions("roberta-10b") == rel_approx(9.73).epsilon(0.001));
  CHECK(billions("gpt2-10b") == rel_approx(10.01).epsilon(0.001));
  CHECK(billions("gpt-175b") == rel_approx(174.6).epsilon(0.005));
}
