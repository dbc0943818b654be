#include "sim/serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <iterator>
#include <stdexcept>
#include <limits>
#include <utility>

#include "common/error.h"
#include "sim/event_queue.h"

namespace pipeplan::sim {
namespace {

constexpr std::size_t kMostRequests = 10'000'000;

struct RequestState {
  int prompt = 0;
  int output = 0;
  int computed = 0;   // tokens whose keys and values are in the cache
  int generated = 0;  // output tokens sampled
  std::int64_t blocks = 0;
  std::int64_t admitted = 0;  // order of admission: the later, the first preempted
  bool in_flight = false;
  double last_token_s = 0;
  // Tokens to run before the next sample: the prompt and every token sampled
  // but the last are in the cache once it is up to date.
  int pending() const { return prompt + generated - computed; }
};

struct Batch {
  StepLoad load;
  std::vector<std::pair<int, int>> items;  // request, tokens this step
};

// A stage or a link: one batch at a time, the others queued in order.
struct Resource {
  std::deque<int> queue;  // batch slots
  int current = -1;
  double started_s = 0;
};

class ServingEngine {
 public:
  ServingEngine(const ServingWorkload& workload, const ServingCosts& costs, const SchedulerLimits& limits,
                bool record_spans)
      : workload_(workload),
        costs_(costs),
        limits_(limits),
        record_spans_(record_spans),
        stages_(costs.stages()),
        in_flight_limit_(limits.in_flight > 0 ? limits.in_flight : stages_),
        stage_(static_cast<std::size_t>(stages_)),
        link_(static_cast<std::size_t>(stages_)),
        free_blocks_(limits.kv_blocks) {
    run_.stage_busy_s.assign(static_cast<std::size_t>(stages_), 0.0);
    run_.kv_blocks = limits.kv_blocks;
    states_.reserve(workload.requests.size());
    run_.requests.reserve(workload.requests.size());
    for (const ServingRequest& request : workload.requests) {
      states_.push_back({request.prompt_tokens, request.output_tokens});
      run_.requests.push_back({0, 0, 0, request.prompt_tokens, request.output_tokens, 0});
    }
  }

  ServingRun run() {
    const auto count = static_cast<int>(workload_.requests.size());
    if (workload_.concurrency > 0) {
      for (next_client_request_ = 0; next_client_request_ < std::min(count, workload_.concurrency);
           ++next_client_request_) {
        events_.push(0, stages_ + next_client_request_, false);
      }
    } else {
      for (int r = 0; r < count; ++r) events_.push(workload_.requests[static_cast<std::size_t>(r)].arrival_s, stages_ + r, false);
    }
    run_.first_arrival_s = std::numeric_limits<double>::infinity();
    while (!events_.empty()) {
      const EventQueue::Event event = events_.pop();
      const int id = EventQueue::id(event);
      if (active_ > 0) run_.active_s += event.time_s - now_;
      now_ = event.time_s;
      if (EventQueue::is_transfer(event)) {
        transfer_done(id);
      } else if (id < stages_) {
        stage_done(id);
      } else {
        arrive(id - stages_);
      }
      // Whatever happens at this instant (requests arriving together, a batch
      // returning as another arrives) is seen by one scheduling step.
      if (events_.empty() || events_.next_time_s() > now_) schedule();
    }
    if (finished_ != count) throw std::logic_error("the serving simulation stopped with requests unfinished");
    if (count == 0) run_.first_arrival_s = 0;
    return std::move(run_);
  }

 private:
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + limits_.block_tokens - 1) / limits_.block_tokens; }

  void arrive(int r) {
    RequestRecord& record = run_.requests[static_cast<std::size_t>(r)];
    record.arrival_s = now_;
    ++active_;
    run_.first_arrival_s = std::min(run_.first_arrival_s, now_);
    waiting_.push_back(r);
  }

  // Forms batches while the pipeline has room and there is work.
  void schedule() {
    while (batches_in_pipeline_ < in_flight_limit_) {
      const int slot = form_batch();
      if (slot < 0) return;
      ++batches_in_pipeline_;
      ++run_.batches;
      run_.batch_tokens += batches_[static_cast<std::size_t>(slot)].load.tokens;
      enter_stage(0, slot);
    }
  }

  int new_slot() {
    if (!free_slots_.empty()) {
      const int slot = free_slots_.back();
      free_slots_.pop_back();
      Batch& batch = batches_[static_cast<std::size_t>(slot)];
      batch.load = {};
      batch.items.clear();  // keeps its capacity
      return slot;
    }
    batches_.emplace_back();
    batch_ids_.push_back(0);
    return static_cast<int>(batches_.size()) - 1;
  }

  void add(Batch& batch, int r, int tokens) {
    RequestState& state = states_[static_cast<std::size_t>(r)];
    const double cached = state.computed;
    const double pairs = tokens * cached + 0.5 * tokens * (tokens + 1.0);
    (tokens > 1 ? batch.load.prefill_pairs : batch.load.decode_pairs) += pairs;
    batch.load.context_tokens += cached;
    batch.load.tokens += tokens;
    if (tokens == state.pending()) ++batch.load.sampled;
    const std::int64_t need = blocks_for(state.computed + tokens) - state.blocks;
    free_blocks_ -= need;
    state.blocks += need;
    state.in_flight = true;
    batch.items.emplace_back(r, tokens);
  }

