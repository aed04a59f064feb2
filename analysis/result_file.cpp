#include "analysis/result_file.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <climits>
#include <cstring>
#include <functional>
#include <numeric>
#include <type_traits>

#include "runtime/base/error.hpp"
#include "runtime/base/files.hpp"
#include "runtime/base/system.hpp"

namespace topokpm::analysis {

namespace {

/// Turns HDF5's automatic error printing off for the lifetime of the object and restores
/// whatever was installed before: we report HDF5 failures as IoError ourselves.
class SilenceHdf5Errors {
public:
    SilenceHdf5Errors()
    {
        H5Eget_auto2(H5E_DEFAULT, &old_func_, &old_data_);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~SilenceHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, old_func_, old_data_); }
    SilenceHdf5Errors(const SilenceHdf5Errors&) = delete;
    SilenceHdf5Errors& operator=(const SilenceHdf5Errors&) = delete;

private:
    H5E_auto2_t old_func_ = nullptr;
    void* old_data_ = nullptr;
};

/// The innermost message of HDF5's current error stack as one line: the system's reason
/// when HDF5 quotes an errno (a full disk, a quota, an I/O error), else the first line of
/// HDF5's text; "HDF5 error" when the stack is empty.
std::string hdf5_reason()
{
    std::string reason;
    H5Ewalk2(
        H5E_DEFAULT, H5E_WALK_UPWARD,
        [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
            if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(data) = err->desc;
            return 0;
        },
        &reason);
    H5Eclear2(H5E_DEFAULT);
    const std::size_t at = reason.find("errno = ");
    if (at != std::string::npos) {
        const int err = std::atoi(reason.c_str() + at + 8);
        if (err > 0) return std::strerror(err);
    }
    reason = reason.substr(0, reason.find_first_of("\r\n"));
    return reason.empty() ? std::string("HDF5 error") : reason;
}

/// "; 8.0 KiB free in /dir" for messages about writing `path`.
std::string free_space_note(const std::string& path)
{
    const std::int64_t free = files::free_bytes(path);
    if (free < 0) return "";
    const auto slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    return detail::concat("; ", format_bytes(static_cast<double>(free)), " free in ", dir);
}

[[noreturn]] void throw_hdf5(const std::string& path, const std::string& what)
{
    throw IoError(detail::concat("result file '", path, "': ", what, ": ", hdf5_reason()));
}

/// A failure while writing: what was being written, the system's reason and the room left.
[[noreturn]] void throw_hdf5_write(const std::string& path, const std::string& what)
{
    const std::string reason = hdf5_reason();
    throw IoError(detail::concat("cannot write '", path, "' (", what, "): ", reason, free_space_note(path),
                                 "; '", path, "' is left as it was"));
}

/// An HDF5 identifier closed by the matching H5?close on scope exit.
class Handle {
public:
    Handle() = default;
    Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    ~Handle() { reset(); }
    Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
    Handle& operator=(Handle&& other) noexcept
    {
        if (this != &other) {
            reset();
            id_ = other.id_;
            close_ = other.close_;
            other.id_ = -1;
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    hid_t get() const { return id_; }
    bool valid() const { return id_ >= 0; }
    /// Closes now and reports whether HDF5 succeeded (needed where closing flushes data).
    bool close()
    {
        if (id_ < 0) return true;
        const herr_t status = close_(id_);
        id_ = -1;
        return status >= 0;
    }
    void reset() { close(); }

private:
    hid_t id_ = -1;
    herr_t (*close_)(hid_t) = nullptr;
};

/// Splits "/a/b/c" (or "a/b/c") into {"a", "b", "c"}.
std::vector<std::string> split_path(const std::string& object)
{
    std::vector<std::string> parts;
    std::string current;
    for (char ch : object) {
        if (ch == '/') {
            if (!current.empty()) parts.push_back(current);
            current.clear();
        } else {
            current += ch;
        }
    }
    if (!current.empty()) parts.push_back(current);
    return parts;
}

/// Whether every link on the way to `object` exists (H5Lexists needs existing parents).
bool link_exists(hid_t file, const std::string& object)
{
    std::string prefix;
    for (const std::string& part : split_path(object)) {
        prefix += "/" + part;
        if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    }
    return true;
}

/// Throws IoError if a proper prefix of `object` exists but is not a group (e.g. a
/// dataset), which HDF5 would only report as "message type not found".
void require_parents_are_groups(hid_t file, const std::string& path, const std::string& object)
{
    const std::vector<std::string> parts = split_path(object);
    std::string prefix;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        prefix += "/" + parts[i];
        if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return;  // created with the parents
        const Handle obj(H5Oopen(file, prefix.c_str(), H5P_DEFAULT), H5Oclose);
        if (!obj.valid() || H5Iget_type(obj.get()) != H5I_GROUP)
            throw IoError(detail::concat("result file '", path, "': cannot create '", object, "': '",
                                         prefix, "' exists and is not a group"));
    }
}

Handle link_create_plist_with_parents()
{
    Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    if (!lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0) return Handle();
    return lcpl;
}

/// A variable-length UTF-8 string type: h5py reads it as str.
Handle utf8_string_type()
{
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!type.valid() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
        return Handle();
    return type;
}

std::uint64_t product(const std::vector<std::uint64_t>& dims)
{
    return std::accumulate(dims.begin(), dims.end(), std::uint64_t{1}, std::multiplies<>());
}

std::string temporary_path(const std::string& path) { return files::temporary_name(path); }

/// Creates the temporary `temp` of `path` (O_EXCL: an existing file of that name is not
/// ours) and checks that HDF5's first writes fit (posix_fallocate, ulimit -f); otherwise
/// removes it and throws the IoError of a failed write.
void create_reserved(const std::string& path, const std::string& temp)
{
    constexpr off_t kFirstWrites = off_t{8} << 10;  // user block, superblock, root group
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw IoError(detail::concat("cannot write output file '", path, "' (temporary '", temp, "'): ",
                                     std::strerror(errno)));
    rlimit limit {};
    int err = 0;
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        static_cast<rlim_t>(kFirstWrites) > limit.rlim_cur)
        err = EFBIG;
    else if ((err = ::posix_fallocate(fd, 0, kFirstWrites)) == EOPNOTSUPP || err == EINVAL)
        err = 0;  // no reservations on this file system
    ::close(fd);
    if (err == 0) return;
    std::remove(temp.c_str());
    throw IoError(detail::concat("cannot write '", path, "' (creating the file, ", format_bytes(double(kFirstWrites)),
                                 "): ", std::strerror(err), free_space_note(path), "; '", path, "' is left as it was"));
}

/// File creation properties of a temporary: a user block (bytes before HDF5's superblock
/// that HDF5 never touches) to hold files::kTemporaryMarker.
Handle marked_file_creation()
{
    Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
    static_assert(sizeof files::kTemporaryMarker <= files::kTemporaryMarkerBlock);
    if (fcpl.valid() && H5Pset_userblock(fcpl.get(), files::kTemporaryMarkerBlock) < 0) return Handle(-1, H5Pclose);
    return fcpl;
}

}  // namespace

