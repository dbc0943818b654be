#include "validate/mpi_transport.h"

#include <fmt/format.h>

#include <thread>

namespace pipeplan::validate {
namespace {

constexpr int kBarrierTag = 1;
constexpr int kReleaseTag = 2;
constexpr int kGatherTag = 3;
constexpr int kBroadcastTag = 4;

}  // namespace

MpiTransport::MpiTransport(double timeout_s) : timeout_s_(timeout_s) {
  MPI_Comm_dup(MPI_COMM_WORLD, &data_);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_);
  MPI_Comm_rank(data_, &rank_);
  MPI_Comm_size(data_, &ranks_);
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(data_, MPI_TAG_UB, &tag_ub, &found);
  if (found != 0 && tag_ub != nullptr) max_tag_ = *tag_ub;
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &local_rank_);
  MPI_Comm_free(&host);
}

MpiTransport::~MpiTransport() {
  // Undelivered sends are cancelled: the run failed and is being torn down.
  for (PendingSend& pending : sends_) {
    MPI_Cancel(&pending.request);
    MPI_Request_free(&pending.request);
  }
  MPI_Comm_free(&control_);
  MPI_Comm_free(&data_);
}

double MpiTransport::deadline() const { return MPI_Wtime() + timeout_s_; }

void MpiTransport::progress_sends() {
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done != 0 ? sends_.erase(it) : std::next(it);
  }
}

bool MpiTransport::wait(MPI_Request& request, double until) {
  for (;;) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return true;
    progress_sends();
    if (MPI_Wtime() > until) return false;
    std::this_thread::yield();  // ranks may outnumber cores
  }
}

void MpiTransport::send(int to_rank, std::int64_t key, const Matrix& tensor) {
  if (key > max_tag_) {
    throw RankFailure(
        rank_, fmt::format("tensor tag {} exceeds this MPI's MPI_TAG_UB {}: use fewer micro-batches", key, max_tag_));
  }
  PendingSend& pending = sends_.emplace_back();
  pending.to_rank = to_rank;
  pending.data.assign(tensor.data(), tensor.data() + tensor.size());
  MPI_Isend(pending.data.data(), static_cast<int>(pending.data.size()), MPI_FLOAT, to_rank, static_cast<int>(key),
            data_, &pending.request);
  progress_sends();
}

Matrix MpiTransport::receive(int from_rank, std::int64_t key, Eigen::Index rows, Eigen::Index cols) {
  Matrix tensor(rows, cols);
  MPI_Request request;
  MPI_Irecv(tensor.data(), static_cast<int>(tensor.size()), MPI_FLOAT, from_rank, static_cast<int>(key), data_,
            &request);
  if (!wait(request, deadline())) {
    MPI_Cancel(&request);
    MPI_Request_free(&request);
    throw RankFailure(from_rank, fmt::format("rank {} sent nothing for {:g} s (tensor {}): it stalled or died",
                                             from_rank, timeout_s_, key));
  }
  return tensor;
}

void MpiTransport::finish_sends() {
  const double until = deadline();
  for (progress_sends(); !sends_.empty(); progress_sends()) {
    if (MPI_Wtime() > until) {
      throw RankFailure(sends_.front().to_rank, fmt::format("rank {} took nothing for {:g} s: it stalled or died",
                                                            sends_.front().to_rank, timeout_s_));
    }
    std::this_thread::yield();
  }
}

std::vector<double> MpiTransport::receive_values(int from_rank, int tag, double until, double waited_s) {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(from_rank, tag, control_, &arrived, &status);
    if (arrived != 0) {
      int count = 0;
      MPI_Get_count(&status, MPI_DOUBLE, &count);
      std::vector<double> values(static_cast<std::size_t>(count));
      MPI_Recv(values.data(), count, MPI_DOUBLE, from_rank, tag, control_, MPI_STATUS_IGNORE);
      return values;
    }
    progress_sends();
    if (MPI_Wtime() > until) {
      throw RankFailure(from_rank,
                        fmt::format("rank {} did not answer within {:g} s: it stalled or died", from_rank, waited_s));
    }
    std::this_thread::yield();
  }
}

void MpiTransport::send_values(int to_rank, int tag, const std::vector<double>& values) {
  MPI_Request request;
  MPI_Isend(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, to_rank, tag, control_, &request);
  if (!wait(request, deadline())) {
    MPI_Cancel(&request);
    MPI_Request_free(&request);
    throw RankFailure(to_rank, fmt::format("rank {} took nothing for {:g} s: it stalled or died", to_rank, timeout_s_));
  }
}

// Rank 0 waits for each rank with the timeout and names the missing one;
// the others wait twice as long for the release, so that rank 0 (which
// knows who is missing) reports first.
void MpiTransport::barrier(double timeout_s) {
  const std::vector<double> token{0.0};
  if (rank_ == 0) {
    const double until = MPI_Wtime() + timeout_s;
    for (int rank = 1; rank < ranks_; ++rank) receive_values(rank, kBarrierTag, until, timeout_s);
    for (int rank = 1; rank < ranks_; ++rank) send_values(rank, kReleaseTag, token);
    return;
  }
  send_values(0, kBarrierTag, token);
  receive_values(0, kReleaseTag, MPI_Wtime() + 2 * timeout_s, 2 * timeout_s);
}

std::vector<std::vector<double>> MpiTransport::gather(const std::vector<double>& values) {
  if (rank_ != 0) {
    send_values(0, kGatherTag, values);
    return {};
  }
  const double until = deadline();
  std::vector<std::vector<double>> all{values};
  for (int rank = 1; rank < ranks_; ++rank) all.push_back(receive_values(rank, kGatherTag, until, timeout_s_));
  return all;
}

std::vector<double> MpiTransport::broadcast(const std::vector<double>& values) {
  if (rank_ != 0) return receive_values(0, kBroadcastTag, deadline(), timeout_s_);
  for (int rank = 1; rank < ranks_; ++rank) send_values(rank, kBroadcastTag, values);
  return values;
}

}  // namespace pipeplan::validate
