#pragma once
/// @file matrix_market_model.hpp
/// Model `matrix-market` (models.md §8): any Hermitian matrix from a Matrix Market file,
/// `%%MatrixMarket matrix coordinate (complex|real|integer) (general|hermitian|symmetric)`,
/// 1-based; with `hermitian`/`symmetric` the file holds the lower triangle (row >= column)
/// and the upper one is its mirror (conjugated for `hermitian`). No lattice: the model is
/// N rows as nx = N cells of one orbital (ny = nz = 1), so the rows split anywhere over
/// ranks; what needs a lattice is refused by the application, block_stencil() throws.
///
/// One streaming pass; the nnz entries the size line announces are allocated only after
/// nnz has been checked against the file's size (an entry line has at least 6 bytes).
/// Every malformed file is one InputError "{model_file} PATH line N: ..." (no quoting):
/// a missing or unknown banner (pattern, array and skew-symmetric are refused), a size line
/// that is not `N N nnz` (square, N < 2^31), an index outside 1 .. N, an entry above the
/// diagonal in a triangle file, a value that is not a finite number or beyond 1e100 (the
/// energy limit of numerics/base/energy_limits.hpp), a duplicate entry,
/// fewer or more entry lines than nnz, and a non-Hermitian matrix (|H_ij - conj(H_ji)| above
/// 1e-12 times the largest |H_ij|; a missing partner counts as 0), named by the first
/// offending row, column and line.

#include <vector>

#include "hamiltonians/file_models/model_file.hpp"
#include "hamiltonians/model.hpp"

namespace topokpm::hamiltonians::file_models {

class MatrixMarketModel final : public Model {
public:
    /// @param params  validated by make_model() (name "matrix-market", file set, no lattice,
    ///                no disorder, no dots). Reads params.file; the lattice becomes N x 1 x 1.
    explicit MatrixMarketModel(const ModelParams& params);

    global_index num_rows() const override { return static_cast<global_index>(row_start_.size()) - 1; }
    int max_row_length() const override { return max_row_length_; }
    int row(global_index row, global_index* cols, complex_type* values) const override;
    bool real_valued() const override { return real_; }

    const ModelParams& params() const override { return params_; }
    int orbitals_per_site() const override { return 1; }
    /// 0: the file's diagonal is the whole on-site term.
    double potential(global_index) const override { return 0.0; }
    double potential_entries_per_row() const override { return 1.0; }
    /// Throws InputError: no lattice (--matrix free needs one).
    BlockStencil block_stencil() const override;
    bool offers_block_stencil() const override { return false; }
    AttributeList attributes() const override;
    global_index estimated_nonzeros() const override { return static_cast<global_index>(cols_.size()); }

private:
    ModelParams params_;
    ModelFileInfo file_;
    std::vector<global_index> row_start_;  ///< CRS: row r holds [row_start_[r], row_start_[r + 1])
    std::vector<global_index> cols_;       ///< ascending within a row
    std::vector<complex_type> values_;
    int max_row_length_ = 1;
    bool real_ = true;
};

}  // namespace topokpm::hamiltonians::file_models
