#include "cli/profile_gemm_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>

#include "commands/option_use.h"
#include "commands/output_files.h"
#include "common/error.h"
#include "models/cluster.h"
#include "models/gemm_time.h"
#include "models/hardware.h"
#include "profiler/backends.h"
#include "profiler/gemm_sweep.h"

namespace pipeplan::cli {
namespace {

struct GemmOptions {
  std::string backend = "cpu";
  std::optional<std::string> shapes;  // not given: the backend's default sweep
  std::string hardware;
  int warmup = 3;
  int repeats = 10;
  std::string out = "gemm.yaml";
};

// Measured beside predicted: the time model's one-kernel time for the same
// shape on `hardware` (its tile, split-K and whether memory bounds it).
std::string sweep_table(const profiler::GemmSweep& sweep, const std::optional<models::HardwareConfig>& hardware) {
  std::string text = fmt::format("{} {} GEMMs on {}\n{:>6} {:>6} {:>6} {:>11} {:>9}", sweep.backend, sweep.dtype,
                                 sweep.device, "m", "n", "k", "ms", "TFLOP/s");
  if (hardware) text += fmt::format(" {:>11} {:>9} {:>9} {:>8}", "model ms", "TFLOP/s", "measured/", "tile");
  text += "  shape\n";
  for (const profiler::GemmMeasurement& g : sweep.shapes) {
    text += fmt::format("{:>6} {:>6} {:>6} {:>11.4f} {:>9.3f}", g.size.m, g.size.n, g.size.k, g.time.median_s * 1e3,
                        g.flops_per_s() / 1e12);
    if (hardware) {
      models::GemmWork work;
      work.m = static_cast<double>(g.size.m);
      work.n = static_cast<double>(g.size.n);
      work.k = static_cast<double>(g.size.k);
      const models::GemmTiming model = models::gemm_timing(work, hardware->gpu);
      const std::string tile =
          model.memory_bound ? "memory" : fmt::format("{}x{}/{}", model.tile.rows, model.tile.columns, model.split_k);
      text += fmt::format(" {:>11.4f} {:>9.3f} {:>9.3f} {:>8}", model.seconds * 1e3,
                          work.flops() / model.seconds / 1e12, g.time.median_s / model.seconds, tile);
    }
    text += fmt::format("  {}\n", g.size.label);
  }
  if (hardware) {
    text += fmt::format("model: {} (measured/ is measured time over the model's; tile rows x columns / split-K)\n",
                        hardware->name);
    if (sweep.backend == "cpu") {
      text += fmt::format(
          "note: this CPU's fp32 products are set beside {}'s bf16 estimates: the ratios compare the "
          "two devices, not the model\n",
          hardware->name);
    }
  }
  return text;
}

void run(const GemmOptions& options) {
  std::vector<profiler::GemmSize> sizes;
  profiler::GemmSweep sweep;
  std::optional<models::HardwareConfig> hardware;
  if (!options.hardware.empty()) hardware = models::load_platform(options.hardware);
  if (options.backend == "cpu") {
    sizes = options.shapes ? profiler::parse_gemm_sizes(*options.shapes) : profiler::cpu_gemm_sizes();
    sweep = profiler::measure_gemms_cpu(sizes, options.warmup, options.repeats);
  } else if (options.backend == "cuda") {
    sizes = options.shapes ? profiler::parse_gemm_sizes(*options.shapes) : profiler::gpu_gemm_sizes();
    sweep = profiler::measure_gemms_cuda(sizes, options.warmup, options.repeats);
  } else {
    throw InputError(fmt::format("--backend '{}': use cpu or cuda", options.backend));
  }
  commands::write_text_file(options.out, profiler::write_gemm_sweep_yaml(sweep), "--out");
  std::cout << sweep_table(sweep, hardware) << fmt::format("wrote {}\n", options.out);
}

}  // namespace

CLI::App* register_profile_gemm_command(CLI::App& profile) {
  auto options = std::make_shared<GemmOptions>();
  CLI::App* gemm = profile.add_subcommand(
      "gemm",
      "Matrix-product time and FLOP rate shape by shape (cpu: Eigen fp32; cuda: cuBLAS bf16), beside the time "
      "model's estimate with --hardware");
  gemm->add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
  gemm->add_option("--shapes", options->shapes,
                   "m x n x k shapes, e.g. 4096x4096x4096,8192x1280x8192 (default: squares and transformer layers' "
                   "GEMMs sized for the backend)");
  gemm->add_option("--hardware", options->hardware, "Hardware name or YAML: print its time model's estimate beside");
  gemm->add_option("--warmup", options->warmup, "Runs before measuring")->capture_default_str();
  gemm->add_option("--repeats", options->repeats, "Measured runs per shape")->capture_default_str();
  gemm->add_option("--out", options->out, "Sweep YAML to write")->capture_default_str();
  gemm->callback([options, &profile] {
    // The layers' options given before `gemm` would be ignored: refused.
    commands::refuse_unread_options(profile, {}, "with `profile gemm` (give the sweep's options after 'gemm')");
    run(*options);
  });
  return gemm;
}

}  // namespace pipeplan::cli
