#include "sim/output/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

using Json = nlohmann::ordered_json;

// Trace times are microseconds. Rounding both ends to the nanosecond (not
// the duration) keeps back-to-back slices touching exactly.
double to_us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

struct Span {
  double ts = 0;
  double dur = 0;
};

Span span_of(double start_s, double end_s) {
  const double ts = to_us(start_s);
  const double end = to_us(end_s);
  return {ts, end > ts ? std::round((end - ts) * 1e3) / 1e3 : 0.0};
}

std::string_view category_of(OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return "forward";
    case OpKind::kBackward: return "backward";
    case OpKind::kBackwardInput: return "backward-input";
    case OpKind::kBackwardWeight: return "backward-weight";
    case OpKind::kRecompute: return "recompute";
    default: return "comm";
  }
}

// Chrome's reserved colour names: blue, green, light green, orange.
std::string_view colour_of(OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return "rail_response";
    case OpKind::kBackward: return "rail_load";
    case OpKind::kBackwardInput: return "thread_state_running";
    case OpKind::kBackwardWeight: return "thread_state_iowait";
    case OpKind::kRecompute: return "thread_state_runnable";
    default: return "generic_work";
  }
}

Json slice(const std::string& name, std::string_view cat, int pid, int tid, Span span) {
  return {{"name", name}, {"cat", cat}, {"ph", "X"},       {"pid", pid},
          {"tid", tid},   {"ts", span.ts}, {"dur", span.dur}};
}

