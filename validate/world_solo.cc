#include "validate/thread_transport.h"
#include "validate/world.h"

namespace pipeplan::validate {

struct World::Parts {
  ThreadGroup group;
  ThreadTransport transport;
  explicit Parts(double timeout_s) : group(1, timeout_s), transport(group, 0) {}
};

World::World(double timeout_s) : parts_(std::make_unique<Parts>(timeout_s)) {}

World::~World() = default;

Transport& World::transport() { return parts_->transport; }

void abort_world(int) {}

}  // namespace pipeplan::validate
