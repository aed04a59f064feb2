#include "hamiltonians/file_models/matrix_market_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "numerics/base/energy_limits.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians::file_models {

namespace {

/// Fewest bytes an entry line can have: "1 1 0" and a newline.
constexpr std::uint64_t kMinEntryBytes = 6;

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

struct Triplet {
    std::int32_t i, j;  // 0-based
    complex_type v;
    std::int64_t line;
};

}  // namespace

MatrixMarketModel::MatrixMarketModel(const ModelParams& params) : params_(params)
{
    ModelFileReader in(params.file);
    // Banner: %%MatrixMarket matrix coordinate FIELD SYMMETRY (case-insensitive).
    if (!in.next_line()) throw in.file_error("is empty (expected a Matrix Market file: %%MatrixMarket matrix coordinate ...)");
    const auto& b = in.tokens();
    if (in.overlong() || b.size() != 5 || lower(b[0]) != "%%matrixmarket" || lower(b[1]) != "matrix" ||
        lower(b[2]) != "coordinate")
        throw in.error("expected the banner `%%MatrixMarket matrix coordinate FIELD SYMMETRY` "
                       "(FIELD complex, real or integer; SYMMETRY general, hermitian or symmetric)");
    const std::string field = lower(b[3]), symmetry = lower(b[4]);
    if (field != "complex" && field != "real" && field != "integer")
        throw in.error("unsupported field (allowed: complex, real, integer; pattern has no values)");
    if (symmetry != "general" && symmetry != "hermitian" && symmetry != "symmetric")
        throw in.error("unsupported symmetry (allowed: general, hermitian, symmetric; a skew matrix is not Hermitian)");
    const bool complex_field = field == "complex";
    const bool triangle = symmetry != "general";
    const bool conjugate = symmetry == "hermitian";

    // Comments, then the size line `N N nnz`.
    bool sized = false;
    std::int64_t n = 0, nnz = 0;
    while (!sized && in.next_line()) {
        const auto& t = in.tokens();
        if (t.empty() || t[0][0] == '%') continue;
        std::int64_t rows = 0, cols = 0;
        if (in.overlong() || t.size() != 3 || !token_integer(t[0], rows) || !token_integer(t[1], cols) ||
            !token_integer(t[2], nnz))
            throw in.error("expected the size line `N N nnz` (three integers)");
        if (rows != cols || rows < 1 || rows > std::numeric_limits<std::int32_t>::max())
            throw in.error(detail::concat("the matrix is ", rows, " x ", cols, "; a Hamiltonian is square, 1 .. 2147483647 rows"));
        if (nnz < 0 || static_cast<std::uint64_t>(nnz) > in.size() / kMinEntryBytes)
            throw in.error(detail::concat("nnz = ", nnz, " entry lines do not fit a file of ", in.size(),
                                          " bytes (allowed: 0 .. ", in.size() / kMinEntryBytes, ", >= ", kMinEntryBytes,
                                          " bytes each)"));
        n = rows;
        sized = true;
    }
    if (!sized) throw in.file_error("ends before the size line `N N nnz`");

    std::vector<Triplet> entries;
    entries.reserve(static_cast<size_t>(triangle ? 2 * nnz : nnz));
    std::int64_t read = 0;
    const std::size_t fields = complex_field ? 4 : 3;
    while (in.next_line()) {
        const auto& t = in.tokens();
        if (t.empty() && !in.overlong()) continue;
        if (read == nnz) throw in.error(detail::concat("a line after the last of the nnz = ", nnz, " entry lines"));
        if (in.overlong() || t.size() != fields)
            throw in.error(detail::concat("expected an entry line `i j ", complex_field ? "Re Im" : "value", "` (", fields,
                                          " fields), found ", in.overlong() ? std::string("an over-long line") : std::to_string(t.size()) + " fields"));
        std::int64_t i = 0, j = 0;
        if (!token_integer(t[0], i) || i < 1 || i > n) throw in.error(detail::concat("row index is not an integer in 1 .. N = ", n));
        if (!token_integer(t[1], j) || j < 1 || j > n) throw in.error(detail::concat("column index is not an integer in 1 .. N = ", n));
        double re = 0.0, im = 0.0;
        if (!token_real(t[2], re)) throw in.error("the value's real part is not a finite decimal number");
        if (complex_field && !token_real(t[3], im)) throw in.error("the value's imaginary part is not a finite decimal number");
        if (std::abs(re) > kMaxEnergy || std::abs(im) > kMaxEnergy)
            throw in.error("the value is out of range (allowed: magnitudes up to 1e+100, numerics/base/energy_limits.hpp)");
        if (triangle && j > i)
            throw in.error(detail::concat("entry (", i, ", ", j, ") above the diagonal in a ", symmetry,
                                          " file (it holds the lower triangle, row >= column)"));
        const complex_type v(re, im);
        entries.push_back({static_cast<std::int32_t>(i - 1), static_cast<std::int32_t>(j - 1), v, in.line_number()});
        if (triangle && i != j)
            entries.push_back({static_cast<std::int32_t>(j - 1), static_cast<std::int32_t>(i - 1), conjugate ? std::conj(v) : v,
                               in.line_number()});
        ++read;
    }
    if (read < nnz)
        throw in.error(detail::concat("the file ends after ", read, " of nnz = ", nnz, " entry lines (truncated?)"));
    file_ = in.finish();

    std::sort(entries.begin(), entries.end(),
              [](const Triplet& a, const Triplet& b) { return a.i != b.i ? a.i < b.i : a.j != b.j ? a.j < b.j : a.line < b.line; });
    for (std::size_t k = 1; k < entries.size(); ++k)
        if (entries[k].i == entries[k - 1].i && entries[k].j == entries[k - 1].j)
            throw InputError(detail::concat("{model_file} ", params.file, " line ", std::max(entries[k].line, entries[k - 1].line),
                                            ": duplicate entry (", entries[k].i + 1, ", ", entries[k].j + 1, ") (first at line ",
                                            std::min(entries[k].line, entries[k - 1].line), ")"));

    // CRS.
    row_start_.assign(static_cast<size_t>(n) + 1, 0);
    for (const Triplet& e : entries) ++row_start_[static_cast<size_t>(e.i) + 1];
    for (std::size_t r = 0; r < static_cast<size_t>(n); ++r) {
        max_row_length_ = std::max<int>(max_row_length_, static_cast<int>(row_start_[r + 1]));
        row_start_[r + 1] += row_start_[r];
    }
    cols_.resize(entries.size());
    values_.resize(entries.size());
    double largest = 0.0;
    for (std::size_t k = 0; k < entries.size(); ++k) {
        cols_[k] = entries[k].j;
        values_[k] = entries[k].v;
        largest = std::max(largest, std::abs(entries[k].v));
        real_ = real_ && entries[k].v.imag() == 0.0;
    }

    // Hermiticity: H_ji = conj(H_ij) within 1e-12 of the largest entry.
    const double tolerance = 1e-12 * largest;
    for (std::size_t k = 0; k < entries.size(); ++k) {
        const Triplet& e = entries[k];
        const auto begin = cols_.begin() + row_start_[static_cast<size_t>(e.j)];
        const auto end = cols_.begin() + row_start_[static_cast<size_t>(e.j) + 1];
        const auto at = std::lower_bound(begin, end, global_index(e.i));
        const complex_type partner = at != end && *at == e.i ? std::conj(values_[static_cast<size_t>(at - cols_.begin())])
                                                            : complex_type(0.0, 0.0);
        if (std::abs(e.v - partner) > tolerance)
            throw InputError(detail::concat("{model_file} ", params.file, " line ", e.line, ": the matrix is not Hermitian: H(",
                                            e.i + 1, ", ", e.j + 1, ") differs from conj(H(", e.j + 1, ", ", e.i + 1, ")) by ",
                                            std::abs(e.v - partner), at != end && *at == e.i ? "" : " (no such entry)",
                                            " (allowed: <= 1e-12 x the largest |H_ij| = ", tolerance, ")"));
    }
    params_.nx = static_cast<int>(n);
    params_.ny = params_.nz = 1;
}

int MatrixMarketModel::row(global_index row, global_index* cols, complex_type* values) const
{
    TOPOKPM_REQUIRE(row >= 0 && row < num_rows(), "matrix-market row ", row, " outside [0, ", num_rows(), ")");
    const global_index b = row_start_[static_cast<size_t>(row)], e = row_start_[static_cast<size_t>(row) + 1];
    std::copy(cols_.begin() + b, cols_.begin() + e, cols);
    std::copy(values_.begin() + b, values_.begin() + e, values);
    return static_cast<int>(e - b);
}

BlockStencil MatrixMarketModel::block_stencil() const
{
    throw InputError("{matrix} free: model matrix-market has no lattice (use --matrix sell or crs)");
}

AttributeList MatrixMarketModel::attributes() const
{
    return {
        {"name", std::string("matrix-market")},
        {"file", file_.path},
        {"file_size", std::uint64_t(file_.size)},
        {"file_sha256", file_.sha256},
        {"num_orbitals", std::int64_t(num_rows())},
    };
}

}  // namespace topokpm::hamiltonians::file_models