void check_output_writable(const std::string& path, const std::string& option)
{
    const auto fail = [&](int err) {
        throw IoError(detail::concat(option, ": cannot write output file '", path, "': ",
                                     std::strerror(err)));
    };
    if (path.empty()) fail(ENOENT);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail(EISDIR);

    // Probe with a file next to the target: the result is written there (then renamed),
    // so this tests exactly the directory permission the run will need.
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::string probe = detail::concat(path, ".probe-", static_cast<long>(::getpid()), "-",
                                                 counter.fetch_add(1));
        const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == EEXIST) continue;  // not ours: leave it alone and pick another name
            fail(errno);
        }
        // Marked as ours (a stale probe of a killed run is removed by the next run); on a
        // full disk the marker may not fit, which this check does not judge.
        [[maybe_unused]] const ssize_t marked = ::write(fd, files::kTemporaryMarker, sizeof files::kTemporaryMarker - 1);
        ::close(fd);
        if (std::remove(probe.c_str()) != 0) fail(errno);
        return;
    }
    fail(EEXIST);
}

/// Rank 0's `attributes` on every rank of MPI_COMM_WORLD (collective), packed as records:
/// name, type index, value (numbers as their bytes, text with its length).
AttributeList broadcast_from_rank0(const AttributeList& attributes, int rank)
{
    static_assert(std::is_same_v<std::variant_alternative_t<3, decltype(Attribute::value)>, std::string>,
                  "the packing below follows the order double, int64, uint64, string");
    std::string packed;
    auto put = [&packed](const void* data, std::size_t bytes) { packed.append(static_cast<const char*>(data), bytes); };
    auto put_text = [&](const std::string& text) {
        const std::uint64_t n = text.size();
        put(&n, sizeof n);
        packed += text;
    };
    if (rank == 0)
        for (const Attribute& a : attributes) {
            put_text(a.name);
            const auto index = static_cast<std::uint8_t>(a.value.index());
            put(&index, 1);
            std::visit([&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, std::string>) put_text(v);
                else put(&v, sizeof v);
            }, a.value);
        }
    std::uint64_t bytes = packed.size();
    MPI_Bcast(&bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    packed.resize(bytes);
    MPI_Bcast(packed.data(), static_cast<int>(bytes), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) return attributes;
    AttributeList out;
    std::size_t at = 0;
    auto get = [&](void* dst, std::size_t n) {
        std::memcpy(dst, packed.data() + at, n);
        at += n;
    };
    auto get_text = [&] {
        std::uint64_t n = 0;
        get(&n, sizeof n);
        std::string text = packed.substr(at, n);
        at += n;
        return text;
    };
    while (at < packed.size()) {
        Attribute a;
        a.name = get_text();
        std::uint8_t index = 0;
        get(&index, 1);
        if (index == 0) { double v; get(&v, sizeof v); a.value = v; }
        else if (index == 1) { std::int64_t v; get(&v, sizeof v); a.value = v; }
        else if (index == 2) { std::uint64_t v; get(&v, sizeof v); a.value = v; }
        else a.value = get_text();
        out.push_back(std::move(a));
    }
    return out;
}

// ------------------------------------------------------------------------------------------

struct ResultWriter::Impl {
    std::string path;
    std::string temp_path;
    Handle file;
    bool committed = false;
    bool collective = false;  ///< MPI-IO on MPI_COMM_WORLD (every rank calls every method)
    int rank = 0;
    bool marked = false;      ///< the user block holds files::kTemporaryMarker

    /// Marks the new temporary as this program's (files::clean_stale_temporaries deletes
    /// only marked files). Best effort: on a full disk the marker may not fit, and the
    /// reservations report that; an unmarked temporary of a killed run is only left alone.
    void mark() { marked = files::mark_temporary(temp_path, true) == 0; }

    /// Before the rename: the complete file is a result, not a temporary any more.
    void unmark()
    {
        if (marked) files::mark_temporary(temp_path, false);
        marked = false;
    }

