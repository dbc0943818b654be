// Ranks as threads of one process: the transport the tests use to run a
// schedule across ranks without launching MPI.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "validate/transport.h"

namespace pipeplan::validate {

// The mailboxes and barrier shared by the threads of one run.
class ThreadGroup {
 public:
  ThreadGroup(int ranks, double timeout_s)
      : ranks_(ranks),
        timeout_s_(timeout_s),
        arrived_(static_cast<std::size_t>(ranks), false),
        slots_(static_cast<std::size_t>(ranks)) {}

  // Runs body(transport) on `ranks` threads, one per rank; rethrows the
  // first failure after every thread has stopped.
  static void run(int ranks, double timeout_s, const std::function<void(Transport&)>& body);

 private:
  friend class ThreadTransport;
  int ranks_;
  double timeout_s_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::tuple<int, int, std::int64_t>, Matrix> mail_;  // (to, from, key)
  std::vector<bool> arrived_;                                  // at the barrier, this generation
  long generation_ = 0;
  std::vector<std::vector<double>> slots_;
};

class ThreadTransport : public Transport {
 public:
  ThreadTransport(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return group_.ranks_; }
  int local_rank() const override { return rank_; }  // one process: every rank is local
  void send(int to_rank, std::int64_t key, const Matrix& tensor) override;
  Matrix receive(int from_rank, std::int64_t key, Eigen::Index rows, Eigen::Index cols) override;
  void finish_sends() override {}
  using Transport::barrier;
  void barrier(double timeout_s) override;
  double timeout_s() const override { return group_.timeout_s_; }
  std::vector<std::vector<double>> gather(const std::vector<double>& values) override;
  std::vector<double> broadcast(const std::vector<double>& values) override;

 private:
  ThreadGroup& group_;
  int rank_;
};

}  // namespace pipeplan::validate
