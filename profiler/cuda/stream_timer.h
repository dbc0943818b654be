// Times work queued on a stream with a pair of CUDA events: the device's
// own clock between the start and the end of the work, not the host's
// launch time.
#pragma once

#include "profiler/cuda/device_context.h"

struct CUevent_st;  // cudaEvent_t is CUevent_st*

namespace pipeplan::profiler {

class StreamTimer {
 public:
  explicit StreamTimer(const DeviceContext& context);
  ~StreamTimer();
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;

  // Marks the start on the stream.
  void start();
  // Marks the end, waits for it and returns the seconds between the marks.
  double stop_seconds();

 private:
  CUstream_st* stream_;
  CUevent_st* start_ = nullptr;
  CUevent_st* stop_ = nullptr;
};

}  // namespace pipeplan::profiler
