#pragma once
/// @file cuda_memory_space.hpp
/// The memory of one CUDA GPU as a tasks::MemorySpace (DeviceKind::cuda of the dataflow
/// runtime, docs/dense.md):
/// - allocate/release: cudaMalloc'd buffers, kept in a pool by size after release (tile
///   sizes repeat; cudaFree would synchronize the whole device), freed with the space;
/// - attach_worker: the worker's own non-blocking stream and completion event; its
///   TaskContext::queue points to that cudaStream_t (kernels: `*static_cast<cudaStream_t*>(queue)`);
///   the worker thread's current device is the GPU;
/// - copy_from_host_async: cudaMemcpyAsync on the worker's stream (kernels queued after it
///   on that stream see the bytes);
/// - complete: an event recorded on the stream, waited with cudaEventBlockingSync (the
///   waiting thread sleeps instead of spinning on a core the host workers need); rethrows
///   the stream's asynchronous error as CudaError;
/// - copy_to_host: synchronous, on a transfer stream of the space (callable from any thread).
/// Host memory is not page-locked (cudaHostRegister of every tile is not done): copies run
/// at the pageable rate.

#include <memory>

#include "runtime/tasks/dataflow.hpp"

namespace topokpm::device {

/// The space of CUDA device `gpu`. Throws NotCompiled in a CPU-only build, ResourceError
/// when device `gpu` is not visible (the message carries the CUDA runtime's reason).
std::unique_ptr<tasks::MemorySpace> make_cuda_memory_space(int gpu);

}  // namespace topokpm::device
