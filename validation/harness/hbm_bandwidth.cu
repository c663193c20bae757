// HBM bandwidth: device-to-device copies of a large buffer, timed with CUDA events after warm-up.
// Counts read + write bytes. Output: CSV test,bytes,time_us,gbytes_per_s.
//   micsim_hbm_bandwidth [--bytes 1G] [--iters 20] [--out hbm.csv]
#include <fstream>
#include <sstream>

#include "validation/harness/common.hpp"

int main(int argc, char** argv) {
  harness::require_gpus();
  const size_t bytes = size_t(harness::parse_size(harness::arg(argc, argv, "--bytes", "1G")));
  const int iters = std::atoi(harness::arg(argc, argv, "--iters", "20").c_str());
  const std::string out_path = harness::arg(argc, argv, "--out", "-");
  void *a, *b;
  harness::check(cudaMalloc(&a, bytes), "cudaMalloc");
  harness::check(cudaMalloc(&b, bytes), "cudaMalloc");
  harness::check(cudaMemset(a, 1, bytes), "cudaMemset");
  cudaEvent_t t0, t1;
  harness::check(cudaEventCreate(&t0), "event");
  harness::check(cudaEventCreate(&t1), "event");
  for (int i = 0; i < 3; ++i) harness::check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "warm-up copy");
  harness::check(cudaEventRecord(t0), "record");
  for (int i = 0; i < iters; ++i) harness::check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice), "copy");
  harness::check(cudaEventRecord(t1), "record");
  harness::check(cudaEventSynchronize(t1), "synchronize");
  float ms = 0;
  harness::check(cudaEventElapsedTime(&ms, t0, t1), "elapsed");
  const double us = 1000.0 * ms / iters;
  std::ostringstream csv;
  csv << "test,bytes,time_us,gbytes_per_s\n";
  csv << "device_to_device_copy," << bytes << ',' << us << ',' << 2.0 * bytes / (us * 1e-6) / 1e9 << '\n';
  if (out_path == "-") std::fputs(csv.str().c_str(), stdout);
  else std::ofstream(out_path) << csv.str();
  return 0;
}