    /// Runs `write`; collective: agrees on its outcome, so every rank throws when one failed.
    template <typename F>
    void agreed(F&& write)
    {
        if (!collective) {
            write();
            return;
        }
        std::string error;
        try {
            write();
        } catch (const IoError& e) {
            error = e.what();
        }
        int size = 1;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        const int mine = error.empty() ? size : rank;
        int first = size;
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first == size) return;
        if (error.empty()) error = detail::concat("cannot write '", path, "': the write failed on rank ", first);
        throw IoError(error);
    }

    /// Closes a file that cannot be completed (a write failed: full disk, quota, I/O
    /// error) and deletes it. HDF5 flushes its cached metadata on close, and a failing
    /// metadata flush leaves a half-destroyed file object (HDF5 1.10: "slist already
    /// enabled" on every later flush) that HDF5's own clean-up, at exit or in MPI_Finalize,
    /// crashes on. So the file's descriptor is first pointed at an anonymous memory file
    /// (memfd: the flush writes the few KiB of metadata there), the close succeeds, and the
    /// temporary file on disk is removed.
    /// Reserves disk blocks for `bytes` more of the file plus what HDF5 may still write
    /// around them (twice its cached metadata and 64 KiB for its aggregators), before HDF5
    /// writes them. HDF5 cannot recover from a failed write (see abandon()), so a full disk,
    /// a quota or a file-size limit must show here, where nothing is lost yet. The file
    /// grows by the reservation; commit() truncates it to HDF5's real end. Throws IoError
    /// naming `what` after abandoning the file.
    void reserve(std::uint64_t bytes, const std::string& what)
    {
        if (collective) return;  // several writers: MPI-IO reports a full disk itself
        size_t max_size = 0, min_clean = 0, cached = 0;
        int entries = 0;
        if (H5Fget_mdc_size(file.get(), &max_size, &min_clean, &cached, &entries) < 0) cached = max_size;
        hsize_t end = 0;  // HDF5's extent of the file so far (its end of allocation or of writes)
        H5Fget_filesize(file.get(), &end);
        const std::uint64_t target =
            static_cast<std::uint64_t>(end) + bytes + 2 * static_cast<std::uint64_t>(cached) + (std::uint64_t{64} << 10);
        int err = 0;
        const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CLOEXEC);
        rlimit limit {};
        if (fd < 0) {
            err = errno;
        } else if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
                   target > limit.rlim_cur) {
            err = EFBIG;  // a file-size limit (ulimit -f): the write would fail there
        } else {
            err = ::posix_fallocate(fd, 0, static_cast<off_t>(target));
            if (err == EOPNOTSUPP || err == EINVAL) err = 0;  // no reservations on this file system
        }
        if (fd >= 0) ::close(fd);
        if (err == 0) return;
        abandon();
        throw IoError(detail::concat("cannot write '", path, "' (", what, ", ", format_bytes(double(bytes)), "): ",
                                     std::strerror(err), free_space_note(path), "; '", path, "' is left as it was"));
    }

    /// Points every descriptor of this process that is open on the temporary file at an
    /// anonymous memory file, so that what HDF5 still flushes on close succeeds (see above).
    /// The MPI-IO driver gives no access to its descriptors: they are found by their link
    /// in /proc/self/fd.
    void redirect_descriptors_to_memory() const
    {
        char wanted[PATH_MAX];
        if (::realpath(temp_path.c_str(), wanted) == nullptr) return;
        std::vector<int> fds;
        if (DIR* dir = ::opendir("/proc/self/fd")) {
            while (const dirent* e = ::readdir(dir)) {
                char link[300], target[PATH_MAX];
                std::snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
                const ssize_t n = ::readlink(link, target, sizeof target - 1);
                if (n <= 0) continue;
                target[n] = '\0';
                if (std::strcmp(target, wanted) == 0) fds.push_back(std::atoi(e->d_name));
            }
            ::closedir(dir);
        }
        for (const int fd : fds) {
            const int sink = ::memfd_create("topokpm-abandoned-file", MFD_CLOEXEC);
            if (sink < 0) return;
            ::dup2(sink, fd);
            ::close(sink);
        }
    }

    void abandon()
    {
        if (collective) {  // every rank is here (failures are agreed): close, rank 0 removes
            const SilenceHdf5Errors silence;
            redirect_descriptors_to_memory();
            file.close();
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) std::remove(temp_path.c_str());
            return;
        }
        if (!file.valid()) {
            std::remove(temp_path.c_str());
            return;
        }
        const SilenceHdf5Errors silence;
        void* handle = nullptr;
        if (H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle) >= 0 && handle != nullptr) {
            const int sink = ::memfd_create("topokpm-abandoned-file", MFD_CLOEXEC);
            if (sink >= 0) {
                ::dup2(sink, *static_cast<int*>(handle));
                ::close(sink);
            }
        }
        file.close();
        std::remove(temp_path.c_str());
    }

    /// Writes scalar `attributes` on the open group or dataset `object` (named `name` in
    /// messages), replacing any of the same name.
    void set_attributes(hid_t object, const std::string& name, const AttributeList& attributes)
    {
        const Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
        const Handle string_type = utf8_string_type();
        if (!scalar.valid() || !string_type.valid()) throw_hdf5(path, "cannot create attribute types");

        for (const Attribute& attribute : attributes) {
            const std::string where = detail::concat("attribute '", attribute.name, "' of '", name, "'");
            // Writing a name twice replaces the attribute (the later value wins).
            const htri_t exists = H5Aexists(object, attribute.name.c_str());
            if (exists < 0 || (exists > 0 && H5Adelete(object, attribute.name.c_str()) < 0))
                throw_hdf5(path, "cannot replace " + where);

            hid_t type = -1;
            const void* buffer = nullptr;
            const char* text = nullptr;
            std::visit(
                [&](const auto& value) {
                    using T = std::decay_t<decltype(value)>;
                    if constexpr (std::is_same_v<T, double>) {
                        type = H5T_NATIVE_DOUBLE;
                        buffer = &value;
                    } else if constexpr (std::is_same_v<T, std::int64_t>) {
                        type = H5T_NATIVE_INT64;
                        buffer = &value;
                    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
                        type = H5T_NATIVE_UINT64;
                        buffer = &value;
                    } else {
                        type = string_type.get();
                        text = value.c_str();
                        buffer = &text;  // a variable-length string is written as a char*
                    }
                },
                attribute.value);
            const Handle attr(
                H5Acreate2(object, attribute.name.c_str(), type, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                H5Aclose);
            if (!attr.valid()) throw_hdf5(path, "cannot create " + where);
            if (H5Awrite(attr.get(), type, buffer) < 0) throw_hdf5_write(path, "writing " + where);
        }
    }

    /// Stores `meaning` as the `unit` and `description` attributes of `object`; both must be
    /// given (a programming error otherwise).
    void describe(hid_t object, const std::string& name, const Meaning& meaning)
    {
        TOPOKPM_REQUIRE(!meaning.unit.empty() && !meaning.description.empty(), "'", name,
                        "' written without its unit or description");
        set_attributes(object, name, {{"unit", meaning.unit}, {"description", meaning.description}});
    }

    /// Opens `group`, creating it and its parents if needed.
    Handle group(const std::string& name)
    {
        if (split_path(name).empty()) return Handle(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
        if (link_exists(file.get(), name)) {
            Handle g(H5Gopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Gclose);
            if (!g.valid()) throw_hdf5(path, detail::concat("cannot open group '", name, "'"));
            return g;
        }
        require_parents_are_groups(file.get(), path, name);
        const Handle lcpl = link_create_plist_with_parents();
        Handle g(H5Gcreate2(file.get(), name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
        if (!lcpl.valid() || !g.valid()) throw_hdf5(path, detail::concat("cannot create group '", name, "'"));
        return g;
    }

    template <typename T>
    void write_dataset(const std::string& name, const Meaning& meaning, const std::vector<T>& data,
                       const std::vector<std::uint64_t>& dims, hid_t mem_type, hid_t file_type)
    {
        write_dataset(name, meaning, data.data(), data.size(), dims, mem_type, file_type);
    }

    template <typename T>
    void write_dataset(const std::string& name, const Meaning& meaning, const T* values, std::size_t count,
                       const std::vector<std::uint64_t>& dims, hid_t mem_type, hid_t file_type)
    {
        TOPOKPM_REQUIRE(!split_path(name).empty(), "dataset name '", name, "' is empty");
        TOPOKPM_REQUIRE(!meaning.unit.empty() && !meaning.description.empty(), "dataset '", name,
                        "' written without its unit or description");
        TOPOKPM_REQUIRE(!dims.empty() && product(dims) == count, "dataset '", name, "' of ",
                        count, " values cannot have the given ", dims.size(), " dimensions");
        const SilenceHdf5Errors silence;
        // Writing a name twice replaces the dataset (the later value wins); a group of that
        // name is never replaced, with everything below it, by accident.
        if (link_exists(file.get(), name)) {
            Handle existing(H5Oopen(file.get(), name.c_str(), H5P_DEFAULT), H5Oclose);
            if (!existing.valid() || H5Iget_type(existing.get()) != H5I_DATASET)
                throw IoError(detail::concat("result file '", path, "': cannot create dataset '", name,
                                             "': a group of that name exists"));
            existing.close();
            if (H5Ldelete(file.get(), name.c_str(), H5P_DEFAULT) < 0)
                throw_hdf5(path, detail::concat("cannot replace dataset '", name, "'"));
        }
        require_parents_are_groups(file.get(), path, name);
        reserve(count * sizeof(T), detail::concat("writing dataset '", name, "'"));
        std::vector<hsize_t> hdims(dims.begin(), dims.end());
        const Handle space(H5Screate_simple(static_cast<int>(hdims.size()), hdims.data(), nullptr),
                           H5Sclose);
        const Handle lcpl = link_create_plist_with_parents();
        const Handle dset(space.valid() && lcpl.valid()
                              ? H5Dcreate2(file.get(), name.c_str(), file_type, space.get(), lcpl.get(),
                                           H5P_DEFAULT, H5P_DEFAULT)
                              : -1,
                          H5Dclose);
        if (!dset.valid()) throw_hdf5_write(path, detail::concat("creating dataset '", name, "'"));
        describe(dset.get(), name, meaning);
        if (!collective) {
            if (count > 0 && H5Dwrite(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
                throw_hdf5_write(path, detail::concat("writing dataset '", name, "'"));
            return;
        }
        // Collective: rank 0's values, the others select nothing (every rank takes part).
        write_selection(dset, name, mem_type, values, rank == 0 ? std::vector<RowRun>{{0, dims[0]}} : std::vector<RowRun>{},
                        dims);
    }

    /// Writes `runs` (rows of the first dimension of `dims`) of dataset `dset` from
    /// `values` (the runs' rows in list order); collective transfer in collective mode.
    template <typename T>
    void write_selection(const Handle& dset, const std::string& name, hid_t mem_type, const T* values,
                         const std::vector<RowRun>& runs, const std::vector<std::uint64_t>& dims)
    {
        std::vector<hsize_t> hdims(dims.begin(), dims.end());
        const hsize_t row_len = static_cast<hsize_t>(product(dims) / std::max<std::uint64_t>(dims[0], 1));
        const Handle file_space(H5Dget_space(dset.get()), H5Sclose);
        bool ok = file_space.valid() && H5Sselect_none(file_space.get()) >= 0;
        hsize_t local_rows = 0;
        for (const RowRun& run : runs) {
            if (run.count == 0) continue;
            std::vector<hsize_t> start(hdims.size(), 0), block(hdims);
            start[0] = run.begin;
            block[0] = run.count;
            std::vector<hsize_t> one(hdims.size(), 1);
            ok = ok && H5Sselect_hyperslab(file_space.get(), H5S_SELECT_OR, start.data(), one.data(), one.data(),
                                           block.data()) >= 0;
            local_rows += run.count;
        }
        const hsize_t local_count = local_rows * row_len;
        const Handle mem_space(H5Screate_simple(1, &local_count, nullptr), H5Sclose);
        if (ok && local_count == 0) ok = H5Sselect_none(mem_space.get()) >= 0;
        const Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
        if (ok && collective) ok = H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE) >= 0;
        if (!ok || !mem_space.valid() || !dxpl.valid() ||
            H5Dwrite(dset.get(), mem_type, mem_space.get(), file_space.get(), dxpl.get(), values) < 0)
            throw_hdf5_write(path, detail::concat("writing dataset '", name, "'"));
    }
};

ResultWriter::ResultWriter(const std::string& path) : ResultWriter(path, false) {}

ResultWriter::ResultWriter(const std::string& path, bool collective) : impl_(std::make_unique<Impl>())
{
    if (!collective) {
        impl_->path = path;
        impl_->temp_path = temporary_path(path);
        const SilenceHdf5Errors silence;
        // The temporary is created here, exclusively (never over a file that is not ours),
        // with room for HDF5's first writes: HDF5 cannot recover from a failed write in
        // H5Fcreate (its file stays half-open, and closing the library loops at exit), so a
        // full disk or a file-size limit must show before it runs.
        create_reserved(path, impl_->temp_path);
        // The default (sec2) file driver: one process writes, no MPI-IO.
        const Handle fcpl = marked_file_creation();
        if (fcpl.valid())
            impl_->file = Handle(H5Fcreate(impl_->temp_path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT), H5Fclose);
        if (!impl_->file.valid()) {
            const std::string reason = hdf5_reason();
            std::remove(impl_->temp_path.c_str());
            throw IoError(detail::concat("cannot write output file '", path, "' (temporary '",
                                         impl_->temp_path, "'): ", reason));
        }
        impl_->mark();
        return;
    }
    impl_->path = path;
    impl_->collective = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &impl_->rank);
    // One temporary name for all ranks: rank 0's.
    char name[4096] = {};
    if (impl_->rank == 0) std::snprintf(name, sizeof name, "%s", temporary_path(path).c_str());
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
    impl_->temp_path = name;
    // Rank 0 creates the temporary (exclusively, HDF5's first writes reserved), then every
    // rank opens it; should that fail, rank 0 removes what it created.
    impl_->agreed([&] {
        if (impl_->rank == 0) create_reserved(path, impl_->temp_path);
    });
    try {
        impl_->agreed([&] {
            const SilenceHdf5Errors silence;
            const Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
            const Handle fcpl = marked_file_creation();
            if (fapl.valid() && fcpl.valid() && H5Pset_fapl_mpio(fapl.get(), MPI_COMM_WORLD, MPI_INFO_NULL) >= 0)
                impl_->file = Handle(H5Fcreate(impl_->temp_path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose);
            if (!impl_->file.valid())
                throw IoError(detail::concat("cannot write output file '", path, "' (temporary '", impl_->temp_path,
                                             "', MPI-IO): ", hdf5_reason()));
            if (impl_->rank == 0) impl_->mark();
        });
    } catch (const IoError&) {
        if (impl_->rank == 0) std::remove(impl_->temp_path.c_str());
        throw;
    }
}

ResultWriter::~ResultWriter()
{
    if (!impl_->committed) impl_->abandon();
}

void ResultWriter::write_attributes(const std::string& group, const Meaning& meaning, const AttributeList& given)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    TOPOKPM_REQUIRE(!meaning.unit.empty() && !meaning.description.empty(), "group '", group,
                    "' written without its unit or description");
    // Collective: every rank writes rank 0's list (HDF5 needs the same metadata calls on
    // every rank; times and gathered texts differ between ranks).
    const AttributeList attributes = impl_->collective ? broadcast_from_rank0(given, impl_->rank) : given;
    impl_->agreed([&] {
    const SilenceHdf5Errors silence;
    std::uint64_t text_bytes = 0;
    for (const Attribute& attribute : attributes)
        if (const auto* text = std::get_if<std::string>(&attribute.value)) text_bytes += text->size();
    impl_->reserve(text_bytes, detail::concat("writing the attributes of '", group, "'"));
    const Handle g = impl_->group(group);
    impl_->set_attributes(g.get(), group, attributes);
    impl_->describe(g.get(), group, meaning);
    });
}

void ResultWriter::write_doubles(const std::string& dataset, const Meaning& meaning,
                                 const std::vector<double>& data,
                                 const std::vector<std::uint64_t>& dims)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    impl_->agreed([&] {
    impl_->write_dataset(dataset, meaning, data, dims, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE);
    });
}

void ResultWriter::write_doubles(const std::string& dataset, const Meaning& meaning,
                                 const double* data, std::size_t count,
                                 const std::vector<std::uint64_t>& dims)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    impl_->agreed([&] {
    impl_->write_dataset(dataset, meaning, data, count, dims, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE);
    });
}

void ResultWriter::write_rows(const std::string& dataset, const Meaning& meaning,
                                 const double* local, std::size_t count,
                              const std::vector<RowRun>& runs, const std::vector<std::uint64_t>& dims)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    TOPOKPM_REQUIRE(!dims.empty(), "dataset '", dataset, "' needs dimensions");
    const std::uint64_t row_len = product(dims) / std::max<std::uint64_t>(dims[0], 1);
    std::uint64_t rows = 0, end = 0;
    for (const RowRun& run : runs) {
        // HDF5 maps memory onto a selection in increasing file order: runs must be sorted.
        if (run.begin > dims[0] || run.count > dims[0] - run.begin || run.begin < end)
            throw DimensionMismatch(detail::concat("dataset '", dataset, "': rows ", run.begin, " + ", run.count,
                                                   " leave its ", dims[0], " rows or are not after row ", end));
        rows += run.count;
        end = run.begin + run.count;
    }
    if (rows * row_len != count)
        throw DimensionMismatch(detail::concat("dataset '", dataset, "': ", count, " local values, the runs hold ",
                                               rows, " rows of ", row_len));
    impl_->agreed([&] {
        const SilenceHdf5Errors silence;
        // The dataset is created by write_dataset's path with no data, then each rank's rows.
        TOPOKPM_REQUIRE(!split_path(dataset).empty(), "dataset name '", dataset, "' is empty");
        TOPOKPM_REQUIRE(!link_exists(impl_->file.get(), dataset), "dataset '", dataset, "' written twice");
        TOPOKPM_REQUIRE(!meaning.unit.empty() && !meaning.description.empty(), "dataset '", dataset,
                        "' written without its unit or description");
        require_parents_are_groups(impl_->file.get(), impl_->path, dataset);
        impl_->reserve(count * sizeof(double), detail::concat("writing dataset '", dataset, "'"));
        std::vector<hsize_t> hdims(dims.begin(), dims.end());
        const Handle space(H5Screate_simple(static_cast<int>(hdims.size()), hdims.data(), nullptr), H5Sclose);
        const Handle lcpl = link_create_plist_with_parents();
        const Handle dset(space.valid() && lcpl.valid()
                              ? H5Dcreate2(impl_->file.get(), dataset.c_str(), H5T_IEEE_F64LE, space.get(), lcpl.get(),
                                           H5P_DEFAULT, H5P_DEFAULT)
                              : -1,
                          H5Dclose);
        if (!dset.valid()) throw_hdf5_write(impl_->path, detail::concat("creating dataset '", dataset, "'"));
        impl_->describe(dset.get(), dataset, meaning);
        impl_->write_selection(dset, dataset, H5T_NATIVE_DOUBLE, local, runs, dims);
    });
}

