#include "numerics/sparse/sell_matrix.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

template <class T>
BasicSellMatrix<T>::BasicSellMatrix(const SellStructure& structure, FirstTouchVector<T> values)
    : SellStructure(structure), values_(std::move(values))
{
    TOPOKPM_REQUIRE(static_cast<std::int64_t>(values_.size()) == num_stored(), values_.size(),
                    " values for a SELL structure of ", num_stored(), " stored entries");
}

template <class T>
BasicSellMatrix<T> BasicSellMatrix<T>::build(const RowSource& source, global_index row_begin, global_index row_end,
                                             const SellParams& params)
{
    TOPOKPM_USER_REQUIRE(params.chunk_height >= 1, "{sell_chunk_height} ", params.chunk_height, ": must be >= 1");
    TOPOKPM_USER_REQUIRE(params.sigma >= 1, "{sell_sigma} ", params.sigma, ": must be >= 1");
    TOPOKPM_REQUIRE(0 <= row_begin && row_begin <= row_end && row_end <= source.num_rows(),
                    "row range [", row_begin, ", ", row_end, ") outside [0, ", source.num_rows(), ")");
    const global_index n = row_end - row_begin;
    constexpr global_index max_index = std::numeric_limits<local_index>::max();
    if (n > max_index)
        throw ResourceError(detail::concat("SELL-C-sigma uses 32-bit row indices: ", n,
                                           " rows exceed 2^31 - 1; use {matrix} free or more ranks"));
    const int c = params.chunk_height;
    BasicSellMatrix m;
    m.num_rows_ = static_cast<local_index>(n);
    m.num_cols_ = source.num_rows();
    m.chunk_height_ = c;
    // σ = 1 keeps the original order; otherwise the window is a multiple of C so that
    // chunks never straddle two windows.
    const std::int64_t window = (static_cast<std::int64_t>(params.sigma) + c - 1) / c * c;
    m.sigma_ = params.sigma == 1 ? 1 : static_cast<int>(std::min<std::int64_t>(window, max_index / c * c));

    // Every loop over rows, windows or chunks below is static over chunks (rows = chunk
    // ranges, σ windows are whole chunks): the same split as the kernel's, so each thread
    // first touches the pages it will sweep (FirstTouchVector leaves them untouched until
    // then), and the result is independent of the thread count.
    const local_index num_chunks = static_cast<local_index>((n + c - 1) / c);
    const std::int64_t num_slots = static_cast<std::int64_t>(num_chunks) * c;

    // Pass 1: row lengths (the row generator is cheap; calling it twice avoids a
    // temporary CRS copy of the whole matrix) and the column range, checked here so that
    // pass 2 can narrow columns to 32 bits without a test per entry.
    FirstTouchVector<local_index> length(n);
    const int max_len = source.max_row_length();
    global_index max_col = -1, min_col = 0;
#pragma omp parallel reduction(max : max_col) reduction(min : min_col)
    {
        std::vector<global_index> cols(max_len);
        std::vector<complex_type> vals(max_len);
#pragma omp for schedule(static)
        for (local_index ch = 0; ch < num_chunks; ++ch)
            for (global_index i = static_cast<global_index>(ch) * c; i < std::min<global_index>(n, (ch + 1) * c); ++i) {
                const int len = source.row(row_begin + i, cols.data(), vals.data());
                length[i] = len;
                for (int k = 0; k < len; ++k) {
                    max_col = std::max(max_col, cols[k]);
                    min_col = std::min(min_col, cols[k]);
                }
            }
    }
    TOPOKPM_REQUIRE(min_col >= 0 && max_col < source.num_rows(), "row source returned column ",
                    min_col < 0 ? min_col : max_col, " outside [0, ", source.num_rows(), ")");
    if (max_col > max_index)
        throw ResourceError(detail::concat("SELL-C-sigma stores 32-bit column indices: column ", max_col,
                                           " exceeds 2^31 - 1 (", source.num_rows(),
                                           " rows); use {matrix} free or more ranks"));

    // σ-sorting: inside each window, rows by descending length (stable, so equal lengths
    // keep their order and the permutation stays local). A window is sigma / C chunks.
    m.row_of_slot_.resize(num_slots);
    const std::int64_t window_slots = m.sigma_ > 1 ? m.sigma_ : c;
    const std::int64_t num_windows = (num_slots + window_slots - 1) / window_slots;
#pragma omp parallel for schedule(static)
    for (std::int64_t w = 0; w < num_windows; ++w) {
        const std::int64_t first = w * window_slots, last = std::min(num_slots, first + window_slots);
        for (std::int64_t p = first; p < last; ++p) m.row_of_slot_[p] = p < n ? static_cast<local_index>(p) : -1;
        if (m.sigma_ > 1) {
            const std::int64_t last_row = std::min<std::int64_t>(n, last);
            if (last_row > first)
                std::stable_sort(m.row_of_slot_.begin() + first, m.row_of_slot_.begin() + last_row,
                                 [&](local_index a, local_index b) { return length[a] > length[b]; });
        }
    }

    m.chunk_length_.resize(num_chunks);
    m.chunk_first_row_.resize(num_chunks);
    std::int64_t nonzeros = 0;
#pragma omp parallel for schedule(static) reduction(+ : nonzeros)
    for (local_index ch = 0; ch < num_chunks; ++ch) {
        local_index width = 0;
        const local_index first = m.row_of_slot_[static_cast<size_t>(ch) * c];
        bool consecutive = first >= 0;
        for (int r = 0; r < c; ++r) {
            const local_index row = m.row_of_slot_[static_cast<size_t>(ch) * c + r];
            consecutive = consecutive && static_cast<std::int64_t>(row) == static_cast<std::int64_t>(first) + r;
            if (row >= 0) {
                width = std::max(width, length[row]);
                nonzeros += length[row];
            }
        }
        m.chunk_length_[ch] = width;
        m.chunk_first_row_[ch] = consecutive ? first : -1;
    }
    m.num_nonzeros_ = nonzeros;
    m.chunk_start_.assign(num_chunks + 1, 0);  // 1/C of the rows: the serial prefix sum is cheap
    for (local_index ch = 0; ch < num_chunks; ++ch)
        m.chunk_start_[ch + 1] = m.chunk_start_[ch] + static_cast<std::int64_t>(m.chunk_length_[ch]) * c;

    // Pass 2: fill the chunks with the kernel's schedule (static over chunks): each thread
    // writes, and so first touches, the part it will later read.
    const std::int64_t stored = m.chunk_start_[num_chunks];
    using real = typename ValueTraits<T>::real;
    m.values_.resize(stored);
    m.columns_.resize(stored);
    bool complex_entry = false;  // a real T and an entry with an imaginary part
#pragma omp parallel reduction(|| : complex_entry)
    {
        std::vector<global_index> cols(max_len);
        std::vector<complex_type> vals(max_len);
#pragma omp for schedule(static)
        for (local_index ch = 0; ch < num_chunks; ++ch) {
            const std::int64_t base = m.chunk_start_[ch];
            const local_index width = m.chunk_length_[ch];
            for (int r = 0; r < c; ++r) {
                const local_index row = m.row_of_slot_[static_cast<size_t>(ch) * c + r];
                int len = 0;
                if (row >= 0) len = source.row(row_begin + row, cols.data(), vals.data());
                // Padding repeats a valid column with value 0: no branch in the kernel.
                // (The row itself for an empty row: x of that row is read by the epilogue anyway.)
                const global_index own = row >= 0 && row_begin + row <= max_index ? row_begin + row : 0;
                const local_index pad_col = static_cast<local_index>(len > 0 ? cols[len - 1] : own);
                for (local_index k = 0; k < width; ++k) {
                    const std::int64_t idx = base + static_cast<std::int64_t>(k) * c + r;
                    if (k < len) {
                        m.columns_[idx] = static_cast<local_index>(cols[k]);
                        // T = complex_single, float: each part rounded to nearest.
                        if constexpr (ValueTraits<T>::is_complex) {
                            m.values_[idx] = T(static_cast<real>(vals[k].real()), static_cast<real>(vals[k].imag()));
                        } else {
                            m.values_[idx] = static_cast<real>(vals[k].real());
                            complex_entry = complex_entry || vals[k].imag() != 0.0;
                        }
                    } else {
                        m.columns_[idx] = pad_col;
                        m.values_[idx] = T(0);
                    }
                }
            }
        }
    }
    TOPOKPM_REQUIRE(!complex_entry, "a real-valued SELL matrix of a row source with complex entries");
    return m;
}

