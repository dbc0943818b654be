#include <mpi.h>

#include "profiler/mpi_session.h"
#include "validate/mpi_transport.h"
#include "validate/world.h"

namespace pipeplan::validate {

struct World::Parts {
  profiler::MpiSession session;
  MpiTransport transport;
  explicit Parts(double timeout_s) : transport(timeout_s) {}
};

World::World(double timeout_s) : parts_(std::make_unique<Parts>(timeout_s)) {
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  MPI_Comm_size(host, &ranks_on_host_);
  MPI_Comm_free(&host);
}

World::~World() = default;

Transport& World::transport() { return parts_->transport; }

void abort_world(int exit_code) {
  int initialised = 0, finalised = 0, ranks = 1;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised == 0 || finalised != 0) return;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

}  // namespace pipeplan::validate
