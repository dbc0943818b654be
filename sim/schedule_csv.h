// PyTorch's schedule CSV (torch.distributed.pipelining _dump_csv/_load_csv):
// one row per rank, one action per cell in execution order, an empty cell
// for an idle slot. Both the compute-only form and the form with SEND/RECV
// are read and written, so schedules move between pipeplan, PyTorch and
// torchtitan.
#pragma once

#include <istream>
#include <string>

#include "sim/schedule.h"

namespace pipeplan::sim {

// Infers ranks (rows), stages, micro-batches and the stage-to-rank mapping
// from the cells. Reads DualPipeV's "(0F7;7B3)OVERLAP_F_B" pairs and the
// PyTorch 2.5 spelling, where "B" was the input-gradient backward and "BW"
// the full one. Empty cells are kept as idle slots; the UNSHARD, RESHARD
// and REDUCE_GRAD cells PyTorch's runtime writes are dropped and counted.
// Throws ParseError naming the line and column of a bad cell.
Schedule read_schedule_csv(std::istream& in, const std::string& source_name);
Schedule read_schedule_csv_file(const std::string& path);

// One row per rank with the schedule's idle cells (none for generated
// schedules); overlapped pairs as "(F;B)OVERLAP_F_B".
std::string write_schedule_csv(const Schedule& schedule);

}  // namespace pipeplan::sim
