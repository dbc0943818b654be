#include "cli/launcher.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

namespace pipeplan::cli {
namespace {

// The first of the variables set, else `otherwise`.
int first_set(std::initializer_list<const char*> names, int otherwise) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return otherwise;
}

}  // namespace

int launcher_rank() { return std::max(0, first_set({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, 0)); }

int launcher_size() { return std::max(1, first_set({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}, 1)); }

}  // namespace pipeplan::cli
