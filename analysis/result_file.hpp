#pragma once
/// @file result_file.hpp
/// The HDF5 result file of models.md §5. Only this folder talks to HDF5.
///
/// Writing is atomic: everything goes to "<path>.tmp-<pid>-<host>" (created exclusively,
/// never over an existing file, its HDF5 user block holding files::kTemporaryMarker until
/// commit) and commit() renames it to <path>, so a failed run never leaves a partial (or
/// half-overwritten) result file.

#include <cstddef>
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "numerics/base/attribute.hpp"
#include "runtime/base/files.hpp"

namespace topokpm::analysis {

/// A run of consecutive rows [begin, begin + count) of a dataset's first dimension (the
/// global canonical row order): a rank's share of a vector is a list of them, its local
/// rows being the runs' rows in list order (one run for the 1-D row split). Lists are in
/// increasing row order without overlaps (HDF5 maps memory onto a selection in file order):
/// a decomposition whose local order differs permutes its rows before and after the I/O.
struct RowRun {
    std::uint64_t begin = 0;
    std::uint64_t count = 0;
};

/// Throws IoError "<option>: cannot write output file '<path>': <reason>" if a file cannot
/// be created next to `path` (directory missing or not writable, or `path` is a
/// directory). Leaves nothing behind. Called before a run starts, so a long run never
/// ends on an unwritable output. `option` names the command-line option that gave `path`.
void check_output_writable(const std::string& path, const std::string& option = "{output}");

/// What a group or dataset of a result holds, stored with it as the string attributes
/// `unit` (e.g. "t" for energies, "1/t" for a density per unit energy, "1" for a
/// dimensionless number or a count, "none" for text or labels; docs/format.md) and
/// `description` (one sentence). Both must be non-empty.
struct Meaning {
    std::string unit;
    std::string description;
};

class ResultWriter {
public:
    /// Creates the temporary file "<path>.tmp-<pid>-<host>" next to `path` (one process,
    /// default file driver), exclusively and with room for HDF5's first writes reserved;
    /// throws IoError naming `path` and the reason (a full disk or ulimit -f as for any
    /// write, nothing left behind; also when a file of that name exists: not ours).
    explicit ResultWriter(const std::string& path);
    /// Collective (`collective` true, MPI initialised): every rank of MPI_COMM_WORLD opens
    /// the same temporary file "<path>.tmp-<pid of rank 0>-<host>" through MPI-IO (parallel HDF5)
    /// and must make every call below in the same order with the same names and shapes;
    /// the data of write_rows is each rank's own rows, the dataset writes store rank 0's
    /// values, and write_attributes writes rank 0's list on every rank (broadcast: the
    /// ranks' lists may differ, e.g. in times); commit() renames on rank 0. A failure on any rank is
    /// agreed: every rank throws IoError (the failing rank's reason, or "on rank R" on the
    /// others), so no rank is left in a collective. No disk reservation is made (the
    /// blocks are written by several processes); a full disk is reported by MPI-IO.
    ResultWriter(const std::string& path, bool collective);
    ~ResultWriter();  ///< removes the temporary file unless commit() succeeded
    ResultWriter(const ResultWriter&) = delete;
    ResultWriter& operator=(const ResultWriter&) = delete;

    /// Creates `group` (and parents) if needed and writes scalar attributes on it ("/" is
    /// the root), with `meaning` as its `unit` and `description` (every call names them, so
    /// no group of attributes goes without; a later call replaces them). Types: double ->
    /// float64, int64 -> int64, uint64 -> uint64, string -> variable-length UTF-8 (h5py
    /// reads str). An existing attribute of the same name is
    /// replaced. Throws IoError (e.g. a parent is a dataset).
    void write_attributes(const std::string& group, const Meaning& meaning, const AttributeList& attributes);

    /// Every dataset write takes the dataset's Meaning and stores it as its `unit` and
    /// `description` attributes (an empty one fails the internal check and nothing is
    /// written): no dataset is written without them. Parent groups a write creates get
    /// theirs from write_attributes.
    ///
    /// Writes a float64 dataset with the given dimensions (product == data.size(), else
    /// DimensionMismatch), creating parent groups. Row-major, as HDF5 stores it. An
    /// existing dataset of the same name is replaced.
    void write_doubles(const std::string& dataset, const Meaning& meaning, const std::vector<double>& data,
                       const std::vector<std::uint64_t>& dims);

    /// The same from `count` doubles at `data` (large arrays written without a copy, e.g. a
    /// block of complex vectors viewed as [N, R, 2] doubles).
    void write_doubles(const std::string& dataset, const Meaning& meaning, const double* data, std::size_t count,
                       const std::vector<std::uint64_t>& dims);

    /// Writes this process's rows of a float64 dataset of dimensions `dims` (dims[0] = all
    /// rows, in canonical order): `local` holds the rows of `runs`, in list order, each of
    /// product(dims[1..]) values (DimensionMismatch if `count` differs or a run leaves
    /// dims[0]). Collective writer: each rank passes its own runs (the union is written,
    /// rows of no rank stay zero); otherwise the runs of the one process.
    void write_rows(const std::string& dataset, const Meaning& meaning, const double* local, std::size_t count,
                    const std::vector<RowRun>& runs, const std::vector<std::uint64_t>& dims);

