// <Eigen/Core> for every source that uses Eigen, included before any other
// Eigen header.
// Built with -march=native, GCC 12.2 reports a false -Wmaybe-uninitialized
// inside its own AVX-512 intrinsics when Eigen's matrix products inline
// them (GCC bug 105593, fixed in 12.3). The warning is checked at the
// intrinsics' text, which is first included here, so it is silenced for
// that text only and stays on for the code that includes this.
#pragma once

#if defined(__clang__)
#include <Eigen/Core>
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
#endif
