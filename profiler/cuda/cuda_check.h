// Every CUDA runtime and cuBLAS call goes through these: a failure throws
// std::runtime_error naming the call, the error and where it was made, so
// library code never prints or exits on a device error.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace pipeplan::profiler {

void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);
// After a kernel launch: a bad configuration is reported by the launch,
// a fault inside the kernel by a later synchronising call.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace pipeplan::profiler

#define PIPEPLAN_CUDA(call) ::pipeplan::profiler::check_cuda((call), #call, __FILE__, __LINE__)
#define PIPEPLAN_CUBLAS(call) ::pipeplan::profiler::check_cublas((call), #call, __FILE__, __LINE__)
#define PIPEPLAN_LAUNCHED(kernel) ::pipeplan::profiler::check_launch(kernel, __FILE__, __LINE__)
