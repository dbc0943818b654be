#include "step/model_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/text_wrap.h"
#include "common/units.h"
#include "sim/memory_fit.h"
#include "sim/output/report_json.h"
#include "sim/output/report_text.h"

namespace pipeplan::step {
namespace {

nlohmann::ordered_json breakdown_json(const MemoryBreakdown& memory) {
  return {{"weights", memory.weights},     {"gradients", memory.gradients}, {"optimizer", memory.optimizer},
          {"activations", memory.activations}, {"logits", memory.logits},   {"buffers", memory.buffers},
          {"of_buffers_dispatcher", memory.dispatcher_buffers}, {"total", memory.total()}};
}

// "layer 12" -> 12, or -1 for the embedding and output layers.
int block_number(const std::string& name) {
  constexpr std::string_view kPrefix = "layer ";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  return std::stoi(name.substr(kPrefix.size()));
}

// The terms in the order a step spends them, with their JSON keys.
struct TermColumn {
  const char* key;
  const char* heading;
  double StepTerms::*seconds;
};
constexpr TermColumn kTermColumns[] = {
    {"gemm_s", "GEMM", &StepTerms::gemm_s},
    {"attention_s", "attention", &StepTerms::attention_s},
    {"elementwise_s", "elementwise", &StepTerms::elementwise_s},
    {"tp_comm_exposed_s", "TP comm", &StepTerms::tp_comm_s},
    {"cp_comm_exposed_s", "CP comm", &StepTerms::cp_comm_s},
    {"zero_comm_exposed_s", "ZeRO comm", &StepTerms::shard_comm_s},
    {"expert_comm_exposed_s", "EP comm", &StepTerms::expert_comm_s},
    {"overhead_s", "overhead", &StepTerms::overhead_s},
    {"port_shared_s", "port shared", &StepTerms::port_shared_s},
    {"p2p_exposed_s", "P2P exposed", &StepTerms::p2p_exposed_s},
    {"bubble_s", "bubble", &StepTerms::bubble_s},
    {"dp_sync_exposed_s", "DP sync", &StepTerms::dp_sync_s},
    {"optimizer_s", "optimizer", &StepTerms::optimizer_s},
};

// The experts' communication on the rank that has most exposed.
struct ExpertCommShare {
  double exposed_s = 0, hidden_s = 0, carried_s = 0;
};
ExpertCommShare expert_comm_share(const ModelSimulation& simulation) {
  ExpertCommShare share;
  for (std::size_t rank = 0; rank < simulation.expert_comm_s.size(); ++rank) {
    const double exposed = simulation.expert_comm_s[rank], hidden = simulation.expert_comm_hidden_s[rank];
    share.carried_s = std::max(share.carried_s, exposed + hidden);
    if (rank == 0 || exposed > share.exposed_s) {
      share.exposed_s = exposed;
      share.hidden_s = hidden;
    }
  }
  return share;
}

nlohmann::ordered_json terms_json(const std::vector<StepTerms>& terms) {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  for (const StepTerms& rank : terms) {
    nlohmann::ordered_json row{{"rank", rank.rank}};
    for (const TermColumn& column : kTermColumns) row[column.key] = rank.*column.seconds;
    row["total_s"] = rank.total_s();
    if (rank.expert_gemm_s > 0) {
      row["of_gemm_expert_grouped_s"] = rank.expert_gemm_s;
      row["of_elementwise_routing_s"] = rank.routing_s;
      row["of_overhead_moe_host_s"] = rank.moe_host_s;
    }
    json.push_back(std::move(row));
  }
  return json;
}

// A mixture of experts' terms within the table's: its grouped GEMMs, its
// routing kernels, its dispatch and combine (EP comm), its passes waiting
// on the host, on the rank with most.
std::string experts_text(const std::vector<StepTerms>& terms) {
  const auto most = std::max_element(terms.begin(), terms.end(), [](const StepTerms& a, const StepTerms& b) {
    return a.expert_gemm_s < b.expert_gemm_s;
  });
  if (most == terms.end() || most->expert_gemm_s <= 0) return "";
  return wrap(fmt::format("  experts, rank {}: grouped GEMMs {} of its GEMM, routing (router softmax and top-k, "
                          "permute, unpermute) {} of its elementwise, dispatch and combine {} (EP comm), passes "
                          "waiting on the host after the router's sync {} of its overhead "
                          "(runtime.moe_layer_host)",
                          most->rank, format_duration(most->expert_gemm_s), format_duration(most->routing_s),
                          format_duration(most->expert_comm_s), format_duration(most->moe_host_s)),
              "    ");
}

std::string terms_text(const std::vector<StepTerms>& terms) {
  std::string text = "  step time by term, ms (each rank's terms add up to the iteration)\n  rank";
  for (const TermColumn& column : kTermColumns) text += fmt::format(" {:>11}", column.heading);
  text += fmt::format(" {:>11}\n", "total");
  for (const StepTerms& rank : terms) {
    text += fmt::format("  {:>4}", rank.rank);
    for (const TermColumn& column : kTermColumns) text += fmt::format(" {:>11.3f}", rank.*column.seconds * 1e3);
    text += fmt::format(" {:>11.3f}\n", rank.total_s() * 1e3);
  }
  return text + experts_text(terms);
}

}  // namespace

std::string summarise_layers(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size();) {
    std::size_t j = i;
    const int first = block_number(names[i]);
    while (first >= 0 && j + 1 < names.size() && block_number(names[j + 1]) == block_number(names[j]) + 1) ++j;
    if (!text.empty()) text += ", ";
    text += j > i ? fmt::format("layers {}-{}", first, block_number(names[j])) : names[i];
    i = j + 1;
  }
  return text.empty() ? "(none)" : text;
}

