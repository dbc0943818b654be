#include "sim/dependency_graph.h"

#include <boost/graph/depth_first_search.hpp>
#include <boost/range/iterator_range.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

namespace pipeplan::sim {
namespace {

using Vertex = std::uint32_t;
constexpr Vertex kAbsent = ActionIndex::kAbsent;

class GraphBuilder {
 public:
  GraphBuilder(const Schedule& schedule, const ActionIndex& index, CommSemantics semantics, GraphTiming timing)
      : schedule_(schedule), index_(index), semantics_(semantics), timing_(timing) {}

  DependencyGraph build() {
    weights_.assign(index_.vertex_count(), 0.0);
    edges_.reserve(static_cast<std::size_t>(index_.vertex_count()) * 2);
    for (int rank = 0; rank < schedule_.ranks; ++rank) add_rank(rank);
    DependencyGraph result{DependencyCsr(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(),
                                         edge_data_.begin(), index_.vertex_count()),
                           std::move(weights_)};
    return result;
  }

 private:
  void add_edge(Vertex from, Vertex to, double weight_s = 0) {
    if (from == kAbsent || to == kAbsent) return;  // reported by structural validation
    edges_.emplace_back(from, to);
    edge_data_.push_back({weight_s});
  }

  double transfer_time_s(int src_stage, int dst_stage) const {
    if (timing_.costs == nullptr) return 0;
    // The message crosses the boundary after the lower of the two stages.
    const std::int64_t bytes = timing_.costs->stages[static_cast<std::size_t>(std::min(src_stage, dst_stage))].send_bytes;
    return timing_.topology->spec(schedule_.rank_of(src_stage), schedule_.rank_of(dst_stage)).transfer_time_s(bytes);
  }

  void add_rank(int rank) {
    const auto& actions = schedule_.actions[static_cast<std::size_t>(rank)];
    Vertex previous = kAbsent;
    for (std::size_t step = 0; step < actions.size(); ++step) {
      const Action& action = actions[step];
      const Vertex self = index_.vertex(rank, step);
      const bool overlapped_recv = semantics_ == CommSemantics::kOverlap &&
                                   (action.kind == OpKind::kRecvForward || action.kind == OpKind::kRecvBackward);
      // Program order. Under overlap a RECV is only posted: it neither waits
      // for the previous action nor holds the next one.
      if (!overlapped_recv) {
        add_edge(previous, self);
        previous = self;
      }
      add_data_edges(action, self);
      if (timing_.costs != nullptr) weights_[self] -= paired_saving_s(*timing_.costs, actions, step);
      // An overlapped pair starts only when the backward's input is there too.
      if (action.overlapped && step + 1 < actions.size()) add_input_edges(actions[step + 1], self);
    }
  }

  // Edges into `target` from the activation or gradient a compute action needs.
  void add_input_edges(const Action& action, Vertex target) {
    const int s = action.stage;
    if (action.kind == OpKind::kForward && s > 0) {
      add_input_edge(s - 1, OpKind::kForward, OpKind::kRecvForward, s, action.microbatch, target);
    } else if (produces_input_grad(action.kind) && s + 1 < schedule_.stages) {
      add_gradient_edge(s, action.microbatch, target);
    }
  }

  // Edges into `self` from what it needs, and its weight.
  void add_data_edges(const Action& action, Vertex self) {
    const int s = action.stage;
    const int mb = action.microbatch;
    const bool blocking = semantics_ == CommSemantics::kBlocking;
    switch (action.kind) {
      case OpKind::kForward:
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
      case OpKind::kBackwardWeight:
      case OpKind::kRecompute:  // needs only its own forward, earlier on this rank
        add_input_edges(action, self);
        weights_[self] = duration(action);
        break;
      case OpKind::kSendForward:
      case OpKind::kSendBackward: {
        const int peer = action.kind == OpKind::kSendForward ? s + 1 : s - 1;
        if (blocking) weights_[self] = transfer_time_s(s, peer);
        break;
      }
      case OpKind::kRecvForward:
        add_edge(index_.find(s - 1, mb, OpKind::kSendForward), self, blocking ? 0 : transfer_time_s(s - 1, s));
        break;
      case OpKind::kRecvBackward:
        add_edge(index_.find(s + 1, mb, OpKind::kSendBackward), self, blocking ? 0 : transfer_time_s(s + 1, s));
        break;
      case OpKind::kOffload:
      case OpKind::kReload:
        // Placed by simulate() after the graph's checks (sim/offload.h).
        throw std::logic_error("host copies are not in the dependency graph");
    }
  }

  // F(s) needs F(s - 1): directly on one rank; else through its RECV_F, or,
  // in the compute-only form, straight from the producer after the transfer.
  void add_input_edge(int producer_stage, OpKind producer_kind, OpKind recv_kind, int s, int mb, Vertex self) {
    const Vertex producer = index_.find(producer_stage, mb, producer_kind);
    if (schedule_.rank_of(producer_stage) == schedule_.rank_of(s)) {
      add_edge(producer, self);
      return;
    }
    const Vertex recv = index_.find(s, mb, recv_kind);
    if (recv != kAbsent) {
      add_edge(recv, self);
    } else {
      add_edge(producer, self, transfer_time_s(producer_stage, s));
    }
  }

