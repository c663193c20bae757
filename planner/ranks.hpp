#pragma once
// Ranks of a plan or sweep spread over machines with MPI (`mpirun -np N micsim plan ...`, `srun`).
// Every rank runs the same program on the same inputs (SPMD): candidates are split by index
// (i mod N), each rank evaluates its own, and the results are exchanged so that every rank holds all
// of them in index order; decisions made on them (the top K, the ranking) are then identical on every
// rank, and only rank 0 writes outputs, checkpoints and messages. Without mpirun (or without MPI at
// build time) there is one rank and nothing changes.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace micsim::ranks {

// MPI_Init when the process was started by an MPI launcher (its environment says so); safe to call
// once at start-up in every case. finalize() ends MPI if it was started.
void init_if_launched(int* argc, char*** argv);
void finalize();

int rank();
int size();
int local_size();  // ranks on this machine
inline bool is_root() { return rank() == 0; }
inline bool owns(size_t index) { return int(index % size_t(size())) == rank(); }

// Every rank passes (index, payload) for the indices it owns; every rank gets the n payloads in
// index order (an index no rank sent stays empty).
std::vector<std::string> all_gather_indexed(size_t n, const std::vector<std::pair<size_t, std::string>>& mine);

// Ends every rank with this exit status (an error on one rank must not leave the others waiting).
[[noreturn]] void abort_all(int status);

// Whether this build can run over MPI (for messages and tests).
bool built_with_mpi();

}  // namespace micsim::ranks
