// What a simulation writes besides its summary, whatever the costs came from:
// the memory limit it is checked against, the terminal Gantt, the Chrome
// trace and the SVG chart (optionally a window of the timeline).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "commands/command_output.h"
#include "sim/simulate.h"

namespace pipeplan::commands {

struct SimulateOutputs {
  bool no_overlap = false;
  std::optional<std::string> recv_placement;  // --recv-placement, with --no-overlap
  std::optional<std::string> overlap_f_b;     // --overlap-f-b: together or sequential
  bool json = false;
  bool gantt = false;
  std::optional<std::string> memory_cap;  // --memory-cap, as given
  std::optional<std::string> trace_file;
  std::optional<std::string> svg_file;
  std::optional<std::string> window;      // --window, for --svg
  std::optional<std::string> csv_file;    // --csv-out: the order as a PyTorch schedule CSV
  bool offload = false;                   // --offload: waiting activations to host memory (sim/offload.h)
  bool recompute_in_bubbles = false;      // --recompute-in-bubbles (sim/recompute_actions.h)
};

// --no-overlap, --recv-placement, --overlap-f-b, --json, --gantt,
// --memory-cap, --trace, --svg, --window, --csv-out, --offload,
// --recompute-in-bubbles.
void add_simulate_output_options(CLI::App& command, SimulateOutputs& outputs);

// The options for the simulator itself: overlap, where RECVs go, how
// overlapped pairs start (by default together, as DualPipe runs them, or
// one after the other for a schedule read from a CSV, as PyTorch's default
// runtime does), and a timeline when a chart or trace will be drawn.
sim::SimulationOptions simulation_options(const SimulateOutputs& outputs, bool ascii_gantt, bool from_csv = false);

// Refuses --recv-placement without --no-overlap, and --overlap-f-b for
// `schedule` (its name) when it has no overlapped pairs: each would change
// nothing.
void check_semantics_options(const SimulateOutputs& outputs, const std::string& schedule, bool has_pairs);

// Whether the schedule holds overlapped F&B pairs.
bool has_overlapped_pairs(const sim::Schedule& schedule);

// --memory-cap in bytes, or 0 when not given.
std::int64_t memory_cap_bytes(const SimulateOutputs& outputs);

// Writes the trace, the SVG and the schedule CSV that were asked for and
// appends the terminal Gantt to the text when `ascii_gantt`.
void write_simulation_files(const sim::SimulationReport& report, const sim::Schedule& schedule,
                            const SimulateOutputs& outputs, bool ascii_gantt, CommandOutput& output);

}  // namespace pipeplan::commands
