// The transport of a validation run across MPI processes: non-blocking
// point-to-point sends and receives of fp32 tensors, polled against a
// deadline so that a rank that died or stalled is named instead of
// waited on forever.
#pragma once

#include <mpi.h>

#include <list>
#include <vector>

#include "validate/transport.h"

namespace pipeplan::validate {

class MpiTransport : public Transport {
 public:
  // MPI must be initialised. Tensors and control messages travel on
  // duplicates of MPI_COMM_WORLD, apart from anything else on it.
  explicit MpiTransport(double timeout_s);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  int local_rank() const override { return local_rank_; }
  void send(int to_rank, std::int64_t key, const Matrix& tensor) override;
  Matrix receive(int from_rank, std::int64_t key, Eigen::Index rows, Eigen::Index cols) override;
  void finish_sends() override;
  // Every rank reports to rank 0, which names any that does not arrive.
  using Transport::barrier;
  void barrier(double timeout_s) override;
  double timeout_s() const override { return timeout_s_; }
  std::vector<std::vector<double>> gather(const std::vector<double>& values) override;
  std::vector<double> broadcast(const std::vector<double>& values) override;

 private:
  struct PendingSend {
    int to_rank;
    std::vector<float> data;  // kept alive until MPI is done with it
    MPI_Request request;
  };

  // Polls `request` until done or the deadline; lets pending sends progress.
  bool wait(MPI_Request& request, double deadline);
  void progress_sends();
  double deadline() const;
  // `waited_s` is named in the error when nothing arrives by `until`.
  std::vector<double> receive_values(int from_rank, int tag, double until, double waited_s);
  void send_values(int to_rank, int tag, const std::vector<double>& values);

  MPI_Comm data_;
  MPI_Comm control_;
  int rank_ = 0;
  int ranks_ = 1;
  int local_rank_ = 0;
  double timeout_s_;
  int max_tag_ = 32767;
  std::list<PendingSend> sends_;
};

}  // namespace pipeplan::validate