  // B/I(s) needs the input gradient of stage s + 1 (from its B or I).
  void add_gradient_edge(int s, int mb, Vertex self) {
    const Vertex full = index_.find(s + 1, mb, OpKind::kBackward);
    const OpKind producer = full != kAbsent ? OpKind::kBackward : OpKind::kBackwardInput;
    add_input_edge(s + 1, producer, OpKind::kRecvBackward, s, mb, self);
  }

  double duration(const Action& action) const {
    if (timing_.costs == nullptr) return 0;
    return action_duration_s(timing_.costs->stages[static_cast<std::size_t>(action.stage)], action.kind);
  }

  const Schedule& schedule_;
  const ActionIndex& index_;
  CommSemantics semantics_;
  GraphTiming timing_;
  std::vector<std::pair<Vertex, Vertex>> edges_;
  std::vector<DependencyEdge> edge_data_;
  std::vector<double> weights_;
};

// Records DFS tree parents and the first back edge (which closes a cycle).
class CycleVisitor : public boost::default_dfs_visitor {
 public:
  CycleVisitor(std::vector<Vertex>* parent, std::optional<std::pair<Vertex, Vertex>>* back_edge)
      : parent_(parent), back_edge_(back_edge) {}
  template <typename Edge, typename Graph>
  void tree_edge(Edge edge, const Graph& graph) const {
    (*parent_)[boost::target(edge, graph)] = boost::source(edge, graph);
  }
  template <typename Edge, typename Graph>
  void back_edge(Edge edge, const Graph& graph) const {
    if (!*back_edge_) *back_edge_ = std::make_pair(boost::source(edge, graph), boost::target(edge, graph));
  }

 private:
  std::vector<Vertex>* parent_;
  std::optional<std::pair<Vertex, Vertex>>* back_edge_;
};

}  // namespace

DependencyGraph build_dependency_graph(const Schedule& lowered, const ActionIndex& index, CommSemantics semantics,
                                       GraphTiming timing) {
  return GraphBuilder(lowered, index, semantics, timing).build();
}

std::vector<std::uint32_t> find_cycle(const DependencyGraph& dependency_graph) {
  const DependencyCsr& graph = dependency_graph.graph;
  const auto vertices = boost::num_vertices(graph);
  std::vector<Vertex> parent(vertices, kAbsent);
  std::optional<std::pair<Vertex, Vertex>> back_edge;
  std::vector<boost::default_color_type> colors(vertices);
  boost::depth_first_search(
      graph, boost::visitor(CycleVisitor(&parent, &back_edge))
                 .color_map(boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, graph))));
  if (!back_edge) return {};
  // The back edge u -> v closes the tree path v -> ... -> u.
  const auto [from, to] = *back_edge;
  std::vector<Vertex> cycle;
  for (Vertex v = from; v != to; v = parent[v]) cycle.push_back(v);
  cycle.push_back(to);
  std::reverse(cycle.begin(), cycle.end());
  return cycle;
}

EarliestStarts earliest_starts(const DependencyGraph& dependency_graph) {
  const DependencyCsr& graph = dependency_graph.graph;
  const auto vertices = static_cast<Vertex>(boost::num_vertices(graph));
  std::vector<Vertex> pending(vertices, 0);
  for (Vertex v = 0; v < vertices; ++v) {
    for (auto edge : boost::make_iterator_range(boost::out_edges(v, graph))) ++pending[boost::target(edge, graph)];
  }
  EarliestStarts result;
  result.start_s.assign(vertices, 0.0);
  result.critical_predecessor.assign(vertices, kAbsent);
  std::vector<Vertex> ready;
  for (Vertex v = 0; v < vertices; ++v) {
    if (pending[v] == 0) ready.push_back(v);
  }
  std::vector<bool> reached(vertices, false);
  double best_end = -1;
  while (!ready.empty()) {
    const Vertex v = ready.back();
    ready.pop_back();
    reached[v] = true;
    const double end = result.start_s[v] + dependency_graph.vertex_weight_s[v];
    if (end > best_end) {
      best_end = end;
      result.last_vertex = v;
    }
    for (auto edge : boost::make_iterator_range(boost::out_edges(v, graph))) {
      const Vertex target = boost::target(edge, graph);
      const double arrival = end + graph[edge].weight_s;
      if (result.critical_predecessor[target] == kAbsent || arrival > result.start_s[target]) {
        result.start_s[target] = arrival;
        result.critical_predecessor[target] = v;
      }
      if (--pending[target] == 0) ready.push_back(target);
    }
  }
  for (Vertex v = 0; v < vertices; ++v) {
    if (!reached[v]) result.start_s[v] = -1;
  }
  result.length_s = std::max(best_end, 0.0);
  return result;
}

std::vector<std::uint32_t> critical_path(const EarliestStarts& starts) {
  std::vector<std::uint32_t> path;
  for (Vertex v = starts.last_vertex; v != kAbsent; v = starts.critical_predecessor[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace pipeplan::sim
