// Matrix Market export (models.md §5): parse the written file back and compare with row().
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/files.hpp"
#include "tests/support/scratch_path.hpp"

namespace topokpm {
namespace {

using hamiltonians::ModelParams;
using cplx = std::complex<double>;

struct Entry {
    long row, col;
    double re, im;
};

void expect_round_trip(const ModelParams& p, const std::string& file)
{
    const auto model = hamiltonians::make_model(p);
    const std::string path = topokpm::testing::scratch_path("export_mm", file).string();
    hamiltonians::export_matrix_market(*model, path);

    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "%%MatrixMarket matrix coordinate complex general");
    // The second line is a comment, blank: the temporary's marker (files::kTemporaryMarker)
    // is cleared before the rename, so the result is not taken for a stale temporary.
    std::getline(in, line);
    EXPECT_EQ(line, "%" + std::string(sizeof files::kTemporaryMarker - 2, ' '));
    long rows = 0, cols = 0, nnz = 0;
    std::getline(in, line);
    std::istringstream(line) >> rows >> cols >> nnz;
    EXPECT_EQ(rows, model->num_rows());
    EXPECT_EQ(cols, model->num_rows());
    EXPECT_EQ(nnz, model->estimated_nonzeros());
    std::vector<Entry> entries;
    for (Entry e{}; in >> e.row >> e.col >> e.re >> e.im;) entries.push_back(e);
    ASSERT_EQ(long(entries.size()), nnz);

    // Canonical row order, 1-based, every stored entry, values exact (%.17g round-trips).
    std::vector<global_index> c(model->max_row_length());
    std::vector<cplx> v(model->max_row_length());
    size_t k = 0;
    for (global_index r = 0; r < model->num_rows(); ++r) {
        const int len = model->row(r, c.data(), v.data());
        for (int j = 0; j < len; ++j, ++k) {
            ASSERT_LT(k, entries.size());
            EXPECT_EQ(entries[k].row, r + 1);
            EXPECT_EQ(entries[k].col, c[j] + 1);
            EXPECT_EQ(entries[k].re, v[j].real());
            EXPECT_EQ(entries[k].im, v[j].imag());
        }
    }
    EXPECT_EQ(k, entries.size());
    std::remove(path.c_str());
}

TEST(ExportMatrixMarket, TiRoundTripsExactly)
{
    ModelParams p;
    p.name = "ti";
    p.nx = 3;
    p.ny = 3;
    p.nz = 2;
    p.t = 0.3;  // not a power of two: exercises all 17 digits
    p.dot_period = 3;
    p.dot_radius = 1.0;
    p.dot_potential = 0.1;
    p.disorder = 1.0 / 3.0;
    expect_round_trip(p, "topokpm_ti_export_test.mtx");
}

TEST(ExportMatrixMarket, GrapheneRoundTripsExactly)
{
    ModelParams p;
    p.name = "graphene";
    p.nx = 4;
    p.ny = 3;
    p.t = 2.0 / 3.0;
    p.disorder = 0.7;
    expect_round_trip(p, "topokpm_graphene_export_test.mtx");
}

TEST(ExportMatrixMarket, UnwritablePathIsAnIoErrorNamingThePath)
{
    ModelParams p;
    p.name = "graphene";
    p.nx = 2;
    p.ny = 2;
    const auto model = hamiltonians::make_model(p);
    const std::string path = "/nonexistent-topokpm-dir/sub/matrix.mtx";
    try {
        hamiltonians::export_matrix_market(*model, path);
        FAIL() << "expected IoError";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace topokpm
