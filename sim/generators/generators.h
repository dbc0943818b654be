// One generator per schedule family, each a pure function of the shape.
// Each expects a resolved shape (defaults filled in by generate_schedule).
#pragma once

#include "sim/generators/registry.h"

namespace pipeplan::sim {

Schedule generate_naive(const PipelineShape& shape);
Schedule generate_gpipe(const PipelineShape& shape);
Schedule generate_1f1b(const PipelineShape& shape);
Schedule generate_interleaved_1f1b(const PipelineShape& shape);
Schedule generate_interleaved_zero_bubble(const PipelineShape& shape);
Schedule generate_looped_bfs(const PipelineShape& shape);
Schedule generate_zbh1(const PipelineShape& shape);
Schedule generate_zbh2(const PipelineShape& shape);
Schedule generate_zbv(const PipelineShape& shape);
Schedule generate_dualpipe_v(const PipelineShape& shape);
Schedule generate_v_min(const PipelineShape& shape);
Schedule generate_v_half(const PipelineShape& shape);

}  // namespace pipeplan::sim
