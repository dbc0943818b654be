#include "profiler/link_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "profiler/layer_profiler.h"
#include "profiler/link_sweep.h"

namespace pipeplan::profiler {
namespace {

constexpr int kTag = 71;

// One round trip of `bytes` between ranks 0 and 1.
double round_trip_s(std::vector<char>& buffer, std::int64_t bytes, int rank) {
  const int count = static_cast<int>(bytes);
  const double start = MPI_Wtime();
  if (rank == 0) {
    MPI_Send(buffer.data(), count, MPI_BYTE, 1, kTag, MPI_COMM_WORLD);
    MPI_Recv(buffer.data(), count, MPI_BYTE, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Recv(buffer.data(), count, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buffer.data(), count, MPI_BYTE, 0, kTag, MPI_COMM_WORLD);
  }
  return MPI_Wtime() - start;
}

}  // namespace

models::LinkProfile measure_links_mpi(std::int64_t max_bytes, int warmup, int repeats) {
  int ranks = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (ranks < 2) throw InputError("the mpi link sweep needs 2 ranks: run it as mpirun -np 2 pipeplan profile links");
  if (max_bytes < 1 || max_bytes > (std::int64_t{1} << 30)) {
    throw InputError("--max-bytes must lie in 1 B .. 1 GiB (MPI counts are ints)");
  }
  std::vector<char> buffer(static_cast<std::size_t>(max_bytes), 1);  // never zeros: no compression tricks
  return sweep_link("mpi", max_bytes, warmup, repeats, [&](std::int64_t bytes) {
    MPI_Barrier(MPI_COMM_WORLD);
    return round_trip_s(buffer, bytes, rank) / 2;
  });
}

}  // namespace pipeplan::profiler
