// device.hpp for builds without the CUDA backend (TOPOKPM_CUDA=OFF or no nvcc found):
// queries say "no device" with the reason, everything else throws NotCompiled.
#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "device_stub.cpp is only built without the CUDA backend");

namespace topokpm::device {

bool cuda_compiled() { return false; }

int visible_device_count(std::string* why_none)
{
    if (why_none) *why_none = "this build has no CUDA kernels (configured with TOPOKPM_CUDA=OFF or no nvcc found)";
    return 0;
}

DeviceProperties device_properties(int) { throw NotCompiled("cuda", __func__); }
std::string describe(int) { throw NotCompiled("cuda", __func__); }
MemoryInfo memory_info(int) { throw NotCompiled("cuda", __func__); }
void require_device_memory(double, int, const std::string&) { throw NotCompiled("cuda", __func__); }
void set_device(int) { throw NotCompiled("cuda", __func__); }
void synchronize() { throw NotCompiled("cuda", __func__); }

DeviceBuffer::DeviceBuffer(std::size_t bytes, int, const std::string&)
{
    if (bytes != 0) throw NotCompiled("cuda", __func__);
}
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;
void DeviceBuffer::release() noexcept {}
void DeviceBuffer::upload(const void*, std::size_t, std::size_t) { throw NotCompiled("cuda", __func__); }
void DeviceBuffer::download(void*, std::size_t, std::size_t) const { throw NotCompiled("cuda", __func__); }
void DeviceBuffer::zero() { throw NotCompiled("cuda", __func__); }
PinnedBuffer::PinnedBuffer(std::size_t bytes)
{
    if (bytes != 0) throw NotCompiled("cuda", __func__);
}
PinnedBuffer::~PinnedBuffer() = default;
PinnedBuffer::PinnedBuffer(PinnedBuffer&&) noexcept = default;
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&&) noexcept = default;
void copy_device_to_device(void*, const void*, std::size_t) { throw NotCompiled("cuda", __func__); }

}  // namespace topokpm::device
