#include "sim/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pipeplan::sim {
namespace {

constexpr std::size_t kMostKvPoints = 400;

// The q-quantile by selection: the order statistic at q (n - 1) and the
// least one above it, interpolated. Reorders `samples`.
template <typename T>
double quantile(std::vector<T>& samples, double q) {
  const double position = q * static_cast<double>(samples.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(below), samples.end());
  const double low = static_cast<double>(samples[below]);
  if (below + 1 >= samples.size()) return low;
  const auto high = static_cast<double>(*std::min_element(samples.begin() + static_cast<std::ptrdiff_t>(below) + 1, samples.end()));
  return low + (position - static_cast<double>(below)) * (high - low);
}

// The cache's time-weighted use and its peak: each sample holds until the next.
std::pair<double, double> kv_use(const ServingRun& run) {
  const KvUseTrace& trace = run.kv_used;
  if (run.kv_blocks <= 0 || trace.samples_seen() == 0) return {0, 0};
  const double peak = static_cast<double>(trace.peak_blocks());
  const double span = trace.last_s() - trace.first_s();
  const double blocks = static_cast<double>(run.kv_blocks);
  return {span > 0 ? trace.block_seconds() / span / blocks : peak / blocks, peak / blocks};
}

std::vector<std::pair<double, double>> kv_series(const ServingRun& run) {
  std::vector<std::pair<double, double>> series;
  if (run.kv_blocks <= 0) return series;
  const auto& samples = run.kv_used.series();
  const std::size_t step = std::max<std::size_t>(1, (samples.size() + kMostKvPoints - 1) / kMostKvPoints);
  for (std::size_t i = 0; i < samples.size(); i += step) {
    series.emplace_back(samples[i].first, static_cast<double>(samples[i].second) / static_cast<double>(run.kv_blocks));
  }
  return series;
}

template <typename T>
Percentiles percentiles_of(std::vector<T>& samples) {
  Percentiles result;
  if (samples.empty()) return result;
  double sum = 0;
  for (T sample : samples) sum += static_cast<double>(sample);
  result.mean = sum / static_cast<double>(samples.size());
  result.p50 = quantile(samples, 0.50);
  result.p90 = quantile(samples, 0.90);
  result.p99 = quantile(samples, 0.99);
  return result;
}

}  // namespace

Percentiles percentiles(std::vector<double> samples) { return percentiles_of(samples); }

ServingSummary summarize_serving(const std::vector<ServingRun>& replicas) {
  ServingSummary summary;
  std::vector<double> ttft, tpot, e2e;
  QuantileSketch itl;
  double first = INFINITY, last = 0, output = 0, prompt = 0, batches = 0, batch_tokens = 0;
  for (const ServingRun& run : replicas) {
    if (run.requests.empty()) continue;
    first = std::min(first, run.first_arrival_s);
    last = std::max(last, run.end_s);
    for (const RequestRecord& record : run.requests) {
      ttft.push_back(record.first_token_s - record.arrival_s);
      e2e.push_back(record.finish_s - record.arrival_s);
      if (record.output_tokens > 1) tpot.push_back((record.finish_s - record.first_token_s) / (record.output_tokens - 1));
      output += record.output_tokens;
      prompt += record.prompt_tokens;
    }
    itl.merge(run.token_gaps_s);
    summary.requests += static_cast<int>(run.requests.size());
    summary.preemptions += run.preemptions;
    batches += static_cast<double>(run.batches);
    batch_tokens += static_cast<double>(run.batch_tokens);
  }
  if (summary.requests == 0) return summary;
  summary.duration_s = last - first;
  if (summary.duration_s > 0) {
    summary.requests_per_s = summary.requests / summary.duration_s;
    summary.output_tokens_per_s = output / summary.duration_s;
    summary.total_tokens_per_s = (output + prompt) / summary.duration_s;
  }
  summary.ttft_s = percentiles(std::move(ttft));
  summary.tpot_s = percentiles(std::move(tpot));
  if (itl.count() > 0) summary.itl_s = {itl.sum() / static_cast<double>(itl.count()), itl.quantile(0.50),
                                        itl.quantile(0.90), itl.quantile(0.99)};
  summary.e2e_s = percentiles(std::move(e2e));
  summary.mean_batch_tokens = batches > 0 ? batch_tokens / batches : 0;
  int used = 0;
  for (const ServingRun& run : replicas) {
    if (run.requests.empty()) continue;
    const auto [mean, peak] = kv_use(run);
    summary.kv_mean_use += mean;
    summary.kv_peak_use = std::max(summary.kv_peak_use, peak);
    if (summary.stage_idle.empty()) summary.stage_idle.assign(run.stage_busy_s.size(), 0.0);
    for (std::size_t s = 0; s < run.stage_busy_s.size() && s < summary.stage_idle.size(); ++s) {
      summary.stage_idle[s] += run.active_s > 0 ? std::max(0.0, 1 - run.stage_busy_s[s] / run.active_s) : 0;
    }
    if (summary.kv_use.empty()) summary.kv_use = kv_series(run);
    ++used;
  }
  summary.kv_mean_use /= used;
  for (double& idle : summary.stage_idle) idle /= used;
  if (!summary.stage_idle.empty()) {
    summary.bubble = std::accumulate(summary.stage_idle.begin(), summary.stage_idle.end(), 0.0) /
                     static_cast<double>(summary.stage_idle.size());
  }
  return summary;
}

}  // namespace pipeplan::sim
