// MPI for the duration of a command: initialised on entry if nobody has,
// finalised on exit by whoever initialised it.
#pragma once

namespace pipeplan::profiler {

class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

 private:
  bool owns_ = false;
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace pipeplan::profiler
