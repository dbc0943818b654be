// A study's results moved between processes: each rank packs the points it
// ran, and rank 0 merges them into its own outcomes, after which the files it
// writes are those of a single process (numbers travel as CBOR, bit for bit).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "study/runner.h"

namespace pipeplan::study {

// The results of the outcomes with ran = true, with their point indices.
std::string pack_outcomes(const std::vector<PointOutcome>& outcomes);

// Copies packed results into `outcomes` (same study, same points) and marks
// them ran. Throws InputError when `packed` names a point the study lacks.
void merge_outcomes(std::string_view packed, std::vector<PointOutcome>& outcomes);

}  // namespace pipeplan::study
