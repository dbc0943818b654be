#include "commands/model_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands/model_options.h"
#include "common/error.h"
#include "common/units.h"
#include "models/cluster.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/time_model.h"

namespace pipeplan::commands {
namespace {

struct ShowOptions {
  std::string model;
  ShapeOptions shape;
  std::optional<std::string> hardware;
  bool json = false;
};

std::string kind_name(const models::LayerCost& layer) {
  switch (layer.kind) {
    case models::LayerKind::kEmbedding: return "embedding";
    case models::LayerKind::kLoss: return "output";
    default: return layer.moe ? "moe" : "transformer";
  }
}

nlohmann::ordered_json layer_json(const models::LayerCost& layer, const std::optional<models::HardwareConfig>& hw,
                                  const models::TrainingShape& shape) {
  nlohmann::ordered_json json = {
      {"name", layer.name},
      {"kind", kind_name(layer)},
      {"params", layer.params},
      {"params_per_rank", layer.params_per_rank},
      {"fwd_flops", layer.forward.flops()},
      {"bwd_input_flops", layer.backward_input.flops()},
      {"bwd_weight_flops", layer.backward_weight.flops()},
      {"activation_bytes", layer.activation_bytes},
      {"weight_grad_bytes", layer.weight_grad_bytes},
      {"output_bytes", layer.output_bytes},
  };
  if (hw) {
    const models::LayerTimes times = models::layer_times(layer, *hw, shape);
    json["fwd_s"] = times.forward_s;
    json["bwd_input_s"] = times.backward_input_s;
    json["bwd_weight_s"] = times.backward_weight_s;
  }
  return json;
}

// One row per distinct layer kind, with its count, then the totals.
void print_table(const models::ModelLayers& layers, const std::optional<models::HardwareConfig>& hw,
                 const models::TrainingShape& shape) {
  std::cout << fmt::format("{:<12} {:>5} {:>12} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11}", "layer", "count", "params",
                           "F GFLOP", "B GFLOP", "W GFLOP", "M_B", "M_W", "sends");
  if (hw) std::cout << fmt::format(" {:>9} {:>9} {:>9}", "F ms", "B ms", "W ms");
  std::cout << '\n';
  std::vector<std::pair<std::string, int>> kinds;
  for (const models::LayerCost& layer : layers.layers) {
    if (!kinds.empty() && kinds.back().first == kind_name(layer)) {
      ++kinds.back().second;
    } else {
      kinds.emplace_back(kind_name(layer), 1);
    }
  }
  std::size_t index = 0;
  for (const auto& [kind, count] : kinds) {
    const models::LayerCost& layer = layers.layers[index];
    index += static_cast<std::size_t>(count);
    std::cout << fmt::format("{:<12} {:>5} {:>12} {:>9.2f} {:>9.2f} {:>9.2f} {:>11} {:>11} {:>11}", kind, count,
                             layer.params, layer.forward.flops() / 1e9, layer.backward_input.flops() / 1e9,
                             layer.backward_weight.flops() / 1e9, format_bytes(layer.activation_bytes),
                             format_bytes(layer.weight_grad_bytes), format_bytes(layer.output_bytes));
    if (hw) {
      const models::LayerTimes t = models::layer_times(layer, *hw, shape);
      std::cout << fmt::format(" {:>9.3f} {:>9.3f} {:>9.3f}", t.forward_s * 1e3, t.backward_input_s * 1e3,
                               t.backward_weight_s * 1e3);
    }
    std::cout << '\n';
  }
  std::cout << fmt::format("total params {:.4g} B, active {:.4g} B, embedding {:.4g} B; per micro-batch and tensor-"
                           "parallel rank\n",
                           layers.total_params / 1e9, layers.active_params / 1e9, layers.embedding_params / 1e9);
}

void run_show(const ShowOptions& options) {
  const models::ModelConfig model = models::load_model(options.model);
  const models::TrainingShape shape = training_shape(options.shape, model, 1);
  if (!options.shape.layout.stage_recompute.empty()) {
    throw InputError(fmt::format("--recompute must be none, selective or full, got '{}' (one shape has one setting)",
                                 models::stage_recompute_name(options.shape.layout.stage_recompute)));
  }
  const models::ModelLayers layers = models::expand_layers(model, shape);
  std::optional<models::HardwareConfig> hardware;
  if (options.hardware) {
    hardware = models::load_platform(*options.hardware);
    models::check_tp_domain(*hardware, shape.tp, "--tp", options.shape.allow_cross_node_tp);
  } else if (options.shape.allow_cross_node_tp) {
    throw InputError("--allow-cross-node-tp lets t span NVLink domains of the --hardware it is costed on: give "
                     "--hardware with it");
  }
  if (!options.json) {
    std::cout << fmt::format("{} ({}): b={} s={} t={}{}{} recompute {}{}\n", model.name, model.source,
                             shape.micro_batch_size, shape.seq_len, shape.tp,
                             shape.cp > 1 ? fmt::format(" c={}", shape.cp) : "", shape.sequence_parallel ? " +SP" : "",
                             models::recompute_label(shape.recompute, shape.recompute_modules),
                             hardware ? ", times on " + hardware->name : "");
    print_table(layers, hardware, shape);
    return;
  }
  nlohmann::ordered_json json = {{"name", model.name},
                                 {"source", model.source},
                                 {"total_params", layers.total_params},
                                 {"active_params", layers.active_params},
                                 {"embedding_params", layers.embedding_params},
                                 {"micro_batch_size", shape.micro_batch_size},
                                 {"seq", shape.seq_len},
                                 {"tp", shape.tp},
                                 {"cp", shape.cp},
                                 {"sequence_parallel", shape.sequence_parallel},
                                 {"recompute", std::string(models::recompute_name(shape.recompute))}};
  if (shape.recompute == models::Recompute::kSelective) {
    json["recompute_modules"] = models::recompute_modules_name(shape.recompute_modules);
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const models::LayerCost& layer : layers.layers) list.push_back(layer_json(layer, hardware, shape));
  json["layers"] = std::move(list);
  std::cout << json.dump(2) << '\n';
}

}  // namespace

void register_model_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("model", "The model zoo and the per-layer cost model");
  command->require_subcommand(1);
  command->add_subcommand("list", "List the built-in models with their parameter counts")->callback([] {
    const std::vector<std::string> names = models::zoo_model_names();
    std::size_t width = 16;  // the name column: as wide as the longest name
    for (const std::string& name : names) width = std::max(width, name.size());
    std::cout << fmt::format("{:<{}} {:>9} {:>9} {:>6} {:>6} {:>8}  {}\n", "model", width, "params", "active",
                             "layers", "hidden", "context", "also");
    for (const std::string& name : names) {
      const models::ModelConfig model = models::load_model(name);
      models::TrainingShape shape;
      shape.seq_len = std::min(model.context, kDefaultSeqCap);
      const models::ModelLayers layers = models::expand_layers(model, shape);
      std::cout << fmt::format("{:<{}} {:>9} {:>9} {:>6} {:>6} {:>8}  {}\n", name, width,
                               format_count(static_cast<double>(layers.total_params)),
                               format_count(static_cast<double>(layers.active_params)), model.layers, model.hidden,
                               model.context, fmt::join(model.aliases, ", "));
    }
  });
  auto options = std::make_shared<ShowOptions>();
  CLI::App* show = command->add_subcommand(
      "show", "Per-layer parameters, F/B/W FLOPs, activation bytes (M_B, M_W) and transfers, with times on --hardware");
  show->add_option("model", options->model, "Model zoo name or YAML file")->required();
  add_shape_options(*show, options->shape, false);
  show->add_option("--hardware", options->hardware, "Hardware name or YAML file: adds per-layer times");
  show->add_flag("--json", options->json, "Print one JSON object");
  show->callback([options] { run_show(*options); });
}

}  // namespace pipeplan::commands
