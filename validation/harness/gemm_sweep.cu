// GEMM sweep: times the exact GEMM shapes of a model's layers (from `micsim shapes`) with cuBLASLt
// (cuBLAS strided-batched for attention's batched GEMMs), in fp16 or bf16, with CUDA events after
// warm-up. Output: CSV name,m,n,k,batch,dtype,time_us,tflops (read by `micsim calibrate --gemm`).
//   micsim_gemm_sweep --shapes shapes.csv --dtype bf16 [--warmup 10] [--iters 50] [--out gemm.csv]
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "validation/harness/common.hpp"

namespace {

struct Shape {
  std::string name;
  long m, n, k, batch;
};

std::vector<Shape> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "gemm_sweep: cannot open %s\n", path.c_str());
    std::exit(2);
  }
  std::vector<Shape> out;
  std::string line;
  std::getline(in, line);  // header: name,m,n,k,batch[,count]
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::stringstream ss(line);
    Shape s;
    std::string f[5];
    for (auto& x : f) std::getline(ss, x, ',');
    s.name = f[0];
    s.m = std::atol(f[1].c_str()), s.n = std::atol(f[2].c_str()), s.k = std::atol(f[3].c_str());
    s.batch = f[4].empty() ? 1 : std::atol(f[4].c_str());
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) {
      std::fprintf(stderr, "gemm_sweep: %s:%d: expected name,m,n,k,batch with positive sizes\n", path.c_str(), lineno);
      std::exit(2);
    }
    out.push_back(s);
  }
  return out;
}

__global__ void fill(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u + seed;
    p[i] = (unsigned short)(0x3800 | (x & 0x3ff));  // a half/bf16-ish small positive value; timing only
  }
}

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gemm_sweep: %s failed (cuBLAS status %d)\n", what, int(s));
    std::exit(1);
  }
}

// The cuBLASLt descriptors and the heuristic's algorithm for one shape.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void prepare(cublasLtHandle_t lt, cudaDataType_t dt, const Shape& s, size_t ws_bytes) {
    cublas_check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    cublas_check(cublasLtMatrixLayoutCreate(&a, dt, s.m, s.k, s.m), "layout A");
    cublas_check(cublasLtMatrixLayoutCreate(&b, dt, s.k, s.n, s.k), "layout B");
    cublas_check(cublasLtMatrixLayoutCreate(&c, dt, s.m, s.n, s.m), "layout C");
    cublasLtMatmulPreference_t pref;
    cublas_check(cublasLtMatmulPreferenceCreate(&pref), "preference");
    cublas_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes),
                 "workspace preference");
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    cublas_check(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 1, &heur, &found), "heuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0) {
      std::fprintf(stderr, "gemm_sweep: no cuBLASLt algorithm for %s\n", s.name.c_str());
      std::exit(1);
    }
    algo = heur.algo;
  }
  ~LtPlan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

}  // namespace

