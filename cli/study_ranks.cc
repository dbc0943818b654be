#include "cli/study_ranks.h"

#include <fmt/format.h>

#include <climits>
#include <numeric>

#include "cli/launcher.h"
#include "common/error.h"

#ifdef PIPEPLAN_HAVE_MPI
#include <mpi.h>
#endif

namespace pipeplan::cli {

StudyRanks::StudyRanks() {
  if (launcher_size() <= 1) return;
#ifdef PIPEPLAN_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    MPI_Init(nullptr, nullptr);
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
#else
  throw InputError(fmt::format("mpirun started {} processes but this pipeplan was built without MPI: install "
                               "libopenmpi-dev and rebuild, or run the study without mpirun",
                               launcher_size()));
#endif
}

StudyRanks::~StudyRanks() {
#ifdef PIPEPLAN_HAVE_MPI
  if (owns_mpi_) MPI_Finalize();
#endif
}

std::vector<std::string> StudyRanks::gather(const std::string& bytes) const {
  if (ranks_ == 1) return {bytes};
#ifdef PIPEPLAN_HAVE_MPI
  // Every rank learns every size, so that all refuse an oversized gather alike.
  const auto mine = static_cast<long long>(bytes.size());
  std::vector<long long> sizes(static_cast<std::size_t>(ranks_));
  MPI_Allgather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
  if (std::accumulate(sizes.begin(), sizes.end(), 0LL) > INT_MAX) {
    throw InputError("the study's results pass 2 GiB, more than one MPI gather carries: split the sweep into "
                     "several studies");
  }
  std::vector<int> counts(sizes.begin(), sizes.end());
  std::vector<int> offsets(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, offsets.begin() + 1);
  std::string all(static_cast<std::size_t>(offsets.back() + counts.back()), '\0');
  MPI_Gatherv(bytes.data(), counts[static_cast<std::size_t>(rank_)], MPI_CHAR, all.data(), counts.data(),
              offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank_ != 0) return {};
  std::vector<std::string> parts;
  for (std::size_t rank = 0; rank < counts.size(); ++rank) parts.push_back(all.substr(offsets[rank], counts[rank]));
  return parts;
#else
  return {bytes};
#endif
}

}  // namespace pipeplan::cli
