#include "runtime/topology/topology.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "runtime/base/error.hpp"
#include "runtime/base/system.hpp"

namespace topokpm::topology {

namespace {

/// Owning hwloc bitmap.
struct Bitmap {
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    Bitmap()
    {
        if (b == nullptr) throw Error("hwloc_bitmap_alloc failed");
    }
    ~Bitmap() { hwloc_bitmap_free(b); }
    Bitmap(const Bitmap&) = delete;
    Bitmap& operator=(const Bitmap&) = delete;
};

std::vector<unsigned> to_list(hwloc_const_bitmap_t set)
{
    std::vector<unsigned> out;
    for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i))
        out.push_back(static_cast<unsigned>(i));
    return out;
}

void from_list(const std::vector<unsigned>& pus, hwloc_bitmap_t set)
{
    hwloc_bitmap_zero(set);
    for (unsigned p : pus) hwloc_bitmap_set(set, p);
}

std::string plural(int n, const char* word)
{
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// PCI display (0x0300) or 3-D controller (0x0302) of NVIDIA or AMD, or any 3-D
/// controller: the GPUs a compute rank can drive. Plain VGA of a VM is left out.
bool is_compute_gpu(const hwloc_obj_t pci)
{
    const unsigned cls = pci->attr->pcidev.class_id;
    const unsigned vendor = pci->attr->pcidev.vendor_id;
    const bool known_vendor = vendor == 0x10de || vendor == 0x1002;
    return cls == 0x0302 || (cls == 0x0300 && known_vendor);
}

}  // namespace

struct Topology::Impl {
    hwloc_topology_t topo = nullptr;
};

std::string MachineInfo::summary() const
{
    return plural(packages, "package") + ", " + plural(numa_nodes, "NUMA node") + ", " + plural(cores, "core") +
           ", " + plural(pus, "PU") + ", " + plural(num_gpus(), "GPU") + ", " +
           format_bytes(static_cast<double>(memory_bytes));
}

std::string format_pus(const std::vector<unsigned>& pus)
{
    std::ostringstream os;
    for (std::size_t i = 0; i < pus.size();) {
        std::size_t j = i;
        while (j + 1 < pus.size() && pus[j + 1] == pus[j] + 1) ++j;
        if (i > 0) os << ',';
        os << pus[i];
        if (j > i) os << '-' << pus[j];
        i = j + 1;
    }
    return os.str();
}

Topology::Topology() : impl_(std::make_unique<Impl>())
{
    if (hwloc_topology_init(&impl_->topo) != 0) throw Error("hwloc_topology_init failed");
    // PCI devices and OS devices are filtered out by default: keep the important ones
    // (GPUs, NICs) so the GPUs and their NUMA locality are visible.
    hwloc_topology_set_io_types_filter(impl_->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(impl_->topo) != 0) {
        hwloc_topology_destroy(impl_->topo);
        throw Error(detail::concat("hwloc_topology_load failed: ", std::strerror(errno)));
    }
    hwloc_topology_t t = impl_->topo;
    info_.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
    info_.numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE));
    info_.pus = std::max(1, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU));
    const int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    info_.cores = cores >= 1 ? cores : info_.pus;  // some VMs report no core objects
    info_.memory_bytes = hwloc_get_root_obj(t)->total_memory;

    for (hwloc_obj_t pci = hwloc_get_next_pcidev(t, nullptr); pci != nullptr; pci = hwloc_get_next_pcidev(t, pci)) {
        if (!is_compute_gpu(pci)) continue;
        GpuInfo gpu;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                      pci->attr->pcidev.dev, pci->attr->pcidev.func);
        gpu.pci_bus = buf;
        std::snprintf(buf, sizeof buf, "%s %04x:%04x",
                      pci->attr->pcidev.vendor_id == 0x10de   ? "NVIDIA"
                      : pci->attr->pcidev.vendor_id == 0x1002 ? "AMD"
                                                              : "PCI",
                      pci->attr->pcidev.vendor_id, pci->attr->pcidev.device_id);
        gpu.name = buf;
        // Prefer an OS device name (e.g. "cuda0", "card1") where a plugin provides one.
        for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling)
            if (child->type == HWLOC_OBJ_OS_DEVICE && child->name != nullptr &&
                (child->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC || child->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU))
                gpu.name += std::string(" (") + child->name + ")";
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, pci);
        if (anc != nullptr && anc->nodeset != nullptr && !hwloc_bitmap_iszero(anc->nodeset)) {
            hwloc_obj_t node =
                hwloc_get_numanode_obj_by_os_index(t, static_cast<unsigned>(hwloc_bitmap_first(anc->nodeset)));
            if (node != nullptr && hwloc_bitmap_weight(anc->nodeset) == 1) gpu.numa_node = static_cast<int>(node->logical_index);
        }
        info_.gpus.push_back(gpu);
    }
}

Topology::~Topology() { hwloc_topology_destroy(impl_->topo); }

std::vector<unsigned> Topology::all_pus() const { return to_list(hwloc_topology_get_topology_cpuset(impl_->topo)); }

std::vector<std::vector<unsigned>> Topology::cores() const
{
    std::vector<std::vector<unsigned>> out;
    const int n = hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_CORE);
    const hwloc_obj_type_t type = n >= 1 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    const int count = hwloc_get_nbobjs_by_type(impl_->topo, type);
    for (int i = 0; i < count; ++i)
        out.push_back(to_list(hwloc_get_obj_by_type(impl_->topo, type, static_cast<unsigned>(i))->cpuset));
    return out;
}

int Topology::numa_node_of(unsigned pu) const
{
    const int nodes = hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < nodes; ++i) {
        hwloc_obj_t node = hwloc_get_obj_by_type(impl_->topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
        if (hwloc_bitmap_isset(node->cpuset, pu)) return i;
    }
    return 0;
}

int Topology::numa_nodes_spanned(const std::vector<unsigned>& pus) const
{
    Bitmap set;
    from_list(pus, set.b);
    int n = 0;
    const int nodes = hwloc_get_nbobjs_by_type(impl_->topo, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < nodes; ++i) {
        hwloc_obj_t node = hwloc_get_obj_by_type(impl_->topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
        if (hwloc_bitmap_intersects(node->cpuset, set.b)) ++n;
    }
    return std::max(n, pus.empty() ? 0 : 1);
}

std::vector<unsigned> Topology::process_binding() const
{
    Bitmap set;
    if (hwloc_get_cpubind(impl_->topo, set.b, HWLOC_CPUBIND_PROCESS) != 0)
        throw Error(detail::concat("hwloc_get_cpubind (process): ", std::strerror(errno)));
    return to_list(set.b);
}

std::vector<unsigned> Topology::thread_binding() const
{
    Bitmap set;
    if (hwloc_get_cpubind(impl_->topo, set.b, HWLOC_CPUBIND_THREAD) != 0)
        throw Error(detail::concat("hwloc_get_cpubind (thread): ", std::strerror(errno)));
    return to_list(set.b);
}

std::vector<unsigned> Topology::bind_thread(const std::vector<unsigned>& pus) const
{
    if (pus.empty()) throw Error("cannot bind a thread to an empty PU set");
    Bitmap set;
    from_list(pus, set.b);
    if (hwloc_set_cpubind(impl_->topo, set.b, HWLOC_CPUBIND_THREAD) != 0)
        throw Error(detail::concat("hwloc_set_cpubind (thread) to PUs ", format_pus(pus), ": ",
                                   std::strerror(errno)));
    return thread_binding();
}

}  // namespace topokpm::topology