Json metadata(std::string_view name, int pid, int tid, Json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// The RECV that consumes what `send` sends.
Action matching_recv(const Action& send) {
  const bool forward = send.kind == OpKind::kSendForward;
  return {forward ? send.stage + 1 : send.stage - 1, send.microbatch,
          forward ? OpKind::kRecvForward : OpKind::kRecvBackward};
}

// Per rank, the threads that carry at least one transfer, sorted.
std::vector<std::set<int>> transfer_threads(const Timeline& timeline, int ranks) {
  std::vector<std::set<int>> threads(static_cast<std::size_t>(ranks));
  for (const TransferRecord& transfer : timeline.transfers) {
    if (is_host_copy(transfer.send.kind)) {
      threads[static_cast<std::size_t>(transfer.src_rank)].insert(kHostCopyTid);
      continue;
    }
    threads[static_cast<std::size_t>(transfer.src_rank)].insert(kSendTidBase + transfer.dst_rank);
    threads[static_cast<std::size_t>(transfer.dst_rank)].insert(kRecvTidBase + transfer.src_rank);
  }
  return threads;
}

std::string thread_name(int tid) {
  if (tid >= kHostCopyTid) return "host copies (offload, reload)";
  if (tid >= kExpertCommTid) return "expert all-to-all";
  if (tid >= kRecvTidBase) return "recv from rank " + std::to_string(tid - kRecvTidBase);
  if (tid >= kSendTidBase) return "send to rank " + std::to_string(tid - kSendTidBase);
  return "compute";
}

void add_metadata(const SimulationReport& report, Json& events) {
  const std::vector<std::set<int>> threads = transfer_threads(*report.timeline, report.ranks);
  for (int rank = 0; rank < report.ranks; ++rank) {
    std::string name = "rank " + std::to_string(rank);
    if (static_cast<std::size_t>(rank) < report.rank_nodes.size()) {
      name += " (node " + std::to_string(report.rank_nodes[static_cast<std::size_t>(rank)]) + ")";
    }
    events.push_back(metadata("process_name", rank, 0, {{"name", name}}));
    events.push_back(metadata("process_sort_index", rank, 0, {{"sort_index", rank}}));
    std::set<int> tids = threads[static_cast<std::size_t>(rank)];
    tids.insert(kComputeTid);
    const auto& computes = report.timeline->computes;
    if (std::any_of(computes.begin(), computes.end(),
                    [&](const ComputeRecord& record) { return record.rank == rank && record.comm_s > 0; })) {
      tids.insert(kExpertCommTid);
    }
    for (int tid : tids) {
      events.push_back(metadata("thread_name", rank, tid, {{"name", thread_name(tid)}}));
      events.push_back(metadata("thread_sort_index", rank, tid, {{"sort_index", tid}}));
    }
  }
}

void add_computes(const Timeline& timeline, Json& events) {
  for (const ComputeRecord& record : timeline.computes) {
    Json event = slice(to_string(record.action), category_of(record.action.kind), record.rank, kComputeTid,
                       span_of(record.start_s, record.end_s));
    event["cname"] = colour_of(record.action.kind);
    event["args"] = {{"stage", record.action.stage}, {"microbatch", record.action.microbatch}};
    events.push_back(std::move(event));
  }
}

void add_expert_comm(const Timeline& timeline, Json& events) {
  for (const ComputeRecord& record : timeline.computes) {
    if (record.comm_s <= 0) continue;
    Json event = slice("all-to-all " + to_string(record.action), "expert-comm", record.rank, kExpertCommTid,
                       span_of(record.start_s, record.start_s + record.comm_s));
    event["args"] = {{"exposed_us", to_us(record.comm_s - record.hidden_comm_s)},
                     {"hidden_us", to_us(record.hidden_comm_s)}};
    events.push_back(std::move(event));
  }
}

void add_comm_waits(const Timeline& timeline, Json& events) {
  for (const CommWaitRecord& record : timeline.comm_waits) {
    Json event = slice("wait " + to_string(record.action), "comm-wait", record.rank, kComputeTid,
                       span_of(record.start_s, record.end_s));
    event["cname"] = colour_of(record.action.kind);
    event["args"] = {{"stage", record.action.stage}, {"microbatch", record.action.microbatch}};
    events.push_back(std::move(event));
  }
}

// A flow end point in the middle of its slice, so that it binds to that
// slice and not to a neighbour that touches it.
Json flow_point(std::string_view phase, std::size_t id, int pid, int tid, Span span) {
  Json event = {{"name", "transfer"}, {"cat", "p2p"}, {"ph", phase},
                {"id", id},           {"pid", pid},   {"tid", tid},
                {"ts", std::round((span.ts + span.dur / 2) * 1e3) / 1e3}};
  if (phase == "f") event["bp"] = "e";
  return event;
}

void add_transfers(const Timeline& timeline, Json& events) {
  for (std::size_t id = 0; id < timeline.transfers.size(); ++id) {
    const TransferRecord& transfer = timeline.transfers[id];
    const Span span = span_of(transfer.start_s, transfer.end_s);
    const Json args = {{"bytes", transfer.bytes},
                       {"queued_us", span_of(transfer.issue_s, transfer.start_s).dur},
                       {"link", transfer.link}};
    if (is_host_copy(transfer.send.kind)) {
      // One slice on the rank's host-copy thread: the copy has no peer.
      Json copy = slice(to_string(transfer.send), "host-copy", transfer.src_rank, kHostCopyTid, span);
      copy["args"] = args;
      events.push_back(std::move(copy));
      continue;
    }
    const int send_tid = kSendTidBase + transfer.dst_rank;
    const int recv_tid = kRecvTidBase + transfer.src_rank;
    Json send = slice(to_string(transfer.send), "send", transfer.src_rank, send_tid, span);
    send["args"] = args;
    Json recv = slice(to_string(matching_recv(transfer.send)), "recv", transfer.dst_rank, recv_tid, span);
    recv["args"] = args;
    events.push_back(std::move(send));
    events.push_back(std::move(recv));
    events.push_back(flow_point("s", id, transfer.src_rank, send_tid, span));
    events.push_back(flow_point("f", id, transfer.dst_rank, recv_tid, span));
  }
}

void add_memory(const Timeline& timeline, Json& events) {
  for (std::size_t rank = 0; rank < timeline.memory.size(); ++rank) {
    for (const MemorySample& sample : timeline.memory[rank]) {
      events.push_back({{"name", "activation memory"},
                        {"ph", "C"},
                        {"pid", static_cast<int>(rank)},
                        {"tid", kComputeTid},
                        {"ts", to_us(sample.time_s)},
                        {"args", {{"bytes", sample.activation_bytes}, {"on host", sample.host_bytes}}}});
    }
  }
}

Json summary(const SimulationReport& report) {
  return {{"schedule", report.schedule},       {"ranks", report.ranks},
          {"stages", report.stages},           {"virtual", report.virtual_stages},
          {"microbatches", report.microbatches}, {"makespan_us", to_us(report.makespan_s)},
          {"bubble_rate", report.bubble_rate}};
}

}  // namespace

std::string chrome_trace_json(const SimulationReport& report) {
  if (!report.timeline) {
    throw InputError("the report has no timeline; simulate with record_timeline to write a trace");
  }
  Json events = Json::array();
  add_metadata(report, events);
  add_computes(*report.timeline, events);
  add_comm_waits(*report.timeline, events);
  add_expert_comm(*report.timeline, events);
  add_transfers(*report.timeline, events);
  add_memory(*report.timeline, events);
  Json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", summary(report)}};
  return trace.dump();
}

}  // namespace pipeplan::sim
