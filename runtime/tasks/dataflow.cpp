#include "runtime/tasks/dataflow.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <queue>

#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/device/cuda_memory_space.hpp"

namespace topokpm::tasks {

namespace {

class HostMemorySpace final : public MemorySpace {
public:
    void* allocate(std::size_t bytes) override
    {
        void* p = std::malloc(bytes == 0 ? 1 : bytes);
        if (p == nullptr) throw ResourceError(detail::concat("host-memory device: cannot allocate ", bytes, " bytes"));
        return p;
    }
    void release(void* pointer) override { std::free(pointer); }
    void copy_from_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
};

}  // namespace

std::unique_ptr<MemorySpace> make_host_memory_space() { return std::make_unique<HostMemorySpace>(); }

void* TaskContext::data(DataId id) const
{
    for (const auto& p : pointers_)
        if (p.first == id) return p.second;
    TOPOKPM_REQUIRE(false, "task body asked for data item ", id, " it did not declare");
    return nullptr;
}

struct DataflowRuntime::Node {
    TaskSpec spec;
    std::uint64_t seq = 0;
    int device = 0;
    int unmet = 0;  ///< unfinished predecessors (+1 while submit() is still wiring it)
    bool movable = false;   ///< placed by the cost model when it becomes ready
    double seconds = 0.0;   ///< the model's estimate on `device`, counted in its backlog
    bool finished = false;
    std::vector<std::shared_ptr<Node>> children;
};

/// One data item: its dependency state (the hash-table entry) and its copies.
struct DataflowRuntime::Item {
    void* host = nullptr;
    std::size_t bytes = 0;
    int owner = 0;
    std::shared_ptr<Node> last_writer;           ///< guarded by the runtime mutex
    std::vector<std::shared_ptr<Node>> readers;  ///< readers since last_writer
    long expected_visits = 0;                    ///< tasks submitted that touch it
    long actual_visits = 0;                      ///< of those, finished
    bool released = false;
    // Copies: space 0 is the host; space d+1 is device d's private memory.
    std::mutex copy_mutex;
    std::vector<void*> copies;   ///< per space; copies[0] == host
    /// Per space; written under copy_mutex, read without it by the cost model (a hint).
    std::vector<std::atomic<bool>> valid;
};

struct DataflowRuntime::Device {
    DeviceConfig config;
    std::unique_ptr<MemorySpace> space;  ///< null for host devices
    int space_index = 0;                 ///< 0 for host devices
    struct Later {
        bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const
        {
            if (a->spec.priority != b->spec.priority) return a->spec.priority < b->spec.priority;
            return a->seq > b->seq;
        }
    };
    std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, Later> ready;
    std::condition_variable wake;
    // The cost model's view of the work placed here and not finished (seconds): queued tasks
    // per priority (with their count, so an emptied level is erased exactly) and running ones.
    std::map<double, std::pair<double, long>> queued;
    double running = 0.0;
    /// Seconds before a task of `priority` placed now would start on one of `workers`
    /// workers: everything running and everything queued at its priority or higher (the
    /// ready queue lets those go first; lower ones wait behind it).
    double ahead(double priority) const
    {
        double seconds = running;
        for (auto it = queued.lower_bound(priority); it != queued.end(); ++it) seconds += it->second.first;
        return std::max(0.0, seconds) / config.workers;
    }
};

DataflowRuntime::DataflowRuntime(Options options) : window_(options.window), topology_(options.topology)
{
    TOPOKPM_USER_REQUIRE(!options.devices.empty(), "the dataflow runtime needs at least one device");
    TOPOKPM_USER_REQUIRE(options.window >= 1, "{task_window} must be >= 1, got 0");
    int spaces = 1;
    rated_ = true;
    for (const DeviceConfig& config : options.devices) {
        TOPOKPM_USER_REQUIRE(config.workers >= 1, "a device needs >= 1 worker, got ", config.workers);
        TOPOKPM_USER_REQUIRE(config.flops_per_second >= 0 && config.link_bytes_per_second >= 0,
                             "a device's flops_per_second and link_bytes_per_second must be >= 0, got ",
                             config.flops_per_second, " and ", config.link_bytes_per_second);
        rated_ = rated_ && config.flops_per_second > 0;
        // One management thread per GPU (seed §4.2): its stream orders the staging copies
        // before the kernels, so no other queue can see a copy still in flight.
        TOPOKPM_USER_REQUIRE(config.kind != DeviceKind::cuda || config.workers == 1,
                             "a cuda device is driven by exactly 1 worker, got ", config.workers);
        TOPOKPM_USER_REQUIRE(config.pus.empty() || topology_ != nullptr, "pinning workers needs a topology");
        auto device = std::make_unique<Device>();
        device->config = config;
        if (config.kind != DeviceKind::host) {
            device->space = config.kind == DeviceKind::cuda ? device::make_cuda_memory_space(config.gpu)
                                                           : make_host_memory_space();
            device->space_index = spaces++;
        }
        devices_.push_back(std::move(device));
    }
    int worker = 0;
    for (std::size_t d = 0; d < devices_.size(); ++d)
        for (int w = 0; w < devices_[d]->config.workers; ++w) {
            stats_.busy_seconds.push_back(0.0);
            stats_.tasks.push_back(0);
            stats_.worker_device.push_back(static_cast<int>(d));
            stats_.flops.push_back(0.0);
            threads_.emplace_back([this, d, worker] { worker_loop(static_cast<int>(d), worker); });
            ++worker;
        }
}

DataflowRuntime::~DataflowRuntime()
{
    {
        std::unique_lock<std::mutex> lock(mutex_);
        room_.wait(lock, [this] { return in_flight_ == 0; });
        stopping_ = true;
    }
    for (auto& device : devices_) device->wake.notify_all();
    for (std::thread& t : threads_) t.join();
    for (auto& entry : items_) {
        Item& item = *entry.second;
        for (auto& device : devices_)
            if (device->space && item.copies[static_cast<std::size_t>(device->space_index)] != nullptr)
                device->space->release(item.copies[static_cast<std::size_t>(device->space_index)]);
    }
}

DeviceKind DataflowRuntime::kind(int device) const
{
    return devices_.at(static_cast<std::size_t>(device))->config.kind;
}

void DataflowRuntime::register_data(DataId id, void* host_pointer, std::size_t bytes, int owner)
{
    TOPOKPM_USER_REQUIRE(owner >= 0 && owner < num_devices(), "data owner ", owner, " is not a device (0..",
                         num_devices() - 1, ")");
    std::lock_guard<std::mutex> lock(mutex_);
    TOPOKPM_USER_REQUIRE(items_.find(id) == items_.end(), "data item ", id, " is already registered");
    auto item = std::make_unique<Item>();
    item->host = host_pointer;
    item->bytes = bytes;
    item->owner = owner;
    int spaces = 1;
    for (auto& device : devices_) spaces = std::max(spaces, device->space_index + 1);
    item->copies.assign(static_cast<std::size_t>(spaces), nullptr);
    item->copies[0] = host_pointer;
    item->valid = std::vector<std::atomic<bool>>(static_cast<std::size_t>(spaces));
    for (auto& v : item->valid) v = false;
    item->valid[0] = true;
    items_.emplace(id, std::move(item));
}

double DataflowRuntime::estimate(const Node& node, int device_index) const
{
    const Device& device = *devices_[static_cast<std::size_t>(device_index)];
    const std::size_t space = static_cast<std::size_t>(device.space_index);
    auto link_seconds = [](const Device& d, std::size_t bytes) {
        return d.config.link_bytes_per_second > 0 ? double(bytes) / d.config.link_bytes_per_second : 0.0;
    };
    double seconds = node.spec.flops / device.config.flops_per_second;
    for (const auto& access : node.spec.accesses) {
        if (access.second == Access::overwrite) continue;
        const Item& item = *items_.at(access.first);
        if (item.valid[space]) continue;
        if (!item.valid[0])  // home first from the device holding it
            for (const auto& other : devices_)
                if (other->space && item.valid[static_cast<std::size_t>(other->space_index)]) {
                    seconds += link_seconds(*other, item.bytes);
                    break;
                }
        if (space != 0) seconds += link_seconds(device, item.bytes);
    }
    return seconds;
}

void DataflowRuntime::push_ready(const std::shared_ptr<Node>& node)
{
    if (node->movable) {  // the earliest estimated finish; ties to the lower index
        double best = 0.0;
        for (int d = 0; d < num_devices(); ++d) {
            const Device& candidate = *devices_[static_cast<std::size_t>(d)];
            const double seconds = estimate(*node, d);
            const double finish = candidate.ahead(node->spec.priority) + seconds;
            if (d == 0 || finish < best) {
                best = finish;
                node->device = d;
                node->seconds = seconds;
            }
        }
    } else if (rated_) {
        node->seconds = estimate(*node, node->device);
    }
    Device& device = *devices_[static_cast<std::size_t>(node->device)];
    if (rated_) {
        auto& level = device.queued[node->spec.priority];
        level.first += node->seconds;
        ++level.second;
    }
    device.ready.push(node);
    device.wake.notify_one();
}

void DataflowRuntime::submit(TaskSpec task)
{
    TOPOKPM_USER_REQUIRE(static_cast<bool>(task.body), "a task needs a body");
    auto node = std::make_shared<Node>();
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return in_flight_ < window_; });
    int device = task.device;
    for (const auto& access : task.accesses) {
        auto it = items_.find(access.first);
        TOPOKPM_USER_REQUIRE(it != items_.end(), "task accesses unregistered data item ", access.first);
        if (device < 0 && access.second != Access::read) device = it->second->owner;
    }
    if (device < 0) device = 0;
    TOPOKPM_USER_REQUIRE(device < num_devices(), "task placed on device ", device, " of ", num_devices());
    node->spec = std::move(task);
    node->seq = next_seq_++;
    node->device = device;
    node->movable = rated_ && node->spec.device < 0 && node->spec.flops > 0;
    node->unmet = 1;
    auto depend_on = [&](const std::shared_ptr<Node>& parent) {
        if (!parent || parent->finished || parent == node) return;
        if (!parent->children.empty() && parent->children.back() == node) return;
        parent->children.push_back(node);
        ++node->unmet;
    };
    for (const auto& access : node->spec.accesses) {
        Item& item = *items_[access.first];
        ++item.expected_visits;
        depend_on(item.last_writer);
        if (access.second == Access::read) {
            item.readers.erase(std::remove_if(item.readers.begin(), item.readers.end(),
                                              [](const std::shared_ptr<Node>& r) { return r->finished; }),
                               item.readers.end());
            item.readers.push_back(node);
        } else {
            for (const auto& reader : item.readers) depend_on(reader);
            item.readers.clear();
            item.last_writer = node;
        }
    }
    ++in_flight_;
    ++stats_.tasks_submitted;
    stats_.max_window = std::max(stats_.max_window, in_flight_);
    if (--node->unmet == 0) push_ready(node);
}

