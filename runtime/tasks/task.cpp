#include "runtime/tasks/task.hpp"

#include <utility>

#include "runtime/base/error.hpp"

namespace topokpm::tasks {

void TaskState::wait()
{
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
}

bool TaskState::done() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
}

std::vector<unsigned> TaskState::pus() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return pus_;
}

void TaskState::mark_started(std::vector<unsigned> pus)
{
    std::lock_guard<std::mutex> lock(mutex_);
    pus_ = std::move(pus);
}

void TaskState::mark_finished(std::exception_ptr error)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
        error_ = std::move(error);
    }
    finished_.notify_all();
}

void validate(const Task& task)
{
    TOPOKPM_USER_REQUIRE(static_cast<bool>(task.body), "a task needs a body (an empty std::function was given)");
    TOPOKPM_USER_REQUIRE(task.threads >= 1, "task thread count ", task.threads, " must be at least 1");
    TOPOKPM_USER_REQUIRE(!task.numa_strict || task.numa_node >= 0,
                         "a task with numa_strict needs a NUMA node (numa_node >= 0), got ", task.numa_node);
}

}  // namespace topokpm::tasks
