#include "commands/simulate_outputs.h"

#include <fmt/format.h>

#include "commands/model_options.h"
#include "commands/output_files.h"
#include "common/error.h"
#include "common/units.h"
#include "sim/output/ascii_gantt.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/svg_gantt.h"
#include "sim/schedule_csv.h"

namespace pipeplan::commands {

void add_simulate_output_options(CLI::App& command, SimulateOutputs& outputs) {
  command.add_option("--memory-cap", outputs.memory_cap,
                     "Peak memory each rank may use, e.g. 80GiB; ranks above it are reported as not fitting "
                     "[default with --model or --plan: the GPU's usable memory; else none]");
  command.add_flag("--no-overlap", outputs.no_overlap,
                   "Communication blocks the compute stream (default: it overlaps)");
  command.add_option("--recv-placement", outputs.recv_placement,
                     "With --no-overlap: where each blocking RECV sits, before-use (just before the compute that "
                     "needs it, as Megatron receives; the default) or pytorch (posted early, as PyTorch's "
                     "_add_send_recv places it)");
  command.add_option("--overlap-f-b", outputs.overlap_f_b,
                     "How an overlapped F&B pair (DualPipeV, OVERLAP_F_B cells) starts: together (once both inputs "
                     "are there, as DualPipe overlaps them; default for generated schedules) or sequential (the "
                     "forward, then the backward, each when its own input is there, as PyTorch's default runtime; "
                     "default for --schedule-csv)");
  command.add_flag("--json", outputs.json, "Print one JSON object instead of the summary");
  command.add_flag("--gantt", outputs.gantt,
                   "Always print the terminal Gantt chart (default: small cases with given times only)");
  command.add_option("--trace", outputs.trace_file,
                     "Write a Chrome trace (open in ui.perfetto.dev or chrome://tracing)");
  command.add_option("--svg", outputs.svg_file, "Write a Gantt chart as SVG");
  command.add_option("--csv-out", outputs.csv_file,
                     "Write the order simulated (compute actions, one row per rank) as a PyTorch schedule CSV, "
                     "which torch.distributed.pipelining's _PipelineScheduleRuntime loads");
  command.add_flag("--offload", outputs.offload,
                   "Offload each micro-batch's activations that wait for their backward to host memory over the "
                   "GPU's host link, reloading them one compute action ahead (PipeOffload): the hardware's "
                   "host_link, or --host-bandwidth with given times");
  command.add_flag("--recompute-in-bubbles", outputs.recompute_in_bubbles,
                   fmt::format("{}: each recomputed forward right before its backward, where it fills the wait for "
                               "the gradient (Mario); the stage then holds its recomputed activations from that "
                               "pass to the backward's end",
                               layout_help("recompute-in-bubbles")));
  command.add_option("--window", outputs.window,
                     "With --svg: draw only this part of the timeline, START:END as times ('20ms:80ms') or shares "
                     "of it ('0%:25%')");
}

sim::SimulationOptions simulation_options(const SimulateOutputs& outputs, bool ascii_gantt, bool from_csv) {
  sim::SimulationOptions options;
  options.overlap_comm = !outputs.no_overlap;
  options.record_timeline = ascii_gantt || outputs.trace_file || outputs.svg_file;
  if (outputs.recv_placement) options.recv_placement = sim::parse_recv_placement(*outputs.recv_placement);
  options.pair_overlapped = !from_csv;
  options.offload_activations = outputs.offload;
  options.recompute_in_bubbles = outputs.recompute_in_bubbles;
  if (outputs.overlap_f_b) {
    if (*outputs.overlap_f_b != "together" && *outputs.overlap_f_b != "sequential") {
      throw InputError(fmt::format("--overlap-f-b '{}': use together or sequential", *outputs.overlap_f_b));
    }
    options.pair_overlapped = *outputs.overlap_f_b == "together";
  }
  return options;
}

void check_semantics_options(const SimulateOutputs& outputs, const std::string& schedule, bool has_pairs) {
  if (outputs.recv_placement && !outputs.no_overlap) {
    throw InputError("--recv-placement changes only blocking communication: add --no-overlap or drop it");
  }
  if (outputs.overlap_f_b && !has_pairs) {
    throw InputError(fmt::format("--overlap-f-b: {} has no overlapped F&B pairs (DualPipeV and OVERLAP_F_B cells "
                                 "have them); drop it",
                                 schedule));
  }
}

bool has_overlapped_pairs(const sim::Schedule& schedule) {
  for (const auto& actions : schedule.actions) {
    for (const sim::Action& action : actions) {
      if (action.overlapped) return true;
    }
  }
  return false;
}

std::int64_t memory_cap_bytes(const SimulateOutputs& outputs) {
  if (!outputs.memory_cap) return 0;
  const std::int64_t bytes = parse_bytes(*outputs.memory_cap, "--memory-cap");
  if (bytes <= 0) throw InputError("--memory-cap must be > 0, e.g. 80GiB");
  return bytes;
}

void write_simulation_files(const sim::SimulationReport& report, const sim::Schedule& schedule,
                            const SimulateOutputs& outputs, bool ascii_gantt, CommandOutput& output) {
  OutputFiles files;
  if (outputs.csv_file) files.add(*outputs.csv_file, sim::write_schedule_csv(schedule), "--csv-out");
  if (ascii_gantt) output.text += "\n" + sim::ascii_gantt(report);
  if (outputs.trace_file) files.add(*outputs.trace_file, sim::chrome_trace_json(report), "--trace");
  if (outputs.svg_file) {
    const sim::GanttWindow window = outputs.window ? sim::parse_gantt_window(*outputs.window) : sim::GanttWindow{};
    files.add(*outputs.svg_file, sim::svg_gantt(report, window), "--svg");
  }
  files.write_all();
}

}  // namespace pipeplan::commands
