// The CUDA/NCCL harness: built whenever nvcc is found; without a GPU its programs exit 77 and these
// tests say so; with one, their output is what `micsim calibrate` reads.
#include <doctest/doctest.h>

#include <cstdlib>

#include "helpers.hpp"
#include "validation/gemm.hpp"
#include "validation/nccl_tests.hpp"

using namespace micsim;

#ifdef MICSIM_HARNESS_DIR
static int run(const std::string& cmd) {
  int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST_CASE("harness: GEMM sweep and NCCL benchmark run on a GPU, or skip cleanly without one") {
  const std::string dir = MICSIM_HARNESS_DIR;
  const std::string tmp = micsim::test::temp_path("harness");
  std::string shapes = micsim::test::temp_file("shapes.csv", "name,m,n,k,batch,count\nsq,1024,1024,1024,1,1\nbmm,512,512,64,8,1\n");
  int rc = run(dir + "/micsim_gemm_sweep --shapes " + shapes + " --dtype bf16 --iters 5 --out " + tmp + "-gemm.csv 2>/dev/null");
  if (rc == 77) {
    MESSAGE("skipped: no GPU on this machine (the harness programs exit 77)");
    CHECK(run(dir + "/micsim_nccl_bench --op all_gather 2>/dev/null") == 77);
    CHECK(run(dir + "/micsim_hbm_bandwidth 2>/dev/null") == 77);
    return;
  }
  REQUIRE(rc == 0);
  auto rows = load_gemm_csv(tmp + "-gemm.csv");
  CHECK(rows.size() == 2);
  CHECK(rows[0].time_s > 0);
  rc = run(dir + "/micsim_nccl_bench --op all_reduce -b 1K -e 1M -f 4 > " + tmp + "-nccl.txt 2>/dev/null");
  REQUIRE(rc == 0);
  auto nccl = load_nccl_tests(tmp + "-nccl.txt");
  CHECK(nccl.size() == 6);
  CHECK(nccl[0].op == CollectiveOp::AllReduce);
}
#else
TEST_CASE("harness: not built (nvcc not found)") { MESSAGE("skipped: nvcc was not found, so the CUDA harness was not built"); }
#endif

TEST_CASE("harness: the PyTorch probes run, or say why not and exit 77 (no PyTorch or no GPU)") {
  // They need neither nvcc nor a build: python3 and, to measure, PyTorch with a GPU. Tiny settings, so
  // that on a GPU machine this stays a smoke test; their results are whatever the GPU gives.
  if (micsim::test::run_shell("command -v python3 >/dev/null 2>&1").status != 0) {
    MESSAGE("skipped: no python3");
    return;
  }
  const std::string dir = std::string(MICSIM_SOURCE_DIR) + "/validation/harness/";
  const std::string out = micsim::test::temp_dir("probes");
  struct Probe { std::string script, args, output; };
  const std::vector<Probe> probes = {
      {"compute_jitter.py", "--iters 20", "jitter.csv"},
      {"attention_sweep.py", "--gpu H200-SXM-141GB --iters 1 --tokens 2048", "attention.csv"},
      {"framework_overhead.py", "--repeats 2", "overhead.csv"},
      {"train_step.py", "--warmup 1 --steps 1 --config tiny:2:256:4:2:512:1000:256:1:full:cudnn", "train.csv"},
  };
  for (const auto& p : probes) {
    const auto r = micsim::test::run_shell("python3 " + dir + p.script + " " + p.args + " --out " + out + "/" + p.output + " 2>&1");
    const bool ran = r.status == 0, skipped = r.status == 77;
    CHECK_MESSAGE((ran || skipped), p.script << " exited " << r.status << ": " << r.output);
    if (skipped) CHECK_MESSAGE(r.output.find("nothing measured") != std::string::npos, r.output);
    if (ran) CHECK_FALSE(micsim::test::read_text(out + "/" + p.output).empty());
  }
}
