#include "validate/thread_transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

namespace pipeplan::validate {
namespace {

std::chrono::duration<double> seconds(double s) { return std::chrono::duration<double>(s); }

}  // namespace

void ThreadGroup::run(int ranks, double timeout_s, const std::function<void(Transport&)>& body) {
  ThreadGroup group(ranks, timeout_s);
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&group, &body, &failures, rank] {
      try {
        ThreadTransport transport(group, rank);
        body(transport);
      } catch (...) {
        failures[static_cast<std::size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

void ThreadTransport::send(int to_rank, std::int64_t key, const Matrix& tensor) {
  {
    const std::lock_guard lock(group_.mutex_);
    group_.mail_[{to_rank, rank_, key}] = tensor;
  }
  group_.changed_.notify_all();
}

Matrix ThreadTransport::receive(int from_rank, std::int64_t key, Eigen::Index rows, Eigen::Index cols) {
  std::unique_lock lock(group_.mutex_);
  const auto box = std::make_tuple(rank_, from_rank, key);
  const bool arrived =
      group_.changed_.wait_for(lock, seconds(group_.timeout_s_), [&] { return group_.mail_.count(box) > 0; });
  if (!arrived) {
    throw RankFailure(from_rank, fmt::format("rank {} sent nothing for {:g} s (tensor {}): it stalled or died",
                                             from_rank, group_.timeout_s_, key));
  }
  Matrix tensor = std::move(group_.mail_.at(box));
  group_.mail_.erase(box);
  if (tensor.rows() != rows || tensor.cols() != cols) {
    throw RankFailure(from_rank, fmt::format("tensor {} from rank {} is {}x{}, expected {}x{}", key, from_rank,
                                             tensor.rows(), tensor.cols(), rows, cols));
  }
  return tensor;
}

void ThreadTransport::barrier(double timeout_s) {
  std::unique_lock lock(group_.mutex_);
  const long generation = group_.generation_;
  group_.arrived_[static_cast<std::size_t>(rank_)] = true;
  if (std::all_of(group_.arrived_.begin(), group_.arrived_.end(), [](bool arrived) { return arrived; })) {
    std::fill(group_.arrived_.begin(), group_.arrived_.end(), false);
    ++group_.generation_;
    group_.changed_.notify_all();
    return;
  }
  if (!group_.changed_.wait_for(lock, seconds(timeout_s), [&] { return group_.generation_ != generation; })) {
    const int missing =
        static_cast<int>(std::find(group_.arrived_.begin(), group_.arrived_.end(), false) - group_.arrived_.begin());
    throw RankFailure(missing, fmt::format("rank {} did not reach the barrier within {:g} s: it stalled or died",
                                           missing, group_.timeout_s_));
  }
}

std::vector<std::vector<double>> ThreadTransport::gather(const std::vector<double>& values) {
  {
    const std::lock_guard lock(group_.mutex_);
    group_.slots_[static_cast<std::size_t>(rank_)] = values;
  }
  barrier();
  std::vector<std::vector<double>> all;
  if (rank_ == 0) {
    const std::lock_guard lock(group_.mutex_);
    all = group_.slots_;
  }
  barrier();  // nobody overwrites a slot before rank 0 has read it
  return all;
}

std::vector<double> ThreadTransport::broadcast(const std::vector<double>& values) {
  if (rank_ == 0) {
    const std::lock_guard lock(group_.mutex_);
    group_.slots_[0] = values;
  }
  barrier();
  std::vector<double> from_root;
  {
    const std::lock_guard lock(group_.mutex_);
    from_root = group_.slots_[0];
  }
  barrier();  // rank 0 overwrites its slot only after every rank has read it
  return from_root;
}

}  // namespace pipeplan::validate
