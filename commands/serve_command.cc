#include "commands/serve_command.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "charts/svg_chart.h"
#include "commands/output_files.h"
#include "commands/terminal_progress.h"
#include "common/error.h"
#include "common/units.h"
#include "planner/serve/serve_plan.h"
#include "planner/serve/serve_report.h"

namespace pipeplan::commands {
namespace {

struct ServeCommandOptions {
  std::string model;
  std::string hardware;
  int gpus = 0;
  std::optional<double> rate;
  std::optional<int> concurrency;
  std::optional<std::string> request_trace;
  int requests = 1000;
  std::string prompt_tokens = "1024";
  std::string output_tokens = "256";
  std::int64_t seed = 1;
  std::optional<std::string> ttft_p99, tpot_p99;
  std::optional<int> tp, pp, replicas;
  std::string weights = "bf16";
  std::string kv_cache = "bf16";
  double memory_utilization = 0.9;
  int max_batch_tokens = 8192;
  int max_seqs = 256;
  int block_size = 16;
  std::optional<std::string> trace, svg;
  int threads = 0;
  bool json = false;
};

bool parse_precision(const std::string& text, const char* field) {
  if (text == "bf16") return false;
  if (text == "fp8") return true;
  throw InputError(fmt::format("{}: '{}' is not a precision; use bf16 or fp8", field, text));
}

// The chosen layout's KV cache use over the run, for --svg.
std::string kv_chart(const planner::ServeCandidate& best) {
  charts::ChartSeries series{"KV cache in use", {}, {}};
  for (const auto& [time, share] : best.summary.kv_use) {
    series.x.push_back(time);
    series.y.push_back(100 * share);
  }
  charts::ChartSpec spec;
  spec.title = fmt::format("KV cache use over the run ({}{})", planner::layout_name(best),
                           best.replicas > 1 ? ", the first replica" : "");
  spec.x_label = "time (s)";
  spec.y_label = "KV cache in use (%)";
  spec.series = {series};
  return charts::render_chart_svg(spec);
}

// Options that draw requests, refused where nothing is drawn.
void check_drawing(const ServeCommandOptions& o, const CLI::App& command) {
  if (o.request_trace) {
    for (const char* option : {"--requests", "--prompt-tokens", "--output-tokens", "--seed"}) {
      if (command.count(option) > 0) {
        throw InputError(fmt::format("{}: the requests come from --request-trace; drop one of them", option));
      }
    }
  }
  const bool fixed = o.prompt_tokens.find(':') == std::string::npos && o.output_tokens.find(':') == std::string::npos;
  if (command.count("--seed") > 0 && o.concurrency && fixed) {
    throw InputError("--seed: a closed loop of fixed lengths draws nothing; give a range (--prompt-tokens 512:2048) "
                     "or drop --seed");
  }
}

planner::ServeOptions serve_options(const ServeCommandOptions& o) {
  planner::ServeOptions options;
  options.model = models::load_model(o.model);
  options.hardware = models::load_hardware(o.hardware);
  options.gpus = o.gpus;
  options.tp = o.tp;
  options.pp = o.pp;
  options.replicas = o.replicas;
  options.fp8_weights = parse_precision(o.weights, "--weights");
  options.fp8_kv = parse_precision(o.kv_cache, "--kv-cache");
  options.memory_utilization = o.memory_utilization;
  options.limits.max_batch_tokens = o.max_batch_tokens;
  options.limits.max_sequences = o.max_seqs;
  options.limits.block_tokens = o.block_size;
  if (o.max_batch_tokens < 1) throw InputError("--max-batch-tokens must be at least 1");
  if (o.max_seqs < 1) throw InputError("--max-seqs must be at least 1");
  if (o.block_size < 1 || o.block_size > 128 || (o.block_size & (o.block_size - 1)) != 0 ||
      (o.block_size > 1 && o.block_size < 8)) {
    throw InputError(fmt::format("--block-size: {} is not a size vLLM pages its cache in; use 1, 8, 16, 32, 64 or 128",
                                 o.block_size));
  }
  if (o.seed < 0) throw InputError(fmt::format("--seed: {} is below 0", o.seed));
  if (o.threads < 0) throw InputError(fmt::format("--threads: {} is below 0 (0: all cores)", o.threads));
  if (o.requests < 1 || o.requests > 10'000'000) throw InputError("--requests must be from 1 to 10^7");
  const int loads = (o.rate ? 1 : 0) + (o.concurrency ? 1 : 0) + (o.request_trace ? 1 : 0);
  if (loads > 1) throw InputError("give one load: --rate, --concurrency or --request-trace");
  if (o.concurrency && *o.concurrency < 1) throw InputError("--concurrency must be at least 1");
  planner::ServeWorkload& workload = options.workload;
  workload.requests = o.requests;
  workload.rate = o.rate;
  workload.concurrency = o.concurrency.value_or(0);
  workload.prompt = sim::parse_length_range(o.prompt_tokens, "--prompt-tokens");
  workload.output = sim::parse_length_range(o.output_tokens, "--output-tokens");
  workload.seed = static_cast<std::uint64_t>(o.seed);
  if (o.request_trace) workload.trace = sim::read_request_trace(*o.request_trace);
  if (o.ttft_p99) options.ttft_p99_s = parse_duration_s(*o.ttft_p99, "--ttft-p99", 1e-3);
  if (o.tpot_p99) options.tpot_p99_s = parse_duration_s(*o.tpot_p99, "--tpot-p99", 1e-3);
  options.record_spans = o.trace.has_value();
  options.threads = o.threads;
  options.progress = terminal_progress("serve");
  return options;
}

void run_serve(const ServeCommandOptions& command_options, const CLI::App& command, const OutputSink& sink) {
  check_drawing(command_options, command);
  const planner::ServeOptions options = serve_options(command_options);
  const planner::ServePlan plan = planner::plan_serving(options);
  const planner::ServeCandidate& best = plan.candidates.front();
  OutputFiles files;
  if (command_options.trace) files.add(*command_options.trace, planner::serving_trace_json(best.spans), "--trace");
  if (command_options.svg) files.add(*command_options.svg, kv_chart(best), "--svg");
  files.write_all();
  sink({planner::serve_json(options, plan), planner::serve_text(options, plan)}, command_options.json);
}

}  // namespace

void register_serve_command(CLI::App& app, OutputSink sink) {
  auto options = std::make_shared<ServeCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "serve",
      "Plan inference: the tensor- and pipeline-parallel layout (and replicas) that serves a model's requests best on "
      "N GPUs under latency targets, with each stage's weights and KV cache and the vLLM, SGLang and TensorRT-LLM "
      "arguments to run it");
  command->add_option("--model", options->model, "Model zoo name or YAML file")->required();
  command->add_option("--hardware", options->hardware, "Hardware name or YAML file")->required();
  command->add_option("--gpus", options->gpus, "GPUs in all (t x p x replicas)")->required();
  command->add_option("--rate", options->rate, "Poisson arrivals, requests per second: rank layouts at this load");
  command->add_option("--concurrency", options->concurrency,
                      "Closed loop: this many clients, each sending its next request when its last completes");
  command->add_option("--request-trace", options->request_trace,
                      "Replay a CSV of requests: header arrival_s,prompt_tokens,output_tokens");
  command->add_option("--requests", options->requests, "Requests to draw")->capture_default_str();
  command->add_option("--prompt-tokens", options->prompt_tokens, "Prompt length: 1024, or 512:2048 drawn uniformly")
      ->capture_default_str();
  command->add_option("--output-tokens", options->output_tokens, "Output length: 256, or 128:512 drawn uniformly")
      ->capture_default_str();
  command->add_option("--seed", options->seed, "Seed of the arrivals and lengths")->capture_default_str();
  command->add_option("--ttft-p99", options->ttft_p99,
                      "Target: 99th percentile time to first token, e.g. 500ms (without --rate or --concurrency: find "
                      "the highest rate meeting the targets)");
  command->add_option("--tpot-p99", options->tpot_p99, "Target: 99th percentile time per output token, e.g. 50ms");
  command->add_option("--tp", options->tp, "Fix the tensor-parallel size");
  command->add_option("--pp", options->pp, "Fix the pipeline-parallel size");
  command->add_option("--replicas", options->replicas, "Fix the replicas (data-parallel copies of the pipeline)");
  command->add_option("--weights", options->weights, "Weight precision of the transformer blocks: bf16 or fp8")
      ->capture_default_str();
  command->add_option("--kv-cache", options->kv_cache, "KV cache precision: bf16 or fp8")->capture_default_str();
  command->add_option("--gpu-memory-utilization", options->memory_utilization,
                      "Share of each GPU's memory for weights, workspace and KV cache (vLLM's)")
      ->capture_default_str();
  command->add_option("--max-batch-tokens", options->max_batch_tokens,
                      "Tokens per step, prefill chunks and decodes (vLLM's --max-num-batched-tokens)")
      ->capture_default_str();
  command->add_option("--max-seqs", options->max_seqs, "Sequences per step (vLLM's --max-num-seqs)")
      ->capture_default_str();
  command->add_option("--block-size", options->block_size, "Tokens per KV cache block: 1, 8, 16, 32, 64 or 128")
      ->capture_default_str();
  command->add_option("--trace", options->trace, "Write the chosen layout's batches on every stage of every replica as a Chrome trace");
  command->add_option("--svg", options->svg, "Write the chosen layout's KV cache use over the run as an SVG chart");
  command->add_option("--threads", options->threads, "Worker threads over layouts; 0 = all cores")->capture_default_str();
  command->add_flag("--json", options->json, "Print one JSON object instead of the summary");
  command->callback([options, command, sink] { run_serve(*options, *command, sink); });
}

}  // namespace pipeplan::commands
