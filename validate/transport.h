// How the ranks of a validation run talk: point-to-point tensors between
// neighbouring stages, a barrier to start iterations together, a gather of
// each rank's measurements to rank 0 and a broadcast from it (the GPU
// backend's NCCL ids travel this way). MPI provides it across processes;
// threads provide it inside one process for tests.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/cpu/layer.h"

namespace pipeplan::validate {

using profiler::Matrix;

// Another rank stopped answering (it died or stalled): names the rank.
class RankFailure : public std::runtime_error {
 public:
  RankFailure(int failed_rank, const std::string& message) : std::runtime_error(message), failed_rank_(failed_rank) {}
  int failed_rank() const { return failed_rank_; }

 private:
  int failed_rank_;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // This rank's index among the ranks on its host (which GPU it takes).
  virtual int local_rank() const = 0;
  // `key` names the tensor (stage, micro-batch, direction) on both sides.
  // A send returns at once; the tensor is delivered in the background.
  virtual void send(int to_rank, std::int64_t key, const Matrix& tensor) = 0;
  // Blocks until the tensor arrives; throws RankFailure when `from_rank`
  // sends nothing within the timeout.
  virtual Matrix receive(int from_rank, std::int64_t key, Eigen::Index rows, Eigen::Index cols) = 0;
  virtual void finish_sends() = 0;  // every send of this rank delivered
  void barrier() { barrier(timeout_s()); }
  // For waits known to be long (another rank measuring its layers).
  virtual void barrier(double timeout_s) = 0;
  virtual double timeout_s() const = 0;
  // Rank 0 gets every rank's values (by rank); the others get nothing.
  virtual std::vector<std::vector<double>> gather(const std::vector<double>& values) = 0;
  // Every rank gets rank 0's values (the others' argument is ignored);
  // throws RankFailure naming rank 0, or a rank that took nothing, on timeout.
  virtual std::vector<double> broadcast(const std::vector<double>& values) = 0;
};

}  // namespace pipeplan::validate
