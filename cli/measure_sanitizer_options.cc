// Sanitizer builds only: this program runs OpenMPI, whose allocations outlive
// MPI_Finalize from components unloaded by then. Only a stack unwound in full
// still reaches a libmpi frame that tests/lsan.supp can match, so this
// program (alone: full unwinding makes every allocation many times slower)
// unwinds in full unless ASAN_OPTIONS says otherwise.
#include "cli/sanitizer_build.h"

#ifdef PIPEPLAN_ASAN
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
#endif
