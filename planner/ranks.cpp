#include "planner/ranks.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#ifdef MICSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace micsim::ranks {

namespace {
int g_rank = 0, g_size = 1, g_local_size = 1;
bool g_started = false;

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }
uint64_t get_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
}  // namespace

bool built_with_mpi() {
#ifdef MICSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void init_if_launched(int* argc, char*** argv) {
#ifdef MICSIM_HAVE_MPI
  if (g_started || !launched_by_mpi()) return;
  // SimGrid runs in forked children that never call MPI: Open MPI need not warn about fork().
  ::setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  // Ranks sharing this machine share its cores (default thread counts divide by this).
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &g_local_size);
  MPI_Comm_free(&local);
  g_started = true;
#else
  (void)argc, (void)argv;
#endif
}

void finalize() {
#ifdef MICSIM_HAVE_MPI
  if (g_started) MPI_Finalize();
  g_started = false;
#endif
}

void abort_all(int status) {
#ifdef MICSIM_HAVE_MPI
  if (g_started && g_size > 1) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::exit(status);
}

int rank() { return g_rank; }
int size() { return g_size; }
int local_size() { return g_local_size; }

std::vector<std::string> all_gather_indexed(size_t n, const std::vector<std::pair<size_t, std::string>>& mine) {
  std::vector<std::string> out(n);
  if (g_size == 1) {
    for (const auto& [i, s] : mine)
      if (i < n) out[i] = s;
    return out;
  }
#ifdef MICSIM_HAVE_MPI
  // Records of (index, length, bytes), concatenated; lengths first so every rank can size its buffer.
  std::string buf;
  for (const auto& [i, s] : mine) put_u64(buf, i), put_u64(buf, s.size()), buf += s;
  if (buf.size() > size_t(INT32_MAX)) throw std::runtime_error("MPI exchange larger than 2 GiB from one rank");
  int len = int(buf.size());
  std::vector<int> lens(g_size), displs(g_size);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int64_t total = 0;
  for (int r = 0; r < g_size; ++r) {
    if (total > INT32_MAX) throw std::runtime_error("MPI exchange larger than 2 GiB");
    displs[r] = int(total);
    total += lens[r];
  }
  if (total > INT32_MAX) throw std::runtime_error("MPI exchange larger than 2 GiB");
  std::string all(size_t(total), '\0');
  MPI_Allgatherv(buf.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  for (size_t p = 0; p + 16 <= all.size();) {
    const uint64_t i = get_u64(all.data() + p), l = get_u64(all.data() + p + 8);
    p += 16;
    if (p + l > all.size()) throw std::runtime_error("malformed MPI exchange");
    if (i < n) out[i].assign(all.data() + p, l);
    p += l;
  }
#endif
  return out;
}

}  // namespace micsim::ranks
