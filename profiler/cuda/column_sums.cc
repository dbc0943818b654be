#include "profiler/cuda/column_sums.h"

#include <fmt/format.h>

#include <stdexcept>

#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {

void add_column_sums(const DeviceTensor& a, const DeviceTensor* b, DeviceTensor& out) {
  if ((b != nullptr && (b->rows() != a.rows() || b->cols() != a.cols())) || out.size() != a.cols()) {
    throw std::invalid_argument(
        fmt::format("column sums of a {}x{} matrix into {} entries", a.rows(), a.cols(), out.size()));
  }
  if (a.empty()) return;
  DeviceTensor partials(a.context(), kernels::column_sum_partials(a.rows()), a.cols(), DType::kF32);
  kernels::column_sums(bf16_data(a), b == nullptr ? nullptr : bf16_data(*b), a.rows(), a.cols(), f32_data(partials),
                       f32_data(out), a.context()->stream());
}

}  // namespace pipeplan::profiler
