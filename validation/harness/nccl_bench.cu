// NCCL benchmark in nccl-tests' output format (micsim's own formatter, so `micsim calibrate` and
// `micsim validate` read it unchanged): all_gather, reduce_scatter, all_reduce, and the intra-node
// step of MiCS's hierarchical all-gather (k coalesced all-gathers in one group call).
//
// Single process, every visible GPU (or --gpus N), optionally split into concurrent communicators of
// --group-size ranks (several partition groups inside a node):
//   micsim_nccl_bench --op all_gather -b 8 -e 1G -f 2 [--gpus 8] [--group-size 8] [--coalesce k]
// One process per GPU across nodes (torchrun-style RANK, WORLD_SIZE, LOCAL_RANK; the NCCL id is
// exchanged through a file on a shared filesystem):
//   MICSIM_NCCL_ID_FILE=/shared/id RANK=.. WORLD_SIZE=.. LOCAL_RANK=.. micsim_nccl_bench --op ...
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "validation/harness/common.hpp"
#include "validation/nccl_tests.hpp"

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::fprintf(stderr, "nccl_bench: %s: %s\n", what, ncclGetErrorString(r));
    std::exit(1);
  }
}

struct Rank {
  int device = 0;
  ncclComm_t comm{};
  cudaStream_t stream{};
  void* send = nullptr;
  void* recv = nullptr;
};

