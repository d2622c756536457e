// One way to check CUDA and cuBLAS calls: throw with the failing expression, file and line. Kernel
// launchers instead return a Status, so that a sweep (calibrate/) can skip a shape and carry on.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace metronome::kernels {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(const char* what, const char* expr, const char* file,
                                          int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                  " failed: " + what);
}

// The result of a launcher: ok, or why not (bad parameters, or a CUDA/cuBLAS error).
struct Status {
  std::string error;  // empty: ok
  bool ok() const { return error.empty(); }
  static Status Ok() { return {}; }
  static Status Invalid(std::string why) { return {"invalid argument: " + std::move(why)}; }
};

inline Status cuda_status(cudaError_t e, const char* where) {
  if (e == cudaSuccess) return {};
  return {std::string(where) + ": " + cudaGetErrorString(e)};
}

}  // namespace metronome::kernels

#define CUDA_CHECK(expr)                                                                          \
  do {                                                                                            \
    const cudaError_t metronome_err_ = (expr);                                                    \
    if (metronome_err_ != cudaSuccess) {                                                          \
      ::metronome::kernels::throw_cuda_error(cudaGetErrorString(metronome_err_), #expr, __FILE__, \
                                             __LINE__);                                           \
    }                                                                                             \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                \
  do {                                                                                    \
    const cublasStatus_t metronome_st_ = (expr);                                          \
    if (metronome_st_ != CUBLAS_STATUS_SUCCESS) {                                         \
      ::metronome::kernels::throw_cuda_error(cublasGetStatusString(metronome_st_), #expr, \
                                             __FILE__, __LINE__);                         \
    }                                                                                     \
  } while (0)

// Throws a launcher's failed Status (tests and harnesses that have nothing to skip).
#define STATUS_CHECK(expr)                                                                \
  do {                                                                                    \
    const ::metronome::kernels::Status metronome_s_ = (expr);                             \
    if (!metronome_s_.ok()) {                                                             \
      ::metronome::kernels::throw_cuda_error(metronome_s_.error.c_str(), #expr, __FILE__, \
                                             __LINE__);                                   \
    }                                                                                     \
  } while (0)
