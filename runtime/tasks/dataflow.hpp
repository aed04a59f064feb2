#pragma once
/// @file dataflow.hpp
/// A data-availability-driven task runtime (seed 001 §4; docs/dense.md). Generic: it
/// knows tasks and data items (opaque ids with a host pointer and a size), never what
/// the data means.
///
/// - The master (the thread calling submit()) unrolls a serial task list into a bounded
///   task window: submit() blocks while `window` tasks are unfinished.
/// - Dependencies come from the serial order of the accesses (read after write, write
///   after read, write after write), found through a hash table keyed on the data id:
///   each entry holds the last writer and the readers since, so a finished task finds
///   its children without scanning the window. Consequence used by the dense
///   factorizations: the writes to one data item happen in submission order, whatever
///   the number of workers or the schedule (bitwise reproducibility).
/// - Every device has its own ready queue ordered by the task's priority (higher first,
///   ties in submission order) and its own workers. A task runs on the owner device of
///   the first item it writes (placement by the output's owner; register_data()), unless
///   it is movable (TaskSpec::device == -1 and TaskSpec::flops > 0) and every device is
///   rated (DeviceConfig::flops_per_second > 0): then it goes, when it becomes ready, to
///   the device with the earliest estimated finish (the cost model):
///       ahead / workers + copies + flops / flops_per_second,
///   ahead = the estimated seconds of the device's running tasks and of its queued tasks
///   of the same or a higher priority (the ready queue runs those first),
///   copies = the bytes of its items (read or read_write) not valid in that device's
///   space, over the link rate of each space they cross (DeviceConfig::link_bytes_per_second);
///   ties go to the lower device index. The estimates use the given rates, never measured
///   times; but which tasks are still unfinished at a decision depends on the schedule, so
///   the placement is reproducible only with a window of 1 (a factor computed with kernels
///   that round differently per device, e.g. cuBLAS, is then the same only to rounding).
/// - Devices of kind host share the process memory. Other devices have their own memory
///   space (MemorySpace); the runtime stages a task's inputs there before it runs
///   (explicit copies through the host, counted in Stats) and keeps one valid copy per
///   written item. DeviceKind::host_memory is such a device whose "device memory" is a
///   separate host allocation: it runs the same CPU kernels and exercises the transfer
///   path without a GPU. DeviceKind::cuda is a GPU (runtime/device/cuda_memory_space.hpp:
///   cudaMalloc'd buffers, copies on a stream per worker); task bodies pick their
///   kernels by TaskContext::kind and queue them on TaskContext::queue.
/// - Asynchronous devices: a body may return before its work is done (kernels queued on
///   the worker's queue). The runtime calls MemorySpace::complete() on that queue before
///   the task counts as finished, so a child on another device sees the results.
/// - Items freed by visit counts (seed §4.3): release() marks an item; once every task
///   submitted so far that touches it has finished, its device copies are written back
///   to the host and freed.
/// - Worker threads run with omp_set_num_threads(1), so a task body that calls an
///   OpenMP-built BLAS runs it single-threaded; workers are pinned to PUs when the
///   device lists them (topology::Topology::bind_thread).
/// - A body that throws: later bodies are skipped (the graph still drains) and wait_all()
///   rethrows the first exception.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/topology/topology.hpp"

namespace topokpm::tasks {

using DataId = std::uint64_t;

enum class Access {
    read,        ///< the task reads the item
    read_write,  ///< the task reads and modifies it
    overwrite,   ///< the task writes every byte without reading it: a device copy is
                 ///< allocated, not staged (e.g. a buffer the task zero-fills on a GPU)
};

enum class DeviceKind {
    host,         ///< CPU workers on the process memory
    host_memory,  ///< CPU workers on a private memory space with explicit copies (tests)
    cuda,         ///< a CUDA GPU (DeviceConfig::gpu); its workers drive it, one stream each
};

/// Memory of one device that is not the host's: allocation and explicit copies.
class MemorySpace {
public:
    virtual ~MemorySpace() = default;
    virtual void* allocate(std::size_t bytes) = 0;
    virtual void release(void* pointer) = 0;
    virtual void copy_from_host(void* device_dst, const void* host_src, std::size_t bytes) = 0;
    /// Returns once the bytes are in host memory (callable from any thread).
    virtual void copy_to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;

    // Per-worker queues, for devices that run asynchronously (a CUDA stream per worker).
    // The defaults describe a synchronous device with no queue.

    /// Called on each worker thread of the device before its first task; the result is
    /// that worker's TaskContext::queue (nullptr: none).
    virtual void* attach_worker() { return nullptr; }
    /// Called on the worker thread when it stops (its queue stays valid until the space is destroyed).
    virtual void detach_worker(void* queue) { (void)queue; }
    /// Stages a task's input on the executing worker's `queue`: may return before the copy
    /// is done, as long as work queued later on `queue` sees the bytes.
    virtual void copy_from_host_async(void* device_dst, const void* host_src, std::size_t bytes, void* queue)
    {
        (void)queue;
        copy_from_host(device_dst, host_src, bytes);
    }
    /// Returns when everything queued on `queue` has completed; throws the device's error
    /// (e.g. CudaError) if some of it failed. Called after every task body of the device.
    virtual void complete(void* queue) { (void)queue; }
};

/// A private host allocation used as device memory (DeviceKind::host_memory).
std::unique_ptr<MemorySpace> make_host_memory_space();

struct DeviceConfig {
    DeviceKind kind = DeviceKind::host;
    int workers = 1;              ///< worker threads, >= 1
    std::vector<unsigned> pus;    ///< worker w is pinned to pus[w % size]; empty: not pinned
    int gpu = 0;                  ///< the CUDA device index (kind cuda only)
    /// The cost model (see the file comment): the rate of one worker on the tasks' kernels
    /// in flop/s; 0: not rated (then every task is placed by its owner).
    double flops_per_second = 0.0;
    /// Copies between this device's space and the host in bytes/s (not a host device);
    /// 0: copies cost nothing in the model.
    double link_bytes_per_second = 0.0;
};

/// What a task body sees: where it runs and its data in that device's memory.
class TaskContext {
public:
    int device = 0;
    DeviceKind kind = DeviceKind::host;
    int worker = 0;  ///< global worker index
    void* queue = nullptr;  ///< the worker's queue on its device (points to its cudaStream_t for cuda), else null
    /// Pointer to `id` in the executing device's memory. Throws DimensionMismatch for an
    /// id the task did not declare.
    void* data(DataId id) const;
    template <typename T>
    T* as(DataId id) const { return static_cast<T*>(data(id)); }

