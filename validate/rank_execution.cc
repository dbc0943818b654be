#include "validate/rank_execution.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "validate/rank_loop.h"

namespace pipeplan::validate {
namespace {

// The flat encoding: numbers in a fixed order; a string as its length and
// its characters; records as (stage, micro-batch, kind, overlapped, start, end).
class Writer {
 public:
  void number(double value) { values_.push_back(value); }
  void text(const std::string& value) {
    number(static_cast<double>(value.size()));
    for (const char c : value) number(static_cast<unsigned char>(c));
  }
  std::vector<double> take() { return std::move(values_); }

 private:
  std::vector<double> values_;
};

class Reader {
 public:
  explicit Reader(const std::vector<double>& values) : values_(values) {}
  double number() {
    if (next_ >= values_.size()) throw std::runtime_error("a rank's result arrived truncated");
    return values_[next_++];
  }
  std::int64_t integer() { return std::llround(number()); }
  int small() { return static_cast<int>(integer()); }
  std::string text() {
    std::string value(static_cast<std::size_t>(integer()), ' ');
    for (char& c : value) c = static_cast<char>(small());
    return value;
  }

 private:
  const std::vector<double>& values_;
  std::size_t next_ = 0;
};

}  // namespace

RankResult execute_rank(const models::ModelConfig& model, const models::TrainingShape& shape,
                        const sim::Schedule& lowered, const step::StageSplit& split, Transport& transport,
                        const ExecutionSettings& settings) {
  detail::check_settings(settings);
  StageRunner runner(CpuBackend{}, model, shape, lowered, split, transport.rank(), {settings.seed});
  return detail::run_rank(runner, model, shape, lowered, transport, transport, settings);
}

std::vector<double> pack_result(const RankResult& result) {
  Writer out;
  out.number(result.rank);
  out.number(static_cast<double>(result.parameter_bytes));
  out.number(static_cast<double>(result.peak_held_bytes));
  out.number(static_cast<double>(result.peak_heap_bytes));
  out.number(result.holds_loss ? 1 : 0);
  out.number(result.loss);
  out.number(result.reference_loss);
  out.number(result.gradients ? 1 : 0);
  if (result.gradients) {
    out.number(result.gradients->parameters);
    out.number(result.gradients->max_relative_error);
    out.number(result.gradients->worst_layer);
    out.text(result.gradients->worst_parameter);
    out.number(result.gradients->tolerance);
  }
  out.number(static_cast<double>(result.iterations.size()));
  for (const std::vector<RunRecord>& records : result.iterations) {
    out.number(static_cast<double>(records.size()));
    for (const RunRecord& record : records) {
      out.number(record.action.stage);
      out.number(record.action.microbatch);
      out.number(static_cast<int>(record.action.kind));
      out.number(record.action.overlapped ? 1 : 0);
      out.number(record.start_s);
      out.number(record.end_s);
    }
  }
  return out.take();
}

RankResult unpack_result(const std::vector<double>& values) {
  Reader in(values);
  RankResult result;
  result.rank = in.small();
  result.parameter_bytes = in.integer();
  result.peak_held_bytes = in.integer();
  result.peak_heap_bytes = in.integer();
  result.holds_loss = in.small() != 0;
  result.loss = in.number();
  result.reference_loss = in.number();
  if (in.small() != 0) {
    GradientCheck check;
    check.parameters = in.small();
    check.max_relative_error = in.number();
    check.worst_layer = in.small();
    check.worst_parameter = in.text();
    check.tolerance = in.number();
    result.gradients = check;
  }
  result.iterations.resize(static_cast<std::size_t>(in.integer()));
  for (std::vector<RunRecord>& records : result.iterations) {
    records.resize(static_cast<std::size_t>(in.integer()));
    for (RunRecord& record : records) {
      record.action.stage = in.small();
      record.action.microbatch = in.small();
      record.action.kind = static_cast<sim::OpKind>(in.small());
      record.action.overlapped = in.small() != 0;
      record.start_s = in.number();
      record.end_s = in.number();
    }
  }
  return result;
}

std::vector<RankResult> gather_results(Transport& transport, const RankResult& mine) {
  std::vector<RankResult> all;
  for (const std::vector<double>& values : transport.gather(pack_result(mine))) all.push_back(unpack_result(values));
  return all;
}

}  // namespace pipeplan::validate