// Launches one operation of `bytes` (nccl-tests convention) on every rank of this process.
void launch(const std::string& op, std::vector<Rank>& ranks, int group_size, size_t bytes, int coalesce) {
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (auto& r : ranks) {
    const size_t count = bytes / sizeof(float);  // elements of the whole buffer
    if (op == "all_reduce") {
      nccl_check(ncclAllReduce(r.send, r.recv, count, ncclFloat, ncclSum, r.comm, r.stream), "ncclAllReduce");
    } else if (op == "reduce_scatter") {
      nccl_check(ncclReduceScatter(r.send, r.recv, count / group_size, ncclFloat, ncclSum, r.comm, r.stream), "ncclReduceScatter");
    } else {  // all_gather, possibly as k coalesced sub-all-gathers (hierarchical step 3)
      const size_t per = count / group_size / coalesce;
      for (int j = 0; j < coalesce; ++j)
        nccl_check(ncclAllGather(static_cast<float*>(r.send) + j * per, static_cast<float*>(r.recv) + j * per * group_size, per,
                                 ncclFloat, r.comm, r.stream),
                   "ncclAllGather");
    }
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace

int main(int argc, char** argv) {
  const int visible = harness::require_gpus();
  const std::string op = harness::arg(argc, argv, "--op", "all_reduce");
  if (op != "all_reduce" && op != "all_gather" && op != "reduce_scatter") {
    std::fprintf(stderr, "usage: micsim_nccl_bench --op all_gather|reduce_scatter|all_reduce -b MIN -e MAX -f FACTOR\n");
    return 2;
  }
  const double lo = harness::parse_size(harness::arg(argc, argv, "-b", "8"));
  const double hi = harness::parse_size(harness::arg(argc, argv, "-e", "256M"));
  const double factor = std::atof(harness::arg(argc, argv, "-f", "2").c_str());
  const int warmup = std::atoi(harness::arg(argc, argv, "--warmup", "5").c_str());
  const int iters = std::atoi(harness::arg(argc, argv, "--iters", "20").c_str());
  const int coalesce = std::max(1, std::atoi(harness::arg(argc, argv, "--coalesce", "1").c_str()));
  const char* world_env = std::getenv("WORLD_SIZE");
  const bool multi = world_env != nullptr;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);

  std::vector<Rank> ranks;
  int world = 0, my_rank = 0, group_size = 0;
  if (!multi) {
    const int gpus = std::min(visible, std::atoi(harness::arg(argc, argv, "--gpus", std::to_string(visible)).c_str()));
    group_size = std::atoi(harness::arg(argc, argv, "--group-size", std::to_string(gpus)).c_str());
    if (gpus < 1 || group_size < 1 || gpus % group_size != 0) {
      std::fprintf(stderr, "nccl_bench: --group-size must divide the GPU count (%d)\n", gpus);
      return 2;
    }
    world = gpus;
    ranks.resize(gpus);
    // Communicators of group_size GPUs each, all running at once (ncclCommInitAll per group).
    for (int g0 = 0; g0 < gpus; g0 += group_size) {
      std::vector<int> devs;
      std::vector<ncclComm_t> comms(group_size);
      for (int i = 0; i < group_size; ++i) devs.push_back(g0 + i);
      nccl_check(ncclCommInitAll(comms.data(), group_size, devs.data()), "ncclCommInitAll");
      for (int i = 0; i < group_size; ++i) ranks[g0 + i].device = g0 + i, ranks[g0 + i].comm = comms[i];
    }
  } else {
    world = std::atoi(world_env);
    my_rank = std::atoi(std::getenv("RANK") ? std::getenv("RANK") : "0");
    const int local = std::atoi(std::getenv("LOCAL_RANK") ? std::getenv("LOCAL_RANK") : "0");
    const char* id_file = std::getenv("MICSIM_NCCL_ID_FILE");
    if (!id_file) {
      std::fprintf(stderr, "nccl_bench: set MICSIM_NCCL_ID_FILE (a path on a shared filesystem) with WORLD_SIZE\n");
      return 2;
    }
    group_size = world;
    ncclUniqueId id;
    if (my_rank == 0) {
      nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::string tmp = std::string(id_file) + ".tmp";
      std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
      std::rename(tmp.c_str(), id_file);
    } else {
      for (int tries = 0;; ++tries) {
        std::ifstream in(id_file, std::ios::binary);
        if (in.read(reinterpret_cast<char*>(&id), sizeof id)) break;
        if (tries > 6000) {
          std::fprintf(stderr, "nccl_bench: no NCCL id in %s after 10 minutes\n", id_file);
          return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    ranks.resize(1);
    ranks[0].device = local;
    harness::check(cudaSetDevice(local), "cudaSetDevice");
    nccl_check(ncclCommInitRank(&ranks[0].comm, world, id, my_rank), "ncclCommInitRank");
  }
  const size_t max_bytes = size_t(hi) + 4096;
  for (auto& r : ranks) {
    harness::check(cudaSetDevice(r.device), "cudaSetDevice");
    harness::check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "stream");
    harness::check(cudaMalloc(&r.send, max_bytes), "send buffer");
    harness::check(cudaMalloc(&r.recv, max_bytes), "recv buffer");
    harness::check(cudaMemset(r.send, 0, max_bytes), "memset");
  }
  // The header nccl-tests prints (rank 0 of a multi-process run prints for everyone).
  std::string out;
  if (my_rank == 0) {
    int version = 0;
    ncclGetVersion(&version);
    out += "# micsim validation harness: nccl-tests-format output (NCCL " + std::to_string(version) + ")\n";
    out += "# Collective test starting: " + op + "_perf\n";
    out += "# nThread 1 nGpus " + std::to_string(ranks.size()) + " minBytes " + std::to_string(size_t(lo)) + " maxBytes " +
           std::to_string(size_t(hi)) + " warmup iters: " + std::to_string(warmup) + " iters: " + std::to_string(iters) +
           " group size: " + std::to_string(group_size) + " coalesced: " + std::to_string(coalesce) + "\n#\n# Using devices\n";
    const int listed = multi ? world : int(ranks.size());
    for (int i = 0; i < listed; ++i) {
      cudaDeviceProp prop{};
      cudaGetDeviceProperties(&prop, multi ? ranks[0].device : ranks[i].device);
      // In a multi-process run other ranks' hosts are not known here; their node is given by rank / local GPUs.
      std::string where = multi ? "node" + std::to_string(i / std::max(1, visible)) : std::string(host);
      out += "#  Rank " + std::to_string(i) + " Group  0 Pid " + std::to_string(getpid()) + " on " + where + " device " +
             std::to_string(multi ? i % std::max(1, visible) : ranks[i].device) + " [harness] " + prop.name + "\n";
    }
    out += "#\n" + micsim::nccl_tests_header();
  }
  const micsim::CollectiveOp cop = *micsim::parse_collective_op(op);
  for (double b = lo; b <= hi * (1 + 1e-9); b *= factor) {
    size_t bytes = size_t(b) / 4 * 4;
    if (op != "all_reduce") bytes = std::max<size_t>(4 * group_size * coalesce, bytes / (4 * group_size * coalesce) * 4 * group_size * coalesce);
    if (bytes == 0) continue;
    for (int i = 0; i < warmup; ++i) launch(op, ranks, group_size, bytes, coalesce);
    for (auto& r : ranks) cudaSetDevice(r.device), harness::check(cudaStreamSynchronize(r.stream), "sync");
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) launch(op, ranks, group_size, bytes, coalesce);
    for (auto& r : ranks) cudaSetDevice(r.device), harness::check(cudaStreamSynchronize(r.stream), "sync");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (my_rank == 0) out += micsim::nccl_tests_line(cop, double(bytes), 4, secs, micsim::busbw_factor(cop, group_size));
  }
  if (my_rank == 0) {
    out += "# Out of bounds values : 0 OK\n#\n# Collective test concluded: " + op + "_perf\n";
    std::fputs(out.c_str(), stdout);
  }
  for (auto& r : ranks) ncclCommDestroy(r.comm);
  return 0;
}