    std::vector<std::pair<DataId, void*>> pointers_;
};

struct TaskSpec {
    std::function<void(const TaskContext&)> body;
    std::vector<std::pair<DataId, Access>> accesses;  ///< every item the body touches
    double priority = 0.0;  ///< higher runs first among ready tasks of a device
    int device = -1;        ///< -1: owner of the first written item (0 if none), or the
                            ///< earliest estimated finish when movable (flops > 0, devices rated)
    double flops = 0.0;     ///< the body's work for the cost model; 0: placed by its owner
};

class DataflowRuntime {
public:
    struct Options {
        std::vector<DeviceConfig> devices{DeviceConfig{}};  ///< device 0 first; >= 1
        std::size_t window = 4096;                          ///< unfinished tasks at most, >= 1
        const topology::Topology* topology = nullptr;       ///< needed only for pinning
    };
    struct Stats {
        std::vector<double> busy_seconds;  ///< per worker: time inside bodies
        std::vector<long> tasks;           ///< per worker: bodies run
        std::vector<int> worker_device;    ///< per worker: its device
        std::vector<double> flops;         ///< per worker: TaskSpec::flops of the bodies run
        long tasks_submitted = 0;
        std::size_t max_window = 0;        ///< most unfinished tasks seen at once
        std::size_t bytes_to_device = 0;   ///< explicit copies host -> device spaces
        std::size_t bytes_to_host = 0;     ///< explicit copies device spaces -> host
        long device_buffers = 0;           ///< device-space copies allocated now
        long peak_device_buffers = 0;      ///< most device-space copies allocated at once
    };

    /// Starts the workers. Throws InputError for no device, a device with no worker, a
    /// window of 0, or PUs without a topology; for a cuda device NotCompiled (CPU-only
    /// build) or ResourceError (no such GPU visible, with the CUDA runtime's reason).
    explicit DataflowRuntime(Options options);
    /// Waits for every task (errors are dropped here: call wait_all() to see them).
    ~DataflowRuntime();
    DataflowRuntime(const DataflowRuntime&) = delete;
    DataflowRuntime& operator=(const DataflowRuntime&) = delete;

    /// Declares data item `id` of `bytes` bytes at `host_pointer`, owned by `owner`.
    /// Throws InputError for an unknown device or an id already registered.
    void register_data(DataId id, void* host_pointer, std::size_t bytes, int owner = 0);
    /// Queues a task (blocks while the window is full). Throws InputError for an
    /// unregistered id or an unknown device.
    void submit(TaskSpec task);
    /// Frees `id`'s device copies once every task submitted so far that touches it is done
    /// (written back first when a device holds the only valid copy). A later task that
    /// touches `id` stages it again.
    void release(DataId id);
    /// Blocks until every task submitted so far that touches `id` has finished and its host
    /// copy is valid (copied back from a device that holds the only valid one): the master
    /// may then read the host memory, e.g. to send a panel, while other tasks run on.
    /// Throws InputError for an unregistered id.
    void wait_for(DataId id);
    /// Blocks until every submitted task finished, writes device-held items back to the
    /// host, and rethrows the first exception a body threw.
    void wait_all();

    Stats stats() const;
    int num_devices() const { return static_cast<int>(devices_.size()); }
    DeviceKind kind(int device) const;

private:
    struct Node;
    struct Item;
    struct Device;
    void worker_loop(int device, int worker);
    void stage(Node& node, int device, TaskContext& context);
    void finish(const std::shared_ptr<Node>& node);
    void write_back_and_free(Item& item);
    void fetch_to_host(Item& item);  // host copy valid again (from a device holding a valid copy)
    void push_ready(const std::shared_ptr<Node>& node);
    /// Seconds the model expects `node` to take on `device`: copies + flops / rate.
    double estimate(const Node& node, int device) const;

    std::vector<std::unique_ptr<Device>> devices_;
    std::unordered_map<DataId, std::unique_ptr<Item>> items_;
    std::size_t window_;
    const topology::Topology* topology_;
    bool rated_ = false;  ///< every device has flops_per_second > 0: movable tasks use the model

    mutable std::mutex mutex_;
    std::condition_variable room_;  ///< window has room / everything finished
    std::size_t in_flight_ = 0;
    std::uint64_t next_seq_ = 0;
    bool stopping_ = false;
    std::exception_ptr error_;
    Stats stats_;
    std::atomic<std::size_t> bytes_to_device_{0};
    std::atomic<std::size_t> bytes_to_host_{0};
    std::atomic<long> device_buffers_{0};
    std::atomic<long> peak_device_buffers_{0};
    std::vector<std::thread> threads_;
};

}  // namespace topokpm::tasks