void DataflowRuntime::stage(Node& node, int device_index, TaskContext& context)
{
    Device& device = *devices_[static_cast<std::size_t>(device_index)];
    const std::size_t space = static_cast<std::size_t>(device.space_index);
    for (const auto& access : node.spec.accesses) {
        Item* item;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            item = items_[access.first].get();
        }
        std::lock_guard<std::mutex> copy_lock(item->copy_mutex);
        if (!item->valid[space]) {
            const bool stage_bytes = access.second != Access::overwrite;
            if (stage_bytes && !item->valid[0]) {  // the only valid copy is on another device: bring it home
                for (auto& other : devices_) {
                    const std::size_t s = static_cast<std::size_t>(other->space_index);
                    if (other->space && item->valid[s]) {
                        other->space->copy_to_host(item->host, item->copies[s], item->bytes);
                        bytes_to_host_ += item->bytes;
                        break;
                    }
                }
                item->valid[0] = true;
            }
            if (space != 0) {
                if (item->copies[space] == nullptr) {
                    item->copies[space] = device.space->allocate(item->bytes);
                    const long live = ++device_buffers_;
                    long peak = peak_device_buffers_.load();
                    while (live > peak && !peak_device_buffers_.compare_exchange_weak(peak, live)) {
                    }
                }
                if (stage_bytes) {
                    device.space->copy_from_host_async(item->copies[space], item->host, item->bytes, context.queue);
                    bytes_to_device_ += item->bytes;
                }
            }
            item->valid[space] = true;
        }
        if (access.second != Access::read)
            for (std::size_t s = 0; s < item->valid.size(); ++s) item->valid[s] = (s == space);
        context.pointers_.emplace_back(access.first, item->copies[space]);
    }
}

