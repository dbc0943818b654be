#include "profiler/link_sweep.h"

#include <vector>

#include "common/error.h"
#include "profiler/layer_profiler.h"

namespace pipeplan::profiler {

models::LinkProfile sweep_link(const std::string& backend, std::int64_t max_bytes, int warmup, int repeats,
                               const std::function<double(std::int64_t)>& one_way_s) {
  if (repeats < 1 || warmup < 0) throw InputError("--repeats must be >= 1 and --warmup >= 0");
  models::LinkProfile links;
  links.backend = backend;
  for (std::int64_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    std::vector<double> samples;
    for (int run = 0; run < warmup + repeats; ++run) {
      const double seconds = one_way_s(bytes);
      if (run >= warmup) samples.push_back(seconds);
    }
    models::LinkMeasurement m;
    m.bytes = bytes;
    m.time = summarize(samples);
    m.algbw = m.time.median_s > 0 ? static_cast<double>(bytes) / m.time.median_s : 0;
    m.busbw = m.algbw;  // nccl-tests: send/recv's bus factor is 1
    links.sizes.push_back(m);
  }
  models::fit_link(links);
  return links;
}

}  // namespace pipeplan::profiler
