// Which GPU backend this process runs custom kernels on.
//
// This header, gpu_backend.cpp and kernel_port.{h,cpp} are the only files
// that may compare backend kinds or ask a backend whether it is available.
// Everything else asks a port table (kernel_port.h).
#pragma once

namespace mlxcel {

enum class GpuKernelBackend { None, Metal, Cuda, Rocm };

// The backend custom kernels run on, detected once per process.
GpuKernelBackend gpu_kernel_backend();

// True when some backend can run custom kernels at all.
bool custom_kernels_available();

// True when custom kernels can run and the default device is a GPU.
bool gpu_backend_available();

// The wavefront width ROCm ports are checked against (32 or 64).
int rocm_port_warp_size();

// Test seam: pretend the ROCm device has this wavefront width; 0 restores
// the detected width. Only tests may call it.
void set_rocm_port_warp_size_for_tests(int warp_size);

}  // namespace mlxcel
