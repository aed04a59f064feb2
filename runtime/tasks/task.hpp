#pragma once
/// @file task.hpp
/// An affinity-aware task (seed 000 §4.2, GHOST tasks kept small): a callable, the
/// number of threads it runs on and a preferred NUMA domain. A TaskQueue reserves that
/// many PUs for it, pins one OpenMP thread to each and then calls the body on the
/// queue's worker thread, so an `#pragma omp parallel` inside the body runs on exactly
/// the reserved PUs with `threads` threads (omp_set_num_threads is set for it). Used for
/// the communication thread of the overlapped halo exchange (docs/scaling.md).

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace topokpm::tasks {

/// Any NUMA domain will do.
inline constexpr int any_numa_node = -1;

struct Task {
    std::function<void()> body;     ///< the work; may open OpenMP parallel regions
    int threads = 1;                ///< PUs reserved = OpenMP threads of the body, >= 1
    int numa_node = any_numa_node;  ///< preferred NUMA domain (logical index)
    bool numa_strict = false;       ///< run only on PUs of numa_node (never elsewhere)
};

/// Shared state of an enqueued task: completion, the exception it threw, its PUs.
class TaskState {
public:
    /// Blocks until the task finished; rethrows the exception its body threw.
    void wait();
    /// True once the body returned or threw.
    bool done() const;
    /// The PUs reserved for the task (empty until it started), ascending.
    std::vector<unsigned> pus() const;

    // Called by TaskQueue.
    void mark_started(std::vector<unsigned> pus);
    void mark_finished(std::exception_ptr error);

private:
    mutable std::mutex mutex_;
    std::condition_variable finished_;
    bool done_ = false;
    std::exception_ptr error_;
    std::vector<unsigned> pus_;
};

using TaskHandle = std::shared_ptr<TaskState>;

/// Throws InputError when `task` has no body or fewer than one thread.
void validate(const Task& task);

}  // namespace topokpm::tasks
