// Sanitizer builds only: this program runs OpenMPI, whose allocations outlive
// MPI_Finalize from components unloaded by then. Only a stack unwound in full
// still reaches a libmpi frame that tests/lsan.supp can match, so this
// program (alone: full unwinding makes every allocation many times slower)
// unwinds in full unless ASAN_OPTIONS says otherwise.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPEPLAN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PIPEPLAN_ASAN 1
#endif

#ifdef PIPEPLAN_ASAN
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }
#endif