double SellStructure::fill_efficiency() const
{
    return columns_.empty() ? 1.0 : static_cast<double>(num_nonzeros_) / static_cast<double>(columns_.size());
}

double SellStructure::index_bytes() const
{
    return static_cast<double>(columns_.size()) * sizeof(local_index) +
           static_cast<double>(chunk_start_.size()) * sizeof(std::int64_t) +
           static_cast<double>(chunk_length_.size() + chunk_first_row_.size() + row_of_slot_.size()) *
               sizeof(local_index);
}

template <class T>
double BasicSellMatrix<T>::storage_bytes() const
{
    return static_cast<double>(values_.size()) * sizeof(T) + index_bytes();
}

template class BasicSellMatrix<complex_double>;
template class BasicSellMatrix<complex_single>;
template class BasicSellMatrix<double>;
template class BasicSellMatrix<float>;

template <class To, class From>
BasicSellMatrix<To> convert_values(const BasicSellMatrix<From>& m)
{
    static_assert(ValueTraits<To>::is_complex || !ValueTraits<From>::is_complex, "complex values into real ones");
    using real = typename ValueTraits<To>::real;
    const FirstTouchVector<From>& v = m.values();
    FirstTouchVector<To> out(v.size());
    const std::int64_t n = static_cast<std::int64_t>(v.size());
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
        if constexpr (ValueTraits<To>::is_complex)
            out[i] = To(static_cast<real>(std::real(v[i])), static_cast<real>(std::imag(v[i])));
        else
            out[i] = static_cast<real>(std::real(v[i]));  // real From only (static_assert below)
    }
    return BasicSellMatrix<To>(m, std::move(out));
}

template BasicSellMatrix<complex_single> convert_values(const BasicSellMatrix<complex_double>&);
template BasicSellMatrix<float> convert_values(const BasicSellMatrix<double>&);

}  // namespace topokpm::numerics