int main(int argc, char** argv) {
  harness::require_gpus();
  const std::string shapes_path = harness::arg(argc, argv, "--shapes", "");
  const std::string dtype_name = harness::arg(argc, argv, "--dtype", "bf16");
  const int warmup = std::atoi(harness::arg(argc, argv, "--warmup", "10").c_str());
  const int iters = std::atoi(harness::arg(argc, argv, "--iters", "50").c_str());
  const std::string out_path = harness::arg(argc, argv, "--out", "-");
  if (shapes_path.empty() || (dtype_name != "fp16" && dtype_name != "bf16") || iters <= 0) {
    std::fprintf(stderr, "usage: micsim_gemm_sweep --shapes shapes.csv [--dtype fp16|bf16] [--warmup N] [--iters N] [--out FILE]\n");
    return 2;
  }
  const cudaDataType_t dt = dtype_name == "fp16" ? CUDA_R_16F : CUDA_R_16BF;
  auto shapes = read_shapes(shapes_path);
  cublasLtHandle_t lt;
  cublas_check(cublasLtCreate(&lt), "cublasLtCreate");
  cublasHandle_t blas;
  cublas_check(cublasCreate(&blas), "cublasCreate");
  cudaStream_t stream;
  harness::check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublas_check(cublasSetStream(blas, stream), "cublasSetStream");
  const size_t ws_bytes = size_t(64) << 20;
  void* ws;
  harness::check(cudaMalloc(&ws, ws_bytes), "workspace");
  cudaEvent_t t0, t1;
  harness::check(cudaEventCreate(&t0), "event");
  harness::check(cudaEventCreate(&t1), "event");
  std::ostringstream csv;
  csv << "name,m,n,k,batch,dtype,time_us,tflops\n";
  const float alpha = 1.0f, beta = 0.0f;
  for (const auto& s : shapes) {
    const size_t na = size_t(s.m) * s.k * s.batch, nb = size_t(s.k) * s.n * s.batch, nc = size_t(s.m) * s.n * s.batch;
    unsigned short *A, *B, *C;
    if (cudaMalloc(&A, na * 2) != cudaSuccess || cudaMalloc(&B, nb * 2) != cudaSuccess || cudaMalloc(&C, nc * 2) != cudaSuccess) {
      std::fprintf(stderr, "gemm_sweep: %s (%ldx%ldx%ld x%ld) does not fit in GPU memory; skipped\n", s.name.c_str(), s.m, s.n, s.k, s.batch);
      cudaGetLastError();
      continue;
    }
    fill<<<1024, 256, 0, stream>>>(A, na, 1);
    fill<<<1024, 256, 0, stream>>>(B, nb, 2);
    // Column-major C[m x n] = A[m x k] · B[k x n] (no transposes).
    LtPlan plan;
    if (s.batch == 1) plan.prepare(lt, dt, s, ws_bytes);
    auto run = [&]() {
      if (s.batch > 1) {
        cublas_check(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, int(s.m), int(s.n), int(s.k), &alpha, A, dt, int(s.m),
                                                long(s.m) * s.k, B, dt, int(s.k), long(s.k) * s.n, &beta, C, dt, int(s.m),
                                                long(s.m) * s.n, int(s.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmStridedBatchedEx");
      } else {
        cublas_check(cublasLtMatmul(lt, plan.op, &alpha, A, plan.a, B, plan.b, &beta, C, plan.c, C, plan.c, &plan.algo, ws, ws_bytes,
                                    stream),
                     "cublasLtMatmul");
      }
    };
    for (int i = 0; i < warmup; ++i) run();
    harness::check(cudaEventRecord(t0, stream), "record");
    for (int i = 0; i < iters; ++i) run();
    harness::check(cudaEventRecord(t1, stream), "record");
    harness::check(cudaEventSynchronize(t1), "synchronize");
    float ms = 0;
    harness::check(cudaEventElapsedTime(&ms, t0, t1), "elapsed");
    const double us = 1000.0 * ms / iters;
    const double tflops = 2.0 * s.m * s.n * double(s.k) * s.batch / (us * 1e-6) / 1e12;
    csv << s.name << ',' << s.m << ',' << s.n << ',' << s.k << ',' << s.batch << ',' << dtype_name << ',' << us << ',' << tflops << '\n';
    std::fprintf(stderr, "%-28s %8ld x %8ld x %8ld x %4ld  %10.1f us  %7.1f TFLOPS\n", s.name.c_str(), s.m, s.n, s.k, s.batch, us, tflops);
    cudaFree(A), cudaFree(B), cudaFree(C);
  }
  if (out_path == "-") {
    std::fputs(csv.str().c_str(), stdout);
  } else {
    std::ofstream(out_path + ".tmp") << csv.str();
    std::rename((out_path + ".tmp").c_str(), out_path.c_str());
  }
  return 0;
}
