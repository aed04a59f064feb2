#pragma once
/// @file tile_matrix.hpp
/// A dense matrix stored as tiles (docs/dense.md): tile (i, j) holds rows
/// [i mb, min((i+1) mb, rows)) and columns [j nb, min((j+1) nb, cols)), column major with
/// leading dimension tile_rows(i); tiles lie one after another, tile columns in order.
/// T is complex_double or complex_single (one class for both).

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
        mt_ = static_cast<int>((rows + mb - 1) / mb);
        nt_ = static_cast<int>((cols + nb - 1) / nb);
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

    global_index rows() const { return rows_; }
    global_index cols() const { return cols_; }
    int mb() const { return mb_; }
    int nb() const { return nb_; }
    int mt() const { return mt_; }  ///< tile rows
    int nt() const { return nt_; }  ///< tile columns
    int tile_rows(int i) const { return static_cast<int>(std::min<global_index>(mb_, rows_ - global_index(i) * mb_)); }
    int tile_cols(int j) const { return static_cast<int>(std::min<global_index>(nb_, cols_ - global_index(j) * nb_)); }
    T* tile(int i, int j) { return data_.data() + offsets_[index(i, j)]; }
    const T* tile(int i, int j) const { return data_.data() + offsets_[index(i, j)]; }
    std::size_t tile_bytes(int i, int j) const { return sizeof(T) * tile_rows(i) * static_cast<std::size_t>(tile_cols(j)); }

    T& operator()(global_index r, global_index c)
    {
        return tile(static_cast<int>(r / mb_), static_cast<int>(c / nb_))[(r % mb_) + (c % nb_) * tile_rows(static_cast<int>(r / mb_))];
    }
    const T& operator()(global_index r, global_index c) const { return const_cast<TileMatrix&>(*this)(r, c); }

    /// Copies the column-major rows x cols array `a` (leading dimension lda) in.
    void from_column_major(const T* a, global_index lda)
    {
        for (int j = 0; j < nt_; ++j)
            for (int i = 0; i < mt_; ++i) {
                T* t = tile(i, j);
                for (int c = 0; c < tile_cols(j); ++c)
                    std::copy_n(a + (global_index(j) * nb_ + c) * lda + global_index(i) * mb_, tile_rows(i),
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
                                a + (global_index(j) * nb_ + c) * lda + global_index(i) * mb_);
            }
    }
    const std::vector<T>& storage() const { return data_; }

private:
    std::size_t index(int i, int j) const { return static_cast<std::size_t>(j) * mt_ + i; }
    global_index rows_ = 0, cols_ = 0;
    int mb_ = 1, nb_ = 1, mt_ = 0, nt_ = 0;
    std::vector<std::size_t> offsets_;
    std::vector<T> data_;
};

}  // namespace topokpm::numerics::dense
