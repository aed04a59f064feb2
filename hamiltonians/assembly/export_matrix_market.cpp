#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "hamiltonians/model.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/files.hpp"

namespace topokpm::hamiltonians {

namespace {

IoError write_error(const std::string& path, int err)
{
    return IoError(detail::concat("{export_matrix} ", path, ": cannot write Matrix Market file (", std::strerror(err),
                                  ")"));
}

}  // namespace

void export_matrix_market(const RowSource& source, const std::string& path, const files::Guard* guard)
{
    const global_index n = source.num_rows();
    // The header needs the count before the entries; RowSource counts by generating rows.
    const global_index nnz = source.num_nonzeros(0, n);

    // Written under a temporary name and renamed when complete, like the result file: a
    // failed export (full disk) leaves whatever was at `path` as it was. The temporary is
    // marked as this program's by its second line, a comment (files::MarkerAt::comment_line),
    // so a killed export's is removed by the next run; the marker is blanked before the rename.
    const std::string temp = files::temporary_name(path);
    struct Cleanup {
        const std::string& name;
        bool armed = true;
        ~Cleanup() { if (armed) std::remove(name.c_str()); }
    } cleanup{temp};
    errno = 0;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(temp.c_str(), "wx"), &std::fclose);
    if (!file) throw write_error(path, errno ? errno : EIO);
    std::FILE* f = file.get();

    std::fprintf(f, "%%%%MatrixMarket matrix coordinate complex general\n%%%s", files::kTemporaryMarker);
    std::fprintf(f, "%" PRId64 " %" PRId64 " %" PRId64 "\n", std::int64_t(n), std::int64_t(n), std::int64_t(nnz));
    std::vector<global_index> cols(source.max_row_length());
    std::vector<complex_type> vals(source.max_row_length());
    for (global_index r = 0; r < n; ++r) {
        const int len = source.row(r, cols.data(), vals.data());
        // %.17g round-trips every double exactly; indices are 1-based.
        for (int k = 0; k < len; ++k)
            std::fprintf(f, "%" PRId64 " %" PRId64 " %.17g %.17g\n", std::int64_t(r + 1), std::int64_t(cols[k] + 1),
                         vals[k].real(), vals[k].imag());
        if (std::ferror(f)) throw write_error(path, errno ? errno : EIO);
    }
    std::FILE* raw = file.release();
    errno = 0;
    const bool failed = std::ferror(raw) != 0;
    if (std::fclose(raw) != 0 || failed) throw write_error(path, errno ? errno : EIO);
    if (const int err = files::mark_temporary(temp, false, files::MarkerAt::comment_line); err != 0)
        throw write_error(path, err);
    cleanup.armed = false;  // publish() removes the temporary file when it fails
    const files::Published p = files::publish(temp, path, guard);
    if (p.error == EEXIST && guard != nullptr)
        throw IoError(detail::concat("{export_matrix} '", path, "': another file was put there during the run (not ",
                                     guard->existing ? "the Matrix Market file checked at the start" : "there at the start",
                                     "); it is left alone, and the matrix is saved as '", p.kept.empty() ? temp : p.kept,
                                     "'"));
    if (p.error != 0) throw write_error(path, p.error);
}

}  // namespace topokpm::hamiltonians