void DataflowRuntime::write_back_and_free(Item& item)
{
    std::lock_guard<std::mutex> copy_lock(item.copy_mutex);
    for (auto& device : devices_) {
        if (!device->space) continue;
        const std::size_t s = static_cast<std::size_t>(device->space_index);
        if (item.copies[s] == nullptr) continue;
        if (item.valid[s] && !item.valid[0]) {
            device->space->copy_to_host(item.host, item.copies[s], item.bytes);
            bytes_to_host_ += item.bytes;
            item.valid[0] = true;
        }
        device->space->release(item.copies[s]);
        --device_buffers_;
        item.copies[s] = nullptr;
        item.valid[s] = false;
    }
}

void DataflowRuntime::finish(const std::shared_ptr<Node>& node)
{
    std::lock_guard<std::mutex> lock(mutex_);
    node->finished = true;
    if (rated_) devices_[static_cast<std::size_t>(node->device)]->running -= node->seconds;
    for (const auto& child : node->children)
        if (--child->unmet == 0) push_ready(child);
    node->children.clear();
    for (const auto& access : node->spec.accesses) {
        Item& item = *items_[access.first];
        ++item.actual_visits;
        if (item.last_writer == node) item.last_writer.reset();
        if (item.released && item.actual_visits == item.expected_visits) write_back_and_free(item);
    }
    node->spec.body = nullptr;  // drop captured state early
    --in_flight_;
    room_.notify_all();
}

