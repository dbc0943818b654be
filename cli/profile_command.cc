#include "cli/profile_command.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/profile_gemm_command.h"
#include "commands/option_use.h"
#include "commands/output_files.h"
#include "commands/terminal_progress.h"
#include "common/error.h"
#include "common/units.h"
#include "models/model_config.h"
#include "models/profile_file.h"
#include "profiler/backends.h"
#include "profiler/layer_profiler.h"
#include "profiler/memory_probe.h"
#include "step/stage_split.h"

namespace pipeplan::cli {
namespace {

struct ProfileOptions {
  std::string backend = "cpu";
  std::string model;
  std::string micro_batch_sizes = "1";
  std::string seq_lens = "128";
  int tp = 1;
  int warmup = 2;
  int repeats = 5;
  std::string out = "profile.yaml";
  // links
  std::string link_backend = "mpi";
  std::string max_bytes = "64MiB";
};

std::string layer_table(const models::Profile& profile) {
  std::string text =
      fmt::format("{}{} {} on {}\n{:<12} {:>3} {:>6} {:>11} {:>11} {:>11} {:>10} {:>11} {:>9}\n", profile.model,
                  profile.tp > 1 ? fmt::format(" (one rank of t = {})", profile.tp) : "", profile.backend,
                  profile.device, "layer", "b", "seq", "F ms", "I ms", "W ms", "(I+W)/2F", "M_B", "GFLOP/s");
  for (const models::LayerMeasurement& m : profile.layers) {
    const double f = m.forward.median_s, i = m.backward_input.median_s, w = m.backward_weight.median_s;
    const double flops = m.forward_flops + m.backward_input_flops + m.backward_weight_flops;
    text += fmt::format("{:<12} {:>3} {:>6} {:>11.3f} {:>11.3f} {:>11.3f} {:>10.2f} {:>11} {:>9.1f}\n", m.layer,
                        m.micro_batch_size, m.seq_len, f * 1e3, i * 1e3, w * 1e3, f > 0 ? (i + w) / (2 * f) : 0.0,
                        format_bytes(m.activation_bytes), (f + i + w) > 0 ? flops / (f + i + w) / 1e9 : 0.0);
  }
  return text;
}

void run_layers(const ProfileOptions& options) {
  if (options.model.empty()) throw InputError("pipeplan profile needs --model (a zoo name or YAML file)");
  profiler::ProfileRequest request;
  request.model = models::load_model(options.model);
  request.micro_batch_sizes = step::parse_layer_counts(options.micro_batch_sizes);
  request.seq_lens = step::parse_layer_counts(options.seq_lens);
  request.tp = options.tp;
  request.warmup = options.warmup;
  request.repeats = options.repeats;
  request.progress = commands::terminal_progress("profile");
  models::Profile profile;
  if (options.backend == "cpu") {
    profiler::keep_freed_memory();
    profile = profiler::profile_layers_cpu(request);
  } else if (options.backend == "cuda") {
    profile = profiler::profile_layers_cuda(request);
  } else {
    throw InputError(fmt::format("--backend '{}': use cpu or cuda", options.backend));
  }
  commands::write_text_file(options.out, models::write_profile_yaml(profile), "--out");
  std::cout << layer_table(profile) << fmt::format("wrote {}\n", options.out);
}

void run_links(const ProfileOptions& options) {
  const std::int64_t max_bytes = parse_bytes(options.max_bytes, "--max-bytes");
  models::LinkProfile links;
  if (options.link_backend == "mpi") {
    links = profiler::measure_links_with_mpi(max_bytes, options.warmup, options.repeats);
  } else if (options.link_backend == "nccl") {
    links = profiler::measure_links_nccl(max_bytes, options.warmup, options.repeats);
  } else {
    throw InputError(fmt::format("--backend '{}': use mpi or nccl", options.link_backend));
  }
  if (links.sizes.empty()) return;  // a rank other than 0: rank 0 reports
  // Add the links to an existing profile, or write a profile of links alone.
  models::Profile profile;
  if (std::filesystem::exists(options.out)) profile = models::read_profile_yaml(options.out);
  if (profile.date.empty()) profile.date = profiler::utc_timestamp();
  profile.links = links;
  commands::write_text_file(options.out, models::write_profile_yaml(profile), "--out");
  std::cout << fmt::format("{:>12} {:>12} {:>10} {:>10}\n", "size (B)", "time (us)", "algbw GB/s", "busbw GB/s");
  for (const models::LinkMeasurement& m : links.sizes) {
    std::cout << fmt::format("{:>12} {:>12.2f} {:>10.3f} {:>10.3f}\n", m.bytes, m.time.median_s * 1e6, m.algbw / 1e9,
                             m.busbw / 1e9);
  }
  std::cout << fmt::format("fit: latency {:.2f} us, bandwidth {:.2f} GB/s; wrote {}\n", links.latency_s * 1e6,
                           links.bandwidth_bytes_per_s / 1e9, options.out);
}

}  // namespace

void register_profile_command(CLI::App& app) {
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* command = app.add_subcommand(
      "profile",
      "Measure a model's layers: forward, input-gradient and weight-gradient times, bytes kept and FLOP rate, per "
      "micro-batch shape; `profile links` measures point-to-point links");
  command->add_option("--backend", options->backend, "cpu (Eigen, fp32, one thread) or cuda (cuBLAS, bf16)")
      ->capture_default_str();
  command->add_option("--model", options->model, "Model zoo name or YAML file");
  command->add_option("--micro-batch-size", options->micro_batch_sizes, "Micro-batch sizes, e.g. 1,2,4")
      ->capture_default_str();
  command->add_option("--seq", options->seq_lens, "Sequence lengths, e.g. 128,512")->capture_default_str();
  command
      ->add_option("--tp", options->tp,
                   "Tensor-parallel size: one rank's shard of the layers (heads, key-value groups, MLP and vocabulary "
                   "over t) on one device")
      ->capture_default_str();
  command->add_option("--warmup", options->warmup, "Runs before measuring")->capture_default_str();
  command->add_option("--repeats", options->repeats, "Measured runs (median and spread)")->capture_default_str();
  command->add_option("--out", options->out, "Profile YAML to write")->capture_default_str();
  CLI::App* links = command->add_subcommand(
      "links", "Point-to-point transfer time over message sizes (mpi: run under mpirun -np 2; nccl: 2 GPUs)");
  links->add_option("--backend", options->link_backend, "mpi or nccl")->capture_default_str();
  links->add_option("--max-bytes", options->max_bytes, "Largest message")->capture_default_str();
  links->add_option("--warmup", options->warmup, "Runs before measuring")->capture_default_str();
  links->add_option("--repeats", options->repeats, "Measured runs per size")->capture_default_str();
  links->add_option("--out", options->out, "Profile YAML to write (its links are replaced if it exists)")
      ->capture_default_str();
  links->callback([options, command] {
    commands::refuse_unread_options(*command, {}, "with `profile links` (give the links' options after 'links')");
    run_links(*options);
  });
  CLI::App* gemm = register_profile_gemm_command(*command);
  command->callback([options, links, gemm] {
    if (!links->parsed() && !gemm->parsed()) run_layers(*options);
  });
}

}  // namespace pipeplan::cli
