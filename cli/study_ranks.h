// The processes a study runs on: this one alone, or the ranks `mpirun`
// started (MPI is joined only then, so a plain `pipeplan study` never
// touches it).
#pragma once

#include <string>
#include <vector>

namespace pipeplan::cli {

class StudyRanks {
 public:
  // Throws InputError when mpirun started several processes but this
  // program was built without MPI.
  StudyRanks();
  ~StudyRanks();
  StudyRanks(const StudyRanks&) = delete;
  StudyRanks& operator=(const StudyRanks&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  // Every rank's bytes, in rank order, on rank 0; empty on the others. Every
  // rank must call it.
  std::vector<std::string> gather(const std::string& bytes) const;

 private:
  bool owns_mpi_ = false;
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace pipeplan::cli
