#pragma once
/// @file tile_matrix.hpp
/// A dense matrix stored as tiles (docs/dense.md): tile (i, j) holds rows
/// [i mb, min((i+1) mb, rows)) and columns [col_start(j), col_start(j+1)), column major
/// with leading dimension tile_rows(i); tiles lie one after another, tile columns in
/// order. Tile columns are either all nb wide (the last one narrower) or of given widths:
/// the hybrid tiles of seed 001 §3.1 (hybrid_widths()). T is complex_double or
/// complex_single (one class for both).

#include <algorithm>
#include <cstddef>
#include <vector>

#include "numerics/base/types.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics::dense {

template <class T>
class TileMatrix {
public:
    TileMatrix() = default;
    /// A zero rows x cols matrix of mb x nb tiles. Throws InputError for sizes < 1.
    TileMatrix(global_index rows, global_index cols, int mb, int nb) : rows_(rows), cols_(cols), mb_(mb), nb_(nb)
    {
        TOPOKPM_USER_REQUIRE(rows >= 1 && cols >= 1, "a tile matrix needs >= 1 row and column, got ", rows, " x ",
                             cols);
        TOPOKPM_USER_REQUIRE(mb >= 1 && nb >= 1, "{tile_size} must be >= 1, got ", mb, " x ", nb);
        std::vector<int> widths;
        for (global_index c = 0; c < cols; c += nb) widths.push_back(static_cast<int>(std::min<global_index>(nb, cols - c)));
        layout(widths);
    }
    /// A zero matrix of mb-row tiles whose tile columns have the given widths (the matrix
    /// has their sum as columns). Throws InputError for rows or mb < 1, no width or a
    /// width < 1.
    TileMatrix(global_index rows, int mb, const std::vector<int>& widths) : rows_(rows), mb_(mb)
    {
        TOPOKPM_USER_REQUIRE(rows >= 1 && !widths.empty(), "a tile matrix needs >= 1 row and tile column, got ",
                             rows, " rows and ", widths.size(), " tile columns");
        TOPOKPM_USER_REQUIRE(mb >= 1, "{tile_size} must be >= 1, got ", mb);
        cols_ = 0;
        nb_ = 0;
        for (int w : widths) {
            TOPOKPM_USER_REQUIRE(w >= 1, "tile column widths must be >= 1, got ", w);
            cols_ += w;
            nb_ = std::max(nb_, w);
        }
        layout(widths);
    }

    global_index rows() const { return rows_; }
    global_index cols() const { return cols_; }
    int mb() const { return mb_; }
    int nb() const { return nb_; }  ///< the widest tile column
    int mt() const { return mt_; }  ///< tile rows
    int nt() const { return nt_; }  ///< tile columns
    int tile_rows(int i) const { return static_cast<int>(std::min<global_index>(mb_, rows_ - global_index(i) * mb_)); }
    int tile_cols(int j) const { return static_cast<int>(col_start_[j + 1] - col_start_[j]); }
    /// First global column of tile column j (j in [0, nt]; col_start(nt) == cols()).
    global_index col_start(int j) const { return col_start_[static_cast<std::size_t>(j)]; }
    std::vector<int> column_widths() const
    {
        std::vector<int> w(static_cast<std::size_t>(nt_));
        for (int j = 0; j < nt_; ++j) w[static_cast<std::size_t>(j)] = tile_cols(j);
        return w;
    }
    T* tile(int i, int j) { return data_.data() + offsets_[index(i, j)]; }
    const T* tile(int i, int j) const { return data_.data() + offsets_[index(i, j)]; }
    std::size_t tile_bytes(int i, int j) const { return sizeof(T) * tile_rows(i) * static_cast<std::size_t>(tile_cols(j)); }

    T& operator()(global_index r, global_index c)
    {
        const int i = static_cast<int>(r / mb_);
        const int j = static_cast<int>(std::upper_bound(col_start_.begin(), col_start_.end(), c) - col_start_.begin()) - 1;
        return tile(i, j)[(r % mb_) + (c - col_start_[static_cast<std::size_t>(j)]) * tile_rows(i)];
    }
    const T& operator()(global_index r, global_index c) const { return const_cast<TileMatrix&>(*this)(r, c); }

    /// Copies the column-major rows x cols array `a` (leading dimension lda) in.
    void from_column_major(const T* a, global_index lda)
    {
        for (int j = 0; j < nt_; ++j)
            for (int i = 0; i < mt_; ++i) {
                T* t = tile(i, j);
                for (int c = 0; c < tile_cols(j); ++c)
                    std::copy_n(a + (col_start(j) + c) * lda + global_index(i) * mb_, tile_rows(i),
                                t + std::size_t(c) * tile_rows(i));
            }
    }
    /// Copies the matrix out into column-major `a` (leading dimension lda).
    void to_column_major(T* a, global_index lda) const
    {
        for (int j = 0; j < nt_; ++j)
            for (int i = 0; i < mt_; ++i) {
                const T* t = tile(i, j);
                for (int c = 0; c < tile_cols(j); ++c)
                    std::copy_n(t + std::size_t(c) * tile_rows(i), tile_rows(i),
                                a + (col_start(j) + c) * lda + global_index(i) * mb_);
            }
    }
    const std::vector<T>& storage() const { return data_; }

private:
    void layout(const std::vector<int>& widths)
    {
        mt_ = static_cast<int>((rows_ + mb_ - 1) / mb_);
        nt_ = static_cast<int>(widths.size());
        col_start_.assign(1, 0);
        for (int w : widths) col_start_.push_back(col_start_.back() + w);
        offsets_.resize(static_cast<std::size_t>(mt_) * nt_ + 1);
        std::size_t at = 0;
        for (int j = 0; j < nt_; ++j)
            for (int i = 0; i < mt_; ++i) {
                offsets_[index(i, j)] = at;
                at += static_cast<std::size_t>(tile_rows(i)) * tile_cols(j);
            }
        offsets_.back() = at;
        data_.assign(at, T(0));
    }

private:
    std::size_t index(int i, int j) const { return static_cast<std::size_t>(j) * mt_ + i; }
    global_index rows_ = 0, cols_ = 0;
    int mb_ = 1, nb_ = 1, mt_ = 0, nt_ = 0;
    std::vector<global_index> col_start_{0};
    std::vector<std::size_t> offsets_;
    std::vector<T> data_;
};

/// Tile column widths of seed 001's hybrid layout (§3.1): every large tile column of
/// `large` columns (the last one: what is left of `cols`) is cut into `slices` - 1 narrow
/// slices of host_width / (slices - 1) columns for the host and one wide slice of the
/// rest for the device (column_owner() maps them so). A last large tile too narrow for
/// that is cut into narrow slices only (the last one shorter). Throws InputError unless
/// cols >= 1, slices >= 2, host_width is a positive multiple of slices - 1, and
/// host_width < large.
std::vector<int> hybrid_widths(global_index cols, int large, int slices, int host_width);

}  // namespace topokpm::numerics::dense