void ResultWriter::write_complex(const std::string& dataset, const Meaning& meaning,
                                 const std::complex<double>* data, std::size_t count,
                                 const std::vector<std::uint64_t>& dims)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    impl_->agreed([&] {
    const SilenceHdf5Errors silence;
    // std::complex<double> is laid out as double[2] (re, im): the compound maps onto it.
    auto compound = [](hid_t member) {
        Handle type(H5Tcreate(H5T_COMPOUND, 2 * sizeof(double)), H5Tclose);
        if (type.valid() && (H5Tinsert(type.get(), "r", 0, member) < 0 || H5Tinsert(type.get(), "i", sizeof(double), member) < 0))
            return Handle(-1, H5Tclose);
        return type;
    };
    const Handle mem_type = compound(H5T_NATIVE_DOUBLE), file_type = compound(H5T_IEEE_F64LE);
    if (!mem_type.valid() || !file_type.valid()) throw_hdf5(impl_->path, "cannot create the complex128 type");
    impl_->write_dataset(dataset, meaning, data, count, dims, mem_type.get(), file_type.get());
    });
}

void ResultWriter::write_int64(const std::string& dataset, const Meaning& meaning,
                                 const std::vector<std::int64_t>& data,
                               const std::vector<std::uint64_t>& dims)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    impl_->agreed([&] {
    impl_->write_dataset(dataset, meaning, data, dims, H5T_NATIVE_INT64, H5T_STD_I64LE);
    });
}