  // Preempts the latest-admitted request between steps (ready_'s last).
  void preempt_last_ready() {
    const int r = ready_.back();
    ready_.pop_back();
    RequestState& state = states_[static_cast<std::size_t>(r)];
    free_blocks_ += state.blocks;
    state.blocks = 0;
    state.computed = 0;
    --running_;
    waiting_.push_front(r);
    ++run_.requests[static_cast<std::size_t>(r)].preemptions;
    ++run_.preemptions;
  }

  // Frees blocks for ready_[index] by preempting the requests admitted
  // after it that are not in the pipeline, the latest first.
  bool make_room(std::size_t index, std::int64_t need) {
    while (free_blocks_ < need && ready_.size() > index + 1) preempt_last_ready();
    return free_blocks_ >= need;
  }

  // The running requests first (decodes and unfinished prefills, in order of
  // admission), then waiting ones in arrival order while the token budget,
  // the running limit and the cache allow; none admitted after a preemption.
  int form_batch() {
    int slot = -1;
    int budget = limits_.max_batch_tokens;
    bool preempted = false;
    const auto batch = [&]() -> Batch& {
      if (slot < 0) slot = new_slot();
      return batches_[static_cast<std::size_t>(slot)];
    };
    left_.clear();
    for (std::size_t i = 0; i < ready_.size(); ++i) {
      const int r = ready_[i];
      const RequestState& state = states_[static_cast<std::size_t>(r)];
      const int tokens = std::min(state.pending(), budget);
      if (tokens <= 0) {
        left_.push_back(r);
        continue;
      }
      const std::int64_t need = blocks_for(state.computed + tokens) - state.blocks;
      if (need > free_blocks_) {
        const std::int64_t before = run_.preemptions;
        const bool room = make_room(i, need);
        preempted = preempted || run_.preemptions > before;
        if (!room) {
          left_.push_back(r);
          continue;
        }
      }
      add(batch(), r, tokens);
      budget -= tokens;
    }
    ready_.swap(left_);
    while (!preempted && !waiting_.empty() && budget > 0 && running_ < limits_.max_sequences) {
      const int r = waiting_.front();
      const RequestState& state = states_[static_cast<std::size_t>(r)];
      const int tokens = std::min(state.pending(), budget);
      if (blocks_for(tokens) > free_blocks_) break;
      waiting_.pop_front();
      ++running_;
      states_[static_cast<std::size_t>(r)].admitted = next_admission_++;
      add(batch(), r, tokens);
      budget -= tokens;
    }
    if (slot >= 0) batch_ids_[static_cast<std::size_t>(slot)] = next_batch_id_++;
    return slot;
  }

  void enter_stage(int stage, int slot) {
    Resource& resource = stage_[static_cast<std::size_t>(stage)];
    resource.queue.push_back(slot);
    if (resource.current < 0) start_stage(stage);
  }

  void start_stage(int stage) {
    Resource& resource = stage_[static_cast<std::size_t>(stage)];
    resource.current = resource.queue.front();
    resource.queue.pop_front();
    resource.started_s = now_;
    const double seconds = costs_.stage_s(stage, batches_[static_cast<std::size_t>(resource.current)].load);
    events_.push(now_ + seconds, stage, false);
  }

  void stage_done(int stage) {
    Resource& resource = stage_[static_cast<std::size_t>(stage)];
    const int slot = resource.current;
    run_.stage_busy_s[static_cast<std::size_t>(stage)] += now_ - resource.started_s;
    if (record_spans_) {
      const Batch& batch = batches_[static_cast<std::size_t>(slot)];
      run_.spans.push_back({0, stage, batch_ids_[static_cast<std::size_t>(slot)], resource.started_s, now_,
                            batch.load.tokens, static_cast<int>(batch.items.size())});
    }
    resource.current = -1;
    if (!resource.queue.empty()) start_stage(stage);
    // Link `stage` carries the batch on: to the next stage, or from the last
    // back to the first with the sampled tokens.
    Resource& link = link_[static_cast<std::size_t>(stage)];
    link.queue.push_back(slot);
    if (link.current < 0) start_link(stage);
  }

  void start_link(int boundary) {
    Resource& link = link_[static_cast<std::size_t>(boundary)];
    link.current = link.queue.front();
    link.queue.pop_front();
    const StepLoad& load = batches_[static_cast<std::size_t>(link.current)].load;
    const double seconds = boundary + 1 < stages_ ? costs_.hop_s(boundary, load) : costs_.return_s(load);
    events_.push(now_ + seconds, boundary, true);
  }

  void transfer_done(int boundary) {
    Resource& link = link_[static_cast<std::size_t>(boundary)];
    const int slot = link.current;
    link.current = -1;
    if (!link.queue.empty()) start_link(boundary);
    if (boundary + 1 < stages_) {
      enter_stage(boundary + 1, slot);
    } else {
      complete(slot);
    }
  }