nlohmann::ordered_json model_simulation_to_json(const ModelSimulation& simulation) {
  nlohmann::ordered_json json = sim::report_to_json(simulation.report);
  json["iteration_time_s"] = simulation.iteration_time_s;
  json["pipeline_s"] = simulation.pipeline_s;
  json["gradient_sync_s"] = simulation.gradient_sync_s;
  json["optimizer_step_s"] = simulation.optimizer_step_s;
  json["tokens_per_s"] = simulation.tokens_per_s;
  json["mfu"] = simulation.mfu;
  json["gpus"] = simulation.gpus;
  json["layout"] = format_layout(simulation.split, simulation.mtp_layers);
  json["stage_layers"] = simulation.split.transformer_layer_counts();
  json["cost_source"] = simulation.cost_source;
  auto& ranks = json["ranks_detail"];
  for (std::size_t rank = 0; rank < simulation.memory.size(); ++rank) {
    ranks[rank]["memory_breakdown"] = breakdown_json(simulation.memory[rank]);
    ranks[rank]["layers"] = simulation.layers[rank];
  }
  if (!simulation.terms.empty()) json["step_terms"] = terms_json(simulation.terms);
  add_expert_comm_json(simulation, json);
  if (std::any_of(simulation.port_shared_s.begin(), simulation.port_shared_s.end(), [](double s) { return s > 0; })) {
    json["port_shared_per_rank_s"] = simulation.port_shared_s;
  }
  return json;
}

void add_expert_comm_json(const ModelSimulation& simulation, nlohmann::ordered_json& json) {
  const ExpertCommShare share = expert_comm_share(simulation);
  if (share.carried_s <= 0) return;
  json["expert_comm"] = {{"exposed_s", share.exposed_s},
                         {"hidden_s", share.hidden_s},
                         {"share_of_step", share.exposed_s / simulation.iteration_time_s},
                         {"exposed_per_rank_s", simulation.expert_comm_s},
                         {"hidden_per_rank_s", simulation.expert_comm_hidden_s}};
}

std::string model_simulation_to_text(const ModelSimulation& simulation) {
  std::string text = sim::report_to_text(simulation.report) + model_simulation_summary(simulation);
  if (!simulation.terms.empty()) text += terms_text(simulation.terms);
  return text;
}

std::string model_simulation_summary(const ModelSimulation& simulation) {
  std::string text = fmt::format("  iteration              {:>12}   pipeline {} + gradient sync {} + optimizer {}\n",
                      format_duration(simulation.iteration_time_s), format_duration(simulation.pipeline_s),
                      format_duration(simulation.gradient_sync_s), format_duration(simulation.optimizer_step_s));
  text += fmt::format("  throughput             {:>12.0f}   tokens/s on {} GPUs, MFU {:.1f} %{}\n",
                      simulation.tokens_per_s, simulation.gpus, simulation.mfu * 100,
                      sim::ranks_over_memory(simulation.report).empty() ? "" : " (if it fitted: it does not)");
  if (const ExpertCommShare share = expert_comm_share(simulation); share.carried_s > 0) {
    text += fmt::format(
        "  expert all-to-all      {:>12}   exposed on the rank with most ({:.1f} % of the step), {} hidden by "
        "paired passes\n",
        format_duration(share.exposed_s), 100 * share.exposed_s / simulation.iteration_time_s, format_duration(share.hidden_s));
  }
  if (const auto most = std::max_element(simulation.port_shared_s.begin(), simulation.port_shared_s.end());
      most != simulation.port_shared_s.end() && *most > 0) {
    text += fmt::format("  network port shared    {:>12}   passes slowed by stage-to-stage messages on the port their "
                        "collectives use, on the rank with most\n",
                        format_duration(*most));
  }
  text += fmt::format("  layout                 {}\n", format_layout(simulation.split, simulation.mtp_layers));
  text += fmt::format("  {:>5} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}  {}\n", "rank", "weights", "grads",
                      "optimizer", "activations", "logits", "buffers", "total", "layers");
  for (std::size_t rank = 0; rank < simulation.memory.size(); ++rank) {
    const MemoryBreakdown& m = simulation.memory[rank];
    text += fmt::format("  {:>5} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}  {}\n", rank, format_bytes(m.weights),
                        format_bytes(m.gradients), format_bytes(m.optimizer), format_bytes(m.activations),
                        format_bytes(m.logits), format_bytes(m.buffers), format_bytes(m.total()),
                        summarise_layers(simulation.layers[rank]));
  }
  const auto dispatcher = std::max_element(
      simulation.memory.begin(), simulation.memory.end(),
      [](const MemoryBreakdown& a, const MemoryBreakdown& b) { return a.dispatcher_buffers < b.dispatcher_buffers; });
  if (dispatcher != simulation.memory.end() && dispatcher->dispatcher_buffers > 0) {
    text += fmt::format("  buffers include DeepEP's NVLink and RDMA buffers, {} on each rank with MoE layers "
                        "(allocated outside PyTorch's)\n",
                        format_bytes(static_cast<double>(dispatcher->dispatcher_buffers)));
  }
  return text;
}

}  // namespace pipeplan::step