void ResultWriter::write_uint64(const std::string& dataset, const Meaning& meaning,
                                 const std::vector<std::uint64_t>& data,
                                const std::vector<std::uint64_t>& dims)
{
    TOPOKPM_REQUIRE(!impl_->committed, "write after commit of '", impl_->path, "'");
    impl_->agreed([&] {
    impl_->write_dataset(dataset, meaning, data, dims, H5T_NATIVE_UINT64, H5T_STD_U64LE);
    });
}

namespace {

/// files::publish, its failure an IoError naming the path, the step and the reason.
void publish_or_throw(const std::string& temp, const std::string& path, const files::Guard* guard)
{
    const files::Published p = files::publish(temp, path, guard);
    if (p.error == 0) return;
    if (p.error == EEXIST && guard != nullptr)
        throw IoError(detail::concat("cannot write '", path, "': another file was put there during the run (not ",
                                     guard->existing ? "the topokpm result checked at the start" : "there at the start",
                                     "); it is left alone, and the result is saved as '",
                                     p.kept.empty() ? temp : p.kept, "'"));
    throw IoError(detail::concat("cannot write '", path, "' (", p.step, "): ", std::strerror(p.error),
                                 free_space_note(path), "; '", path, "' is left as it was"));
}

}  // namespace

void ResultWriter::commit(const files::Guard* guard)
{
    TOPOKPM_REQUIRE(!impl_->committed, "second commit of '", impl_->path, "'");
    if (impl_->collective) {
        impl_->agreed([&] {
            const SilenceHdf5Errors silence;
            if (!impl_->file.close()) throw_hdf5_write(impl_->path, "closing the file");
        });
        impl_->agreed([&] {  // every rank has closed the file: rank 0 renames it into place
            if (impl_->rank != 0) return;
            impl_->unmark();
            publish_or_throw(impl_->temp_path, impl_->path, guard);
        });
        impl_->committed = true;
        return;
    }
    {
        // The metadata still in HDF5's cache is written by the flush, into reserved space;
        // then the file is cut back to HDF5's real end (the reservations grew it).
        const SilenceHdf5Errors silence;
        impl_->reserve(0, "writing its metadata");
        hsize_t size = 0;
        if (H5Fflush(impl_->file.get(), H5F_SCOPE_LOCAL) < 0 || H5Fget_filesize(impl_->file.get(), &size) < 0)
            throw_hdf5_write(impl_->path, "flushing the file");
        if (!impl_->file.close()) throw_hdf5_write(impl_->path, "closing the file");
        if (::truncate(impl_->temp_path.c_str(), static_cast<off_t>(size)) != 0)
            throw IoError(detail::concat("cannot write '", impl_->path, "' (trimming '", impl_->temp_path,
                                         "'): ", std::strerror(errno)));
    }
    impl_->unmark();
    publish_or_throw(impl_->temp_path, impl_->path, guard);
    impl_->committed = true;
}

