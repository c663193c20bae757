#pragma once
// Shared by the harness programs: error checks that exit with a message, the "no GPU" exit status
// (77, the conventional "skipped"), and a small argument reader.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace harness {

constexpr int kNoGpu = 77;

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "harness: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Exits with 77 and a clear message when there is no usable GPU.
inline int require_gpus() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::fprintf(stderr, "harness: no GPU available (%s): nothing to measure\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    std::exit(kNoGpu);
  }
  return n;
}

// --name value arguments.
inline std::string arg(int argc, char** argv, const char* name, const std::string& dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return dflt;
}

inline double parse_size(const std::string& s) {
  double v = std::atof(s.c_str());
  switch (s.empty() ? ' ' : s.back()) {
    case 'K': case 'k': return v * 1024.0;
    case 'M': case 'm': return v * 1048576.0;
    case 'G': case 'g': return v * 1073741824.0;
    default: return v;
  }
}

}  // namespace harness
