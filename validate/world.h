// The ranks this process runs with: every rank mpirun launched (MPI builds,
// also when started without mpirun, as a single rank), or this process
// alone where MPI is missing.
#pragma once

#include <memory>

#include "validate/transport.h"

namespace pipeplan::validate {

class World {
 public:
  explicit World(double timeout_s);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  Transport& transport();
  int rank() { return transport().rank(); }
  int ranks() { return transport().ranks(); }
  int ranks_on_this_host() const { return ranks_on_host_; }

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
  int ranks_on_host_ = 1;
};

// Stops every rank at once (MPI_Abort) after a failure, so that none waits
// for the failed one; a no-op without MPI.
void abort_world(int exit_code);

}  // namespace pipeplan::validate