const std::string& ResultWriter::path() const { return impl_->path; }

// ------------------------------------------------------------------------------------------

struct ResultReader::Impl {
    std::string path;
    std::uint64_t file_bytes = 0;
    Handle file;

    [[noreturn]] void fail(const std::string& what) const
    {
        throw IoError(detail::concat("result file '", path, "': ", what));
    }

    /// Like link_exists, but every link on the way must be a hard link: a soft or external
    /// link (which could lead into another file, a FIFO or a device) is an IoError.
    bool plain_link_exists(const std::string& object) const
    {
        std::string prefix;
        for (const std::string& part : split_path(object)) {
            prefix += "/" + part;
            if (H5Lexists(file.get(), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
            H5L_info_t info{};
            if (H5Lget_info(file.get(), prefix.c_str(), &info, H5P_DEFAULT) < 0)
                throw_hdf5(path, detail::concat("cannot inspect '", prefix, "'"));
            if (info.type != H5L_TYPE_HARD)
                fail(detail::concat("'", prefix, "' is a soft or external link (only plain objects are read)"));
        }
        return true;
    }

    Handle dataset(const std::string& name) const
    {
        if (!plain_link_exists(name)) fail(detail::concat("no dataset '", name, "'"));
        Handle d(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!d.valid()) throw_hdf5(path, detail::concat("cannot open dataset '", name, "'"));
        return d;
    }

    /// The dimensions of dataset `d` (empty for a scalar); IoError for a null dataspace.
    std::vector<std::uint64_t> dims_of(hid_t d, const std::string& name) const
    {
        const Handle space(H5Dget_space(d), H5Sclose);
        const H5S_class_t kind = space.valid() ? H5Sget_simple_extent_type(space.get()) : H5S_NO_CLASS;
        const int rank = kind == H5S_SIMPLE || kind == H5S_SCALAR ? H5Sget_simple_extent_ndims(space.get()) : -1;
        if (rank < 0 || rank > H5S_MAX_RANK)
            fail(detail::concat("dataset '", name, "' has no readable shape"));
        std::vector<hsize_t> hdims(static_cast<std::size_t>(rank));
        if (rank > 0 && H5Sget_simple_extent_dims(space.get(), hdims.data(), nullptr) < 0)
            throw_hdf5(path, detail::concat("cannot read the shape of dataset '", name, "'"));
        return std::vector<std::uint64_t>(hdims.begin(), hdims.end());
    }

    static std::string shape_text(const std::vector<std::uint64_t>& dims)
    {
        std::string text = "[";
        for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
        return text + "]";
    }

    /// Opens dataset `name`, checks its type class (and, for integers, the signedness of
    /// `mem_type`), its shape against `expected` (when given) and that the values its shape
    /// claims are stored in the file; returns the number of values. Nothing is read.
    std::uint64_t check_dataset(const Handle& d, const std::string& name, hid_t mem_type, H5T_class_t expected_class,
                                const char* expected, std::size_t value_bytes,
                                const std::vector<std::uint64_t>* expected_dims,
                                std::vector<std::uint64_t>& dims) const
    {
        const Handle type(H5Dget_type(d.get()), H5Tclose);
        if (!type.valid() || H5Tget_class(type.get()) != expected_class ||
            (expected_class == H5T_INTEGER && H5Tget_sign(type.get()) != H5Tget_sign(mem_type)))
            fail(detail::concat("dataset '", name, "' is not ", expected));
        dims = dims_of(d.get(), name);
        if (expected_dims != nullptr && dims != *expected_dims)
            fail(detail::concat("dataset '", name, "' has shape ", shape_text(dims), ", expected ",
                                shape_text(*expected_dims)));
        std::uint64_t count = 1;
        for (const std::uint64_t n : dims)
            if (__builtin_mul_overflow(count, n, &count)) count = UINT64_MAX;
        const std::size_t stored_value_bytes = H5Tget_size(type.get());
        std::uint64_t claimed = 0, in_memory = 0;
        const bool overflow = __builtin_mul_overflow(count, std::uint64_t(stored_value_bytes), &claimed) ||
                              __builtin_mul_overflow(count, std::uint64_t(value_bytes), &in_memory) ||
                              in_memory > std::uint64_t(PTRDIFF_MAX);
        // Fill values of unwritten chunks and compressed data are not read: the values
        // a shape claims must be stored, so a small file cannot make us allocate much.
        const std::uint64_t stored = count > 0 && !overflow ? H5Dget_storage_size(d.get()) : 0;
        if (overflow || stored_value_bytes == 0 || (count > 0 && (stored < claimed || stored > file_bytes)))
            fail(detail::concat("dataset '", name, "' of shape ", shape_text(dims),
                                " does not store its values in the file (", file_bytes, " bytes)"));
        return count;
    }

    /// Reads a whole dataset (see check_dataset).
    template <typename T>
    std::vector<T> read_dataset(const std::string& name, hid_t mem_type, H5T_class_t expected_class,
                                const char* expected, const std::vector<std::uint64_t>* expected_dims,
                                std::vector<std::uint64_t>* dims_out) const
    {
        const SilenceHdf5Errors silence;
        const Handle d = dataset(name);
        std::vector<std::uint64_t> dims;
        const std::uint64_t count =
            check_dataset(d, name, mem_type, expected_class, expected, sizeof(T), expected_dims, dims);
        std::vector<T> data(count);
        if (count > 0 && H5Dread(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
            throw_hdf5(path, detail::concat("cannot read dataset '", name, "'"));
        if (dims_out != nullptr) *dims_out = std::move(dims);
        return data;
    }

    Handle attribute(const std::string& object, const std::string& name) const
    {
        const std::string where = detail::concat("attribute '", name, "' of '", object, "'");
        const std::string at = split_path(object).empty() ? std::string("/") : object;
        if (!plain_link_exists(object) || H5Aexists_by_name(file.get(), at.c_str(), name.c_str(), H5P_DEFAULT) <= 0)
            fail("no " + where);
        Handle a(H5Aopen_by_name(file.get(), at.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
        if (!a.valid()) throw_hdf5(path, "cannot open " + where);
        return a;
    }

    /// Whether attribute `a` holds exactly one element.
    static bool is_single(hid_t a)
    {
        const Handle space(H5Aget_space(a), H5Sclose);
        return space.valid() && H5Sget_simple_extent_npoints(space.get()) == 1;
    }

    /// Reads a numeric scalar attribute of class `expected_class` (and sign of `mem_type`).
    template <typename T>
    T read_scalar(const std::string& object, const std::string& name, hid_t mem_type,
                  H5T_class_t expected_class, const char* expected) const
    {
        const SilenceHdf5Errors silence;
        const Handle a = attribute(object, name);
        const Handle type(H5Aget_type(a.get()), H5Tclose);
        if (!type.valid() || H5Tget_class(type.get()) != expected_class ||
            (expected_class == H5T_INTEGER && H5Tget_sign(type.get()) != H5Tget_sign(mem_type)) ||
            !is_single(a.get()))
            fail(detail::concat("attribute '", name, "' of '", object, "' is not a scalar ", expected));
        T value{};
        if (H5Aread(a.get(), mem_type, &value) < 0)
            throw_hdf5(path, detail::concat("cannot read attribute '", name, "' of '", object, "'"));
        return value;
    }
};

ResultReader::ResultReader(const std::string& path) : impl_(std::make_unique<Impl>())
{
    impl_->path = path;
    // stat() first: HDF5 would block on a FIFO and read a device or a directory's error.
    const auto refuse = [&](const std::string& why) {
        throw IoError(detail::concat("cannot read result file '", path, "': ", why));
    };
    struct stat st {};
    if (path.empty()) refuse(std::strerror(ENOENT));
    if (::stat(path.c_str(), &st) != 0) refuse(std::strerror(errno));
    if (S_ISDIR(st.st_mode)) refuse(std::strerror(EISDIR));
    if (!S_ISREG(st.st_mode)) refuse("not a regular file (a FIFO, socket or device)");
    if (::access(path.c_str(), R_OK) != 0) refuse(std::strerror(errno));
    impl_->file_bytes = static_cast<std::uint64_t>(st.st_size);
    const SilenceHdf5Errors silence;
    impl_->file = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!impl_->file.valid()) refuse(hdf5_reason());
}

ResultReader::~ResultReader() = default;

bool ResultReader::exists(const std::string& object) const
{
    const SilenceHdf5Errors silence;
    return impl_->plain_link_exists(object);
}

std::vector<std::uint64_t> ResultReader::shape(const std::string& dataset) const
{
    const SilenceHdf5Errors silence;
    const Handle d = impl_->dataset(dataset);
    return impl_->dims_of(d.get(), dataset);
}

std::vector<double> ResultReader::read_doubles(const std::string& dataset,
                                               std::vector<std::uint64_t>* dims) const
{
    return impl_->read_dataset<double>(dataset, H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point", nullptr, dims);
}

std::vector<double> ResultReader::read_doubles(const std::string& dataset,
                                               const std::vector<std::uint64_t>& expected_dims) const
{
    return impl_->read_dataset<double>(dataset, H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point", &expected_dims,
                                       nullptr);
}

void ResultReader::read_doubles(const std::string& dataset, const std::vector<std::uint64_t>& expected_dims,
                                double* out, std::size_t count) const
{
    TOPOKPM_REQUIRE(product(expected_dims) == count, "dataset '", dataset, "': ", count,
                    " values cannot have the given ", expected_dims.size(), " dimensions");
    const SilenceHdf5Errors silence;
    const Handle d = impl_->dataset(dataset);
    std::vector<std::uint64_t> dims;
    impl_->check_dataset(d, dataset, H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point", sizeof(double),
                         &expected_dims, dims);
    if (count > 0 && H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
        throw_hdf5(impl_->path, detail::concat("cannot read dataset '", dataset, "'"));
}

void ResultReader::read_rows(const std::string& dataset, const std::vector<std::uint64_t>& expected_dims,
                             const std::vector<RowRun>& runs, double* out, std::size_t count) const
{
    TOPOKPM_REQUIRE(!expected_dims.empty(), "dataset '", dataset, "': no dimensions given");
    const std::uint64_t row_len = product(expected_dims) / std::max<std::uint64_t>(expected_dims[0], 1);
    std::uint64_t rows = 0, end = 0;
    for (const RowRun& run : runs) {
        if (run.begin > expected_dims[0] || run.count > expected_dims[0] - run.begin || run.begin < end)
            impl_->fail(detail::concat("dataset '", dataset, "': rows ", run.begin, " + ", run.count, " leave its ",
                                       expected_dims[0], " rows or are not after row ", end));
        rows += run.count;
        end = run.begin + run.count;
    }
    if (rows * row_len != count)
        throw DimensionMismatch(detail::concat("dataset '", dataset, "': ", count, " values asked, the runs hold ",
                                               rows, " rows of ", row_len));
    const SilenceHdf5Errors silence;
    const Handle d = impl_->dataset(dataset);
    std::vector<std::uint64_t> dims;
    impl_->check_dataset(d, dataset, H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point", sizeof(double), &expected_dims,
                         dims);
    if (count == 0) return;
    std::vector<hsize_t> hdims(dims.begin(), dims.end());
    const Handle file_space(H5Dget_space(d.get()), H5Sclose);
    bool ok = file_space.valid() && H5Sselect_none(file_space.get()) >= 0;
    for (const RowRun& run : runs) {
        if (run.count == 0) continue;
        std::vector<hsize_t> start(hdims.size(), 0), block(hdims), one(hdims.size(), 1);
        start[0] = run.begin;
        block[0] = run.count;
        ok = ok && H5Sselect_hyperslab(file_space.get(), H5S_SELECT_OR, start.data(), one.data(), one.data(),
                                       block.data()) >= 0;
    }
    const hsize_t n = count;
    const Handle mem_space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    if (!ok || !mem_space.valid() ||
        H5Dread(d.get(), H5T_NATIVE_DOUBLE, mem_space.get(), file_space.get(), H5P_DEFAULT, out) < 0)
        throw_hdf5(impl_->path, detail::concat("cannot read rows of dataset '", dataset, "'"));
}

std::vector<std::int64_t> ResultReader::read_int64(const std::string& dataset) const
{
    return impl_->read_dataset<std::int64_t>(dataset, H5T_NATIVE_INT64, H5T_INTEGER, "signed integer",
                                             nullptr, nullptr);
}

std::vector<std::uint64_t> ResultReader::read_uint64(const std::string& dataset) const
{
    return impl_->read_dataset<std::uint64_t>(dataset, H5T_NATIVE_UINT64, H5T_INTEGER, "unsigned integer",
                                              nullptr, nullptr);
}

double ResultReader::read_double_attribute(const std::string& object, const std::string& name) const
{
    return impl_->read_scalar<double>(object, name, H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point");
}

std::int64_t ResultReader::read_int64_attribute(const std::string& object, const std::string& name) const
{
    return impl_->read_scalar<std::int64_t>(object, name, H5T_NATIVE_INT64, H5T_INTEGER,
                                            "signed integer");
}

std::uint64_t ResultReader::read_uint64_attribute(const std::string& object,
                                                  const std::string& name) const
{
    return impl_->read_scalar<std::uint64_t>(object, name, H5T_NATIVE_UINT64, H5T_INTEGER,
                                             "unsigned integer");
}

std::string ResultReader::read_string_attribute(const std::string& object, const std::string& name) const
{
    const SilenceHdf5Errors silence;
    const Handle a = impl_->attribute(object, name);
    const Handle type(H5Aget_type(a.get()), H5Tclose);
    const std::string where = detail::concat("attribute '", name, "' of '", object, "'");
    if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING || !Impl::is_single(a.get()))
        impl_->fail(where + " is not a scalar string");

    const htri_t variable = H5Tis_variable_str(type.get());
    if (variable < 0) throw_hdf5(impl_->path, "cannot inspect " + where);
    if (variable > 0) {
        // Read in the stored character set; HDF5 allocates the text, we free it with its allocator.
        char* text = nullptr;
        if (H5Aread(a.get(), type.get(), &text) < 0) throw_hdf5(impl_->path, "cannot read " + where);
        const std::size_t length = text != nullptr ? std::strlen(text) : 0;
        std::string value = length <= kMaxStringBytes ? std::string(text, length) : std::string();
        H5free_memory(text);
        if (length > kMaxStringBytes)
            impl_->fail(detail::concat(where, " is longer than ", kMaxStringBytes, " bytes"));
        return value;
    }
    // Fixed length (other writers): the text may be null-padded or space-padded.
    const std::size_t size = H5Tget_size(type.get());
    if (size > kMaxStringBytes)
        impl_->fail(detail::concat(where, " claims ", size, " bytes, more than ", kMaxStringBytes));
    std::string value(size, '\0');
    if (size > 0 && H5Aread(a.get(), type.get(), value.data()) < 0)
        throw_hdf5(impl_->path, "cannot read " + where);
    const H5T_str_t pad = H5Tget_strpad(type.get());
    if (pad == H5T_STR_SPACEPAD) {
        value.erase(value.find_last_not_of(' ') + 1);
    } else {
        const std::size_t end = value.find('\0');
        if (end != std::string::npos) value.resize(end);
    }
    return value;
}

}  // namespace topokpm::analysis
