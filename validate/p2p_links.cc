#include "validate/p2p_links.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/error.h"
#include "validate/stage_runner.h"

namespace pipeplan::validate {

std::vector<P2pLink> p2p_links(const sim::Schedule& lowered) {
  std::map<std::pair<int, int>, P2pLink> links;  // (direction, receiving stage)
  auto entry = [&](int receiving_stage, int direction) -> P2pLink& {
    P2pLink& found = links[{direction, receiving_stage}];
    found.receiving_stage = receiving_stage;
    found.direction = direction;
    found.from_rank = lowered.rank_of(direction == kForwardTensor ? receiving_stage - 1 : receiving_stage + 1);
    found.to_rank = lowered.rank_of(receiving_stage);
    return found;
  };
  for (const std::vector<sim::Action>& actions : lowered.actions) {
    for (const sim::Action& action : actions) {
      const int s = action.stage, mb = action.microbatch;
      switch (action.kind) {
        case sim::OpKind::kSendForward: entry(s + 1, kForwardTensor).sent.push_back(mb); break;
        case sim::OpKind::kSendBackward: entry(s - 1, kBackwardTensor).sent.push_back(mb); break;
        case sim::OpKind::kRecvForward: entry(s, kForwardTensor).received.push_back(mb); break;
        case sim::OpKind::kRecvBackward: entry(s, kBackwardTensor).received.push_back(mb); break;
        default: break;
      }
    }
  }
  // Each link takes the first round in which neither of its ranks is busy.
  std::vector<P2pLink> ordered;
  std::vector<std::set<int>> busy;  // ranks, by round
  for (auto& [key, found] : links) {
    P2pLink& link = ordered.emplace_back(std::move(found));
    std::size_t round = 0;
    while (round < busy.size() && (busy[round].count(link.from_rank) > 0 || busy[round].count(link.to_rank) > 0)) {
      ++round;
    }
    if (round == busy.size()) busy.emplace_back();
    busy[round].insert({link.from_rank, link.to_rank});
    link.round = static_cast<int>(round);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const P2pLink& a, const P2pLink& b) { return a.round < b.round; });
  return ordered;
}

std::string link_name(const P2pLink& link) {
  const bool forward = link.direction == kForwardTensor;
  return fmt::format("stage {} -> stage {} ({})", forward ? link.receiving_stage - 1 : link.receiving_stage + 1,
                     link.receiving_stage, forward ? "activations" : "gradients");
}

void check_p2p_order(const sim::Schedule& lowered) {
  for (const P2pLink& link : p2p_links(lowered)) {
    if (link.sent == link.received) continue;
    throw InputError(fmt::format(
        "schedule {}: on {} rank {} sends micro-batches [{}] but rank {} receives [{}]; NCCL pairs a "
        "link's sends and receives by order, so the cuda backend cannot run this schedule: use --backend cpu",
        lowered.name, link_name(link), link.from_rank, fmt::join(link.sent, " "), link.to_rank,
        fmt::join(link.received, " ")));
  }
}

}  // namespace pipeplan::validate
