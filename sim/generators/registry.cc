#include "sim/generators/registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/close_names.h"
#include "common/error.h"
#include "common/quote.h"
#include "sim/generators/generators.h"

namespace pipeplan::sim {
namespace {

// PyTorch's class names carry a "Schedule" prefix (ScheduleInterleaved1F1B).
std::string family_key(std::string_view name) {
  std::string key = name_key(name);
  constexpr std::string_view kPrefix = "schedule";
  if (key.size() > kPrefix.size() && key.starts_with(kPrefix)) key.erase(0, kPrefix.size());
  return key;
}

}  // namespace

const std::vector<ScheduleFamily>& schedule_families() {
  static const std::vector<ScheduleFamily> kFamilies = {
      {"naive", {"none"}, "no micro-batching: the whole batch passes stage by stage (GPipe paper, Fig. 2b)", 1,
       false, generate_naive},
      {"GPipe", {}, "all forwards, then all backwards (Huang et al. 2019)", 1, false, generate_gpipe},
      {"1F1B", {"PipeDream-Flush", "OneFOneB"}, "warm-up, one forward one backward, cool-down (Narayanan et al. 2021)",
       1, false, generate_1f1b},
      {"Interleaved1F1B", {"interleaved", "VPP"},
       "v looped chunks per rank in Megatron's order (Narayanan et al. 2021, Sec. 2.2.2)", 2, false,
       generate_interleaved_1f1b},
      {"LoopedBFS", {"BFS"}, "v looped chunks per rank, breadth first (Lamy-Poirier 2023)", 2, false,
       generate_looped_bfs},
      {"ZBH1", {"ZB-H1", "ZB1P"}, "1F1B with split backward, W deferred to fill bubbles (Qi et al. 2024, Sec. 2.1)",
       1, true, generate_zbh1},
      {"ZBH2", {"ZB-H2", "ZB2P"}, "extra warm-up forwards, zero bubble at 2p-1 activations (Qi et al. 2024, Sec. 2.2)",
       1, true, generate_zbh2},
      {"InterleavedZeroBubble", {"ZB1P-interleaved"}, "ZB-H1 over v looped chunks (Qi et al. 2024; PyTorch)", 2, true,
       generate_interleaved_zero_bubble},
      {"ZBVZeroBubble", {"ZBV", "ZB-V"}, "two chunks per rank in a V, split backward (Qi et al. 2024, Sec. 6)", 2,
       true, generate_zbv},
      {"DualPipeV", {"DualPipe-V"}, "DeepSeek's DualPipe cut in half, two chunks per rank in a V (arXiv 2412.19437)",
       2, true, generate_dualpipe_v},
      {"VHalf", {"V-Half"},
       "two chunks per rank in a V, split backward, half of 1F1B's activations (Qi et al. 2024, arXiv 2405.15362)",
       2, true, generate_v_half},
      {"VMin", {"V-Min"},
       "two chunks per rank in a V, split backward, a third of 1F1B's activations (Qi et al. 2024, arXiv 2405.15362)",
       2, true, generate_v_min},
      {"ZBAuto", {"ZB-auto", "searched"},
       "split backward, the order searched for the stage costs within a memory limit (Qi et al. 2024, Sec. 3.1)", 1,
       true, nullptr},
  };
  return kFamilies;
}

bool runs_any_virtual_stages(const ScheduleFamily& family) {
  const std::string_view name = family.name;
  return name == "Interleaved1F1B" || name == "LoopedBFS" || name == "InterleavedZeroBubble";
}

bool runs_whole_batch(const ScheduleFamily& family) { return family.name == "naive"; }

bool pairs_own_passes(const ScheduleFamily& family) { return family.name == "DualPipeV"; }

bool runs_in_pytorch_pipelining(const ScheduleFamily& family) {
  const std::string_view name = family.name;
  return name != "naive" && name != "ZBH1" && name != "ZBH2";
}

std::string schedule_names() {
  std::string names;
  for (const ScheduleFamily& family : schedule_families()) {
    if (!names.empty()) names += ", ";
    names += family.name;
  }
  return names;
}

const ScheduleFamily& find_schedule_family(std::string_view name) {
  const std::string key = family_key(name);
  std::vector<std::string> spellings, names;
  for (const ScheduleFamily& family : schedule_families()) {
    if (key == family_key(family.name)) return family;
    spellings.emplace_back(family.name);
    names.emplace_back(family.name);
    for (std::string_view alias : family.aliases) {
      if (key == family_key(alias)) return family;
      spellings.emplace_back(alias);
      names.emplace_back(family.name);
    }
  }
  throw InputError(fmt::format("unknown schedule {}{}; valid names: {}", quoted_input(name), did_you_mean(name, spellings, names),
                               schedule_names()));
}

Schedule generate_schedule(std::string_view name, PipelineShape shape) {
  const ScheduleFamily& family = find_schedule_family(name);
  if (shape.ranks < 1) throw InputError(fmt::format("--pp must be >= 1 (got {})", shape.ranks));
  if (shape.microbatches < 1) throw InputError(fmt::format("--microbatches must be >= 1 (got {})", shape.microbatches));
  if (shape.virtual_stages < 0) throw InputError(fmt::format("--virtual must be >= 1 (got {})", shape.virtual_stages));
  if (shape.microbatch_group_size < 0) {
    throw InputError(fmt::format("--microbatch-group-size must be >= 1 (got {})", shape.microbatch_group_size));
  }
  if (shape.microbatch_group_size > 0 && family.name != "Interleaved1F1B") {
    throw InputError(fmt::format("--microbatch-group-size orders Interleaved1F1B's micro-batches; {} does not use it: "
                                 "drop it",
                                 family.name));
  }
  if (shape.virtual_stages == 0) shape.virtual_stages = family.default_virtual_stages;
  if (is_searched(family)) {
    throw InputError(fmt::format("{} is searched for the stage costs within a memory limit, not generated from the "
                                 "shape: simulate it with times (--tf, --tb, --tw, --act-bytes) or a --model, and "
                                 "write it with simulate --csv-out",
                                 family.name));
  }
  // Up to 3 compute actions per (stage, micro-batch).
  const double actions = 3.0 * shape.ranks * shape.virtual_stages * static_cast<double>(shape.microbatches);
  if (actions > kMaxComputeActions) {
    throw InputError(fmt::format("p = {}, v = {}, m = {} makes about {:.2g} actions, over the limit of {:.0g}; "
                                 "lower --pp, --virtual or --microbatches",
                                 shape.ranks, shape.virtual_stages, shape.microbatches, actions, kMaxComputeActions));
  }
  return family.generate(shape);
}

}  // namespace pipeplan::sim
