# The CUDA backend builds wherever nvcc is found (PIPEPLAN_HAVE_CUDA), with
# cuBLAS from the toolkit and NCCL from the same tree. Without nvcc the
# project builds the CPU backend alone.
# PIPEPLAN_CUDA=OFF leaves it out (the sanitizer build does: the CUDA
# runtime and AddressSanitizer's shadow memory do not mix).
option(PIPEPLAN_CUDA "Build the CUDA backend where nvcc is found" ON)
set(PIPEPLAN_HAVE_CUDA OFF)
set(PIPEPLAN_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit (and NCCL) root")
if(PIPEPLAN_CUDA AND NOT CMAKE_CUDA_COMPILER AND EXISTS "${PIPEPLAN_CUDA_ROOT}/bin/nvcc")
  set(CMAKE_CUDA_COMPILER "${PIPEPLAN_CUDA_ROOT}/bin/nvcc")
endif()
if(PIPEPLAN_CUDA AND CMAKE_CUDA_COMPILER)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)  # A100, H100/H200
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_library(PIPEPLAN_NCCL_LIBRARY nccl HINTS "${PIPEPLAN_CUDA_ROOT}/lib64" "${PIPEPLAN_CUDA_ROOT}/lib" REQUIRED)
  find_path(PIPEPLAN_NCCL_INCLUDE nccl.h HINTS "${PIPEPLAN_CUDA_ROOT}/include" REQUIRED)
  add_library(pipeplan_nccl UNKNOWN IMPORTED)
  set_target_properties(pipeplan_nccl PROPERTIES IMPORTED_LOCATION "${PIPEPLAN_NCCL_LIBRARY}"
                                                 INTERFACE_INCLUDE_DIRECTORIES "${PIPEPLAN_NCCL_INCLUDE}")
  set(PIPEPLAN_HAVE_CUDA ON)
  message(STATUS "pipeplan: CUDA backend on (${CMAKE_CUDA_COMPILER}, NCCL ${PIPEPLAN_NCCL_LIBRARY})")
else()
  message(STATUS "pipeplan: CUDA backend off (no nvcc under ${PIPEPLAN_CUDA_ROOT})")
endif()
