// Sanitizer builds only: started by mpirun, `pipeplan study` joins OpenMPI,
// whose allocations outlive MPI_Finalize (see measure_sanitizer_options.cc);
// then, and only then, allocations are unwound in full so that
// tests/lsan.supp can match their libmpi frames. Plain runs keep the fast
// unwinder the plan searches need.
#include "cli/sanitizer_build.h"

#ifdef PIPEPLAN_ASAN
#include <cstdlib>

extern "C" const char* __asan_default_options() {
  // The launcher's variables are in the environment before the sanitizer starts.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr
             ? "fast_unwind_on_malloc=0"
             : "";
}
#endif