    /// Writes `count` complex doubles as HDF5's compound {r: float64, i: float64} (what h5py
    /// reads as complex128, models.md §6), e.g. /eigs/vectors; otherwise as write_doubles.
    void write_complex(const std::string& dataset, const Meaning& meaning, const std::complex<double>* data, std::size_t count,
                       const std::vector<std::uint64_t>& dims);

    /// Writes an int64 dataset (e.g. /ldos/rows); otherwise as write_doubles.
    void write_int64(const std::string& dataset, const Meaning& meaning, const std::vector<std::int64_t>& data,
                     const std::vector<std::uint64_t>& dims);

    /// Writes a uint64 dataset (seeds, e.g. /realizations/disorder_seeds); otherwise as write_doubles.
    void write_uint64(const std::string& dataset, const Meaning& meaning, const std::vector<std::uint64_t>& data,
                      const std::vector<std::uint64_t>& dims);

    /// Closes the file and renames it to the final path (files::publish: atomically; with
    /// a `guard`, only over what the run checked at its start, see files::Guard; without,
    /// over any file, e.g. the run's own checkpoint); throws IoError. When the guarded
    /// target changed during the run, the IoError names the file the complete result is
    /// kept as. No writes are allowed afterwards.
    void commit(const files::Guard* guard = nullptr);

    const std::string& path() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Reading back (tests, kpm-plot helpers, restart). The file may come from anywhere (a
/// --restart argument): nothing is allocated or read before its size is checked.
///  - The path must be a regular file (a directory, FIFO or device is refused with stat()
///    before HDF5 opens it, so a FIFO never blocks).
///  - Objects are reached through plain (hard) links only: a soft or external link, which
///    could lead to another file, is an IoError.
///  - A dataset is read only when the bytes its header claims are stored in the file
///    (contiguous or fully allocated chunks, no compression): a read never allocates more
///    than a few times the file's size. Reads with expected dimensions refuse any other
///    shape before allocating.
///  - A string attribute is read only if it is one scalar of at most kMaxStringBytes.
/// Every accessor throws IoError naming the file and the object when it is missing or has
/// another type class (float vs signed vs unsigned integer vs string): no silent
/// conversions. Messages quote names and sizes, never the file's data.
class ResultReader {
public:
    static constexpr std::size_t kMaxStringBytes = std::size_t{1} << 20;  ///< 1 MiB

    explicit ResultReader(const std::string& path);  ///< throws IoError
    ~ResultReader();
    ResultReader(const ResultReader&) = delete;
    ResultReader& operator=(const ResultReader&) = delete;

    /// Whether the group or dataset `object` (e.g. "/kpm/moments") exists.
    bool exists(const std::string& object) const;
    /// The dimensions of `dataset` (empty for a scalar), from its header: no data is read.
    std::vector<std::uint64_t> shape(const std::string& dataset) const;
    /// Dataset as doubles, with its dimensions in `dims` if given.
    std::vector<double> read_doubles(const std::string& dataset,
                                     std::vector<std::uint64_t>* dims = nullptr) const;
    /// Dataset as doubles if its dimensions are exactly `expected_dims`; otherwise IoError
    /// "dataset 'X' has shape [a, b], expected [c, d]" before anything is allocated.
    std::vector<double> read_doubles(const std::string& dataset,
                                     const std::vector<std::uint64_t>& expected_dims) const;
    /// The same into `count` doubles at `out` (count == product of expected_dims, else
    /// DimensionMismatch): large arrays read without a copy.
    void read_doubles(const std::string& dataset, const std::vector<std::uint64_t>& expected_dims,
                      double* out, std::size_t count) const;
    /// The rows `runs` of dataset (its shape exactly `expected_dims`, checked first) into
    /// `count` doubles at `out`, in list order (DimensionMismatch if count does not fit the
    /// runs, IoError if a run leaves the dataset). A rank reads its share of a checkpoint
    /// vector so.
    void read_rows(const std::string& dataset, const std::vector<std::uint64_t>& expected_dims,
                   const std::vector<RowRun>& runs, double* out, std::size_t count) const;
    /// A signed-integer dataset as int64 (flattened, row-major).
    std::vector<std::int64_t> read_int64(const std::string& dataset) const;
    /// An unsigned-integer dataset as uint64 (flattened, row-major).
    std::vector<std::uint64_t> read_uint64(const std::string& dataset) const;
    /// Scalar attribute `name` of the group or dataset `object`.
    double read_double_attribute(const std::string& object, const std::string& name) const;
    std::int64_t read_int64_attribute(const std::string& object, const std::string& name) const;
    std::uint64_t read_uint64_attribute(const std::string& object, const std::string& name) const;
    /// Variable- or fixed-length scalar string attribute (padding removed), at most
    /// kMaxStringBytes (a larger fixed size is refused before allocating).
    std::string read_string_attribute(const std::string& object, const std::string& name) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace topokpm::analysis