void DataflowRuntime::worker_loop(int device_index, int worker)
{
    // OpenMP-built BLAS called from a task runs on this thread only.
    omp_set_num_threads(1);
    Device& device = *devices_[static_cast<std::size_t>(device_index)];
    if (!device.config.pus.empty()) {
        const auto& pus = device.config.pus;
        topology_->bind_thread({pus[static_cast<std::size_t>(worker) % pus.size()]});
    }
    void* queue = nullptr;
    if (device.space) {
        try {
            queue = device.space->attach_worker();
        } catch (...) {  // e.g. no stream: every task of this worker fails with the reason
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
    }
    for (;;) {
        std::shared_ptr<Node> node;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            device.wake.wait(lock, [&] { return stopping_ || !device.ready.empty(); });
            if (device.ready.empty()) break;
            node = device.ready.top();
            device.ready.pop();
            if (rated_) {  // the model's queued -> running
                auto level = device.queued.find(node->spec.priority);
                if (--level->second.second == 0) device.queued.erase(level);
                else level->second.first -= node->seconds;
                device.running += node->seconds;
            }
        }
        bool skip;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            skip = static_cast<bool>(error_);
        }
        if (!skip) {
            const double start = wall_seconds();
            try {
                TaskContext context;
                context.device = device_index;
                context.kind = device.config.kind;
                context.worker = worker;
                context.queue = queue;
                stage(*node, device_index, context);
                node->spec.body(context);
                if (device.space) device.space->complete(queue);  // the body's queued work is done
            } catch (...) {
                if (device.space) {
                    try {  // drain what the failed body queued before its buffers can be reused
                        device.space->complete(queue);
                    } catch (...) {
                    }
                }
                std::lock_guard<std::mutex> lock(mutex_);
                if (!error_) error_ = std::current_exception();
            }
            const double busy = wall_seconds() - start;
            std::lock_guard<std::mutex> lock(mutex_);
            stats_.busy_seconds[static_cast<std::size_t>(worker)] += busy;
            stats_.flops[static_cast<std::size_t>(worker)] += node->spec.flops;
            ++stats_.tasks[static_cast<std::size_t>(worker)];
        }
        finish(node);
    }
    if (device.space) device.space->detach_worker(queue);
}

void DataflowRuntime::release(DataId id)
{
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = items_.find(id);
    TOPOKPM_USER_REQUIRE(it != items_.end(), "release of unregistered data item ", id);
    Item& item = *it->second;
    item.released = true;
    if (item.actual_visits == item.expected_visits) write_back_and_free(item);
}

void DataflowRuntime::fetch_to_host(Item& item)
{
    if (item.valid[0]) return;
    std::lock_guard<std::mutex> copy_lock(item.copy_mutex);
    for (auto& device : devices_) {
        const std::size_t s = static_cast<std::size_t>(device->space_index);
        if (device->space && item.valid[s]) {
            device->space->copy_to_host(item.host, item.copies[s], item.bytes);
            bytes_to_host_ += item.bytes;
            item.valid[0] = true;
            return;
        }
    }
}

void DataflowRuntime::wait_for(DataId id)
{
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = items_.find(id);
    TOPOKPM_USER_REQUIRE(it != items_.end(), "wait for unregistered data item ", id);
    Item& item = *it->second;
    room_.wait(lock, [&] { return item.actual_visits == item.expected_visits; });
    fetch_to_host(item);
}

void DataflowRuntime::wait_all()
{
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return in_flight_ == 0; });
    for (auto& entry : items_) {
        fetch_to_host(*entry.second);
    }
    if (error_) {
        std::exception_ptr error = error_;
        error_ = nullptr;
        std::rethrow_exception(error);
    }
}

DataflowRuntime::Stats DataflowRuntime::stats() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    Stats stats = stats_;
    stats.bytes_to_device = bytes_to_device_;
    stats.bytes_to_host = bytes_to_host_;
    stats.device_buffers = device_buffers_;
    stats.peak_device_buffers = peak_device_buffers_;
    return stats;
}

}  // namespace topokpm::tasks