  void complete(int slot) {
    Batch& batch = batches_[static_cast<std::size_t>(slot)];
    left_.clear();
    for (const auto& [r, tokens] : batch.items) {
      RequestState& state = states_[static_cast<std::size_t>(r)];
      RequestRecord& record = run_.requests[static_cast<std::size_t>(r)];
      state.in_flight = false;
      const bool sampled = tokens == state.pending();
      state.computed += tokens;
      if (!sampled) {
        left_.push_back(r);
        continue;
      }
      ++state.generated;
      if (state.generated == 1) {
        record.first_token_s = now_;
      } else {
        run_.token_gaps_s.add(now_ - state.last_token_s);
      }
      state.last_token_s = now_;
      if (state.generated == state.output) {
        finish(r);
      } else {
        left_.push_back(r);
      }
    }
    // Back between steps, in order of admission (a batch takes its requests
    // in that order, those it admits last).
    const auto earlier = [this](int a, int b) {
      return states_[static_cast<std::size_t>(a)].admitted < states_[static_cast<std::size_t>(b)].admitted;
    };
    merged_.clear();
    std::merge(ready_.begin(), ready_.end(), left_.begin(), left_.end(), std::back_inserter(merged_), earlier);
    ready_.swap(merged_);
    free_slots_.push_back(slot);
    --batches_in_pipeline_;
    run_.kv_used.add(now_, limits_.kv_blocks - free_blocks_);
  }

  void finish(int r) {
    RequestState& state = states_[static_cast<std::size_t>(r)];
    free_blocks_ += state.blocks;
    state.blocks = 0;
    --running_;
    run_.requests[static_cast<std::size_t>(r)].finish_s = now_;
    run_.end_s = std::max(run_.end_s, now_);
    ++finished_;
    --active_;
    const auto count = static_cast<int>(workload_.requests.size());
    if (workload_.concurrency > 0 && next_client_request_ < count) events_.push(now_, stages_ + next_client_request_++, false);
  }

  const ServingWorkload& workload_;
  const ServingCosts& costs_;
  const SchedulerLimits& limits_;
  bool record_spans_;
  int stages_;
  int in_flight_limit_;
  std::vector<Resource> stage_, link_;
  std::int64_t free_blocks_;
  std::vector<RequestState> states_;
  int running_ = 0;           // admitted, not finished
  std::vector<int> ready_;    // admitted and between steps, in order of admission
  std::vector<int> left_, merged_;  // scratch
  std::deque<int> waiting_;   // arrived, not admitted (preempted ones first)
  std::vector<Batch> batches_;
  std::vector<std::int64_t> batch_ids_;
  std::vector<int> free_slots_;
  std::int64_t next_batch_id_ = 0;
  std::int64_t next_admission_ = 0;
  int batches_in_pipeline_ = 0;
  int next_client_request_ = 0;
  int finished_ = 0;
  int active_ = 0;  // arrived, not finished
  double now_ = 0;
  EventQueue events_;
  ServingRun run_;
};

void check_input(const ServingWorkload& workload, const ServingCosts& costs, const SchedulerLimits& limits) {
  if (costs.stages() < 1) throw InputError("a serving pipeline needs at least one stage");
  if (limits.max_batch_tokens < 1) throw InputError("--max-batch-tokens must be at least 1");
  if (limits.max_sequences < 1) throw InputError("--max-seqs must be at least 1");
  if (limits.block_tokens < 1) throw InputError("--block-size must be at least 1");
  if (limits.in_flight < 0) throw InputError("batches in flight must be at least 1 (0: one per stage)");
  if (workload.concurrency < 0) throw InputError("--concurrency must be at least 1");
  if (workload.requests.size() > kMostRequests) {
    throw InputError(fmt::format("{} requests are over the limit of {}", workload.requests.size(), kMostRequests));
  }
  const std::int64_t capacity = limits.kv_blocks * limits.block_tokens;
  for (std::size_t r = 0; r < workload.requests.size(); ++r) {
    const ServingRequest& request = workload.requests[r];
    if (request.prompt_tokens < 1 || request.output_tokens < 1) {
      throw InputError(fmt::format("request {}: prompt and output need at least 1 token each", r));
    }
    if (!(request.arrival_s >= 0) || !std::isfinite(request.arrival_s)) {
      throw InputError(fmt::format("request {}: arrival {} is not a time >= 0", r, request.arrival_s));
    }
    // The last token sampled is never run, so never cached.
    const std::int64_t tokens = std::int64_t{request.prompt_tokens} + request.output_tokens - 1;
    if (tokens > capacity) {
      throw InputError(fmt::format("request {} needs {} tokens of KV cache and the cache holds {}: shorten it, or "
                                   "give the cache more memory (more GPUs, FP8 weights or KV cache)",
                                   r, tokens, capacity));
    }
  }
}

}  // namespace

ServingRun simulate_serving(const ServingWorkload& workload, const ServingCosts& costs, const SchedulerLimits& limits,
                            bool record_spans) {
  check_input(workload, costs, limits);
  return ServingEngine(workload, costs, limits, record_spans).run();
}

}  // namespace pipeplan::sim
