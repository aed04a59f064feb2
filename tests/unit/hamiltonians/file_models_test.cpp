// Models read from files (models.md §8): SHA-256 against the FIPS 180-4 examples; the
// Wannier90 _hr.dat reader (values / ndegen, every malformed-file class refused at its line
// without quoting it, a header that claims more than the file can hold refused before
// allocating); model hr against the built-ins (inputs/*_hr.dat, written from the spec by
// scripts/make_hr_inputs.py, give graphene's and ti's rows entry for entry) and against an
// independent dense tiling of a complex file with second neighbours on tiny periodic and
// open supercells, its block_stencil() against its rows; model matrix-market reading the
// export back (the same rows), triangle files mirrored, malformed files refused.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "hamiltonians/file_models/hr_file.hpp"
#include "hamiltonians/file_models/sha256.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/block_stencil_reference.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/input_error.hpp"
#include "tests/support/scratch_path.hpp"
#include "tests/support/model_params.hpp"

namespace topokpm {
namespace {

using hamiltonians::ModelParams;
using hamiltonians::file_models::Sha256;
using testing::make_block_stencil_reference_operator;
using cplx = std::complex<double>;

std::string sha256(const std::string& text, std::size_t piece)
{
    Sha256 h;
    for (std::size_t i = 0; i < text.size(); i += piece) h.update(text.data() + i, std::min(piece, text.size() - i));
    return h.hex_digest();
}

std::string write_file(const std::string& name, const std::string& text)
{
    const std::string path = testing::scratch_path("file_models", name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

using topokpm::testing::input_error;

ModelParams hr_params(const std::string& file, int nx, int ny, int nz, const std::string& boundary)
{
    ModelParams p = topokpm::testing::lattice_params("hr", nx, ny, nz, boundary);
    p.file = file;
    return p;
}

/// Every stored entry of every row: (row, column) -> value, with the row lengths checked
/// against max_row_length() and the columns strictly ascending.
std::map<std::pair<global_index, global_index>, cplx> entries(const RowSource& s)
{
    std::map<std::pair<global_index, global_index>, cplx> out;
    std::vector<global_index> cols(static_cast<size_t>(s.max_row_length()));
    std::vector<complex_type> vals(cols.size());
    for (global_index r = 0; r < s.num_rows(); ++r) {
        const int len = s.row(r, cols.data(), vals.data());
        EXPECT_LE(len, s.max_row_length());
        for (int k = 0; k < len; ++k) {
            if (k > 0) {
                EXPECT_LT(cols[k - 1], cols[k]) << "row " << r;
            }
            out[{r, cols[k]}] = vals[k];
        }
    }
    return out;
}

const std::string kInputs = std::string(TOPOKPM_SOURCE_DIR) + "/inputs/";

}  // namespace

// FIPS 180-4 / NIST CSVP examples, fed whole and in pieces that straddle the 64-byte blocks.
TEST(Sha256, MatchesTheFipsExamples)
{
    for (std::size_t piece : {std::size_t(1), std::size_t(7), std::size_t(64), std::size_t(1000)}) {
        EXPECT_EQ(sha256("", piece), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        EXPECT_EQ(sha256("abc", piece), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        EXPECT_EQ(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", piece),
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        EXPECT_EQ(sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu", piece),
                  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    }
    EXPECT_EQ(sha256(std::string(1000000, 'a'), 4093), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// H(R)[m, n] = (Re + i Im) / ndegen(R); Wannier90's layout (n outer, m inner), 15 weights a
// line, R in order of appearance; size and SHA-256 of the bytes read.
TEST(HrFile, ReadsValuesOverDegeneracies)
{
    std::string text = "comment line 1 2 3\n 1\n 17\n";
    for (int k = 0; k < 17; ++k) text += (k == 15 ? "\n" : "") + std::string(" ") + std::to_string(k + 1);
    text += "\n";
    for (int k = 0; k < 17; ++k) {
        const int r = k - 8;  // R = (-8 .. 8, 0, 0): Hermitian when H(-R) = conj(H(R))
        text += std::to_string(r) + " 0 0 1 1 " + std::to_string(2.0 * (k + 1)) + " " + std::to_string(r * (k + 1) * 0.5) + "\n";
    }
    // The weights make H(R) = 2 + i r / 2: Hermitian (H(-R) = conj H(R)).
    const std::string path = write_file("ndegen_hr.dat", text);
    const auto h = hamiltonians::file_models::read_hr_file(path);
    ASSERT_EQ(h.num_wann, 1);
    ASSERT_EQ(h.terms.size(), 17u);
    for (int k = 0; k < 17; ++k) {
        EXPECT_EQ(h.terms[k].r[0], k - 8);
        EXPECT_EQ(h.terms[k].block[0], cplx(2.0, (k - 8) * 0.5));
    }
    EXPECT_FALSE(h.real);
    EXPECT_EQ(h.file.size, text.size());
    EXPECT_EQ(h.file.sha256, sha256(text, 64));

    // The same file with CRLF line ends (edited on Windows) and no newline at the end.
    std::string crlf;
    for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    crlf.resize(crlf.size() - 2);
    const auto h2 = hamiltonians::file_models::read_hr_file(write_file("crlf_hr.dat", crlf));
    ASSERT_EQ(h2.terms.size(), 17u);
    EXPECT_EQ(h2.terms[16].block[0], cplx(2.0, 4.0));
    EXPECT_EQ(h2.file.size, crlf.size());
}

// Each class of malformed file: one InputError naming the file and the line (never its
// text: the sentinel "Z9" planted in the bad field never appears).
TEST(HrFile, RefusesEveryMalformedFileAtItsLine)
{
    auto entry = [](const char* r, int m, int n, double re, double im) {
        return std::string(r) + " " + std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(re) + " " +
               std::to_string(im) + "\n";
    };
    auto block = [&](const char* r, double a) {  // H(R) = [[a, 1], [1, a]] written n outer, m inner
        return entry(r, 1, 1, a, 0) + entry(r, 2, 1, 1, 0) + entry(r, 1, 2, 1, 0) + entry(r, 2, 2, a, 0);
    };
    // num_wann = 2, nrpts = 1: the bad line is line 5; a valid block after it keeps the
    // file large enough for the header's counts.
    const std::string one = "c\n2\n1\n1\n";
    const std::string pad = block("0 0 0", 0.5);
    std::string sixteen = "c\n1\n16\n1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n";
    for (int k = 0; k < 16; ++k) sixteen += pad;
    struct Case {
        const char* what;
        std::string text;
        int line;
        const char* says;
    };
    const std::vector<Case> cases = {
        {"empty", "", 0, "is empty"},
        {"num_wann text", "c\nZ9\n1\n1\n", 2, "num_wann"},
        {"num_wann 0", "c\n0\n1\n1\n", 2, "num_wann"},
        {"nrpts missing", "c\n2\n", 0, "before the nrpts line"},
        {"nrpts huge", "c\n1000\n1000000000000\n", 3, "announces"},
        {"too few weights", "c\n2\n2\n1\n" + pad + pad, 4, "expected 2 degeneracy weights"},
        {"weight zero", "c\n2\n1\n0\n" + pad, 4, "ndegen"},
        {"sixteen weights on a line", sixteen, 4, "expected 15 degeneracy weights"},
        {"short entry", one + "0 0 0 1 1 0.5\n" + pad, 5, "7 fields"},
        {"orbital out of range", one + "0 0 0 3 1 0.5 0\n" + pad, 5, "orbital m"},
        {"orbital n zero", one + "0 0 0 1 0 0.5 0\n" + pad, 5, "orbital n"},
        {"nan", one + "0 0 0 1 1 nan 0\n" + pad, 5, "Re is not a finite"},
        {"inf", one + "0 0 0 1 1 0 -inf\n" + pad, 5, "Im is not a finite"},
        {"sentinel value", one + "0 0 0 1 1 Z9 0\n" + pad, 5, "Re is not a finite"},
        {"beyond the energy limit", one + "0 0 0 1 1 0 2e100\n" + pad, 5, "out of range"},
        {"R not integer", one + "0.5 0 0 1 1 0 0\n" + pad, 5, "R1"},
        {"NUL byte in a value", one + std::string("0 0 0 1 1 0.5") + '\0' + "Z9 0\n" + pad, 5, "Re is not a finite"},
        {"duplicate", one + entry("0 0 0", 1, 1, 0.5, 0) + entry("0 0 0", 1, 1, 0.5, 0), 6,
         "duplicate entry R = (0, 0, 0), m = 1, n = 1"},
        {"truncated", one + entry("0 0 0", 1, 1, 0.5, 0) + entry("0 0 0", 2, 1, 1, 0) + entry("0 0 0", 1, 2, 1, 0), 7,
         "ends after 3 of"},
        {"extra line", one + pad + entry("0 0 0", 1, 1, 0.5, 0), 9, "after the last"},
        {"more R than nrpts", one + entry("0 0 0", 1, 1, 0.5, 0) + entry("1 0 0", 1, 1, 0.5, 0), 6,
         "one more than the nrpts = 1"},
        {"not Hermitian in R = 0", one + entry("0 0 0", 1, 1, 0.5, 0) + entry("0 0 0", 2, 1, 1, 0) +
                                       entry("0 0 0", 1, 2, 1, 0.25) + entry("0 0 0", 2, 2, 0.5, 0),
         7, "not Hermitian: H(R)[m, n] for R = (0, 0, 0), m = 1, n = 2"},
        {"no partner -R", "c\n2\n2\n1 1\n" + pad + block("1 0 0", 0.0), 11, "R = (1, 0, 0), m = 1, n = 2"},
    };
    for (const Case& c : cases) {
        const std::string path = write_file("bad_hr.dat", c.text);
        const std::string msg = input_error([&] { hamiltonians::file_models::read_hr_file(path); });
        ASSERT_FALSE(msg.empty()) << c.what;
        EXPECT_NE(msg.find("{model_file} " + path), std::string::npos) << c.what << ": " << msg;
        if (c.line > 0) {
            EXPECT_NE(msg.find(" line " + std::to_string(c.line) + ":"), std::string::npos) << c.what << ": " << msg;
        }
        EXPECT_NE(msg.find(c.says), std::string::npos) << c.what << ": " << msg;
        EXPECT_EQ(msg.find("Z9"), std::string::npos) << c.what << ": " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << c.what;
    }
    // Not a regular file.
    EXPECT_NE(input_error([&] { hamiltonians::file_models::read_hr_file(::testing::TempDir()); }).find("is a directory"),
              std::string::npos);
    EXPECT_NE(input_error([&] { hamiltonians::file_models::read_hr_file("/nonexistent/x_hr.dat"); }).find("cannot open"),
              std::string::npos);
}

// inputs/graphene_hr.dat on the graphene lattice gives GrapheneModel's rows entry for entry,
// with disorder, for every boundary; inputs/ti_hr.dat gives TiModel's (clean: the built-in
// ti's disorder is per site, the file model's per orbital).
TEST(HrModel, TheSpecFilesGiveTheBuiltInMatricesExactly)
{
    for (const char* b : {"pp", "po", "op", "oo"}) {
        ModelParams g;
        g.name = "graphene";
        g.nx = 5;
        g.ny = 4;
        g.boundary = b;
        g.disorder = 1.3;
        g.disorder_seed = 77;
        ModelParams h = hr_params(kInputs + "graphene_hr.dat", 5, 4, 1, b);
        h.disorder = g.disorder;
        h.disorder_seed = g.disorder_seed;
        const auto built_in = hamiltonians::make_model(g);
        const auto from_file = hamiltonians::make_model(h);
        EXPECT_EQ(from_file->params().boundary, std::string(b) + "p");
        EXPECT_TRUE(from_file->real_valued());
        EXPECT_EQ(from_file->orbitals_per_site(), 2);
        EXPECT_EQ(entries(*from_file), entries(*built_in)) << "graphene " << b;
        EXPECT_EQ(from_file->estimated_nonzeros(), built_in->estimated_nonzeros()) << b;
    }
    for (const char* b : {"ppo", "ppp", "ooo", "opo"}) {
        ModelParams t;
        t.name = "ti";
        t.nx = 3;
        t.ny = 4;
        t.nz = 3;
        t.boundary = b;
        const auto built_in = hamiltonians::make_model(t);
        const auto from_file = hamiltonians::make_model(hr_params(kInputs + "ti_hr.dat", 3, 4, 3, b));
        EXPECT_FALSE(from_file->real_valued());
        EXPECT_EQ(entries(*from_file), entries(*built_in)) << "ti " << b;
        EXPECT_EQ(from_file->estimated_nonzeros(), built_in->estimated_nonzeros()) << b;
    }
}

namespace {

/// A complex 3-orbital file with first and second neighbours in all directions and a
/// diagonal-hopping term, Hermitian by construction: H(-R) = H(R)^dagger.
std::string second_neighbour_file(std::map<std::array<int, 3>, std::vector<cplx>>& blocks)
{
    const int w = 3;
    const std::vector<std::array<int, 3>> half = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {2, 0, 0}, {1, -1, 1}, {0, 2, -1}};
    std::vector<std::array<int, 3>> order;
    int seed = 1;
    for (const auto& r : half) {
        std::vector<cplx> b(w * w);
        for (int m = 0; m < w; ++m)
            for (int n = 0; n < w; ++n) {
                seed = (seed * 37 + 11) % 101;
                b[m * w + n] = cplx((seed % 13) / 8.0 - 0.75, (seed % 7) / 4.0 - 0.75);
            }
        if (r == std::array<int, 3>{0, 0, 0}) {  // Hermitian on-site block
            for (int m = 0; m < w; ++m)
                for (int n = 0; n < m; ++n) b[m * w + n] = std::conj(b[n * w + m]);
            for (int m = 0; m < w; ++m) b[m * w + m] = b[m * w + m].real();
            blocks[r] = b;
            order.push_back(r);
            continue;
        }
        b[1] = 0.0;  // an exact zero: not stored
        const std::array<int, 3> minus = {-r[0], -r[1], -r[2]};
        std::vector<cplx> d(w * w);
        for (int m = 0; m < w; ++m)
            for (int n = 0; n < w; ++n) d[m * w + n] = std::conj(b[n * w + m]);
        blocks[r] = b;
        blocks[minus] = d;
        order.push_back(r);
        order.push_back(minus);
    }
    std::string text = "second neighbours\n3\n" + std::to_string(order.size()) + "\n";
    for (std::size_t k = 0; k < order.size(); ++k) text += "2 ";  // ndegen 2: values written doubled
    text += "\n";
    char line[160];
    for (const auto& r : order)
        for (int n = 0; n < w; ++n)
            for (int m = 0; m < w; ++m) {
                const cplx v = 2.0 * blocks[r][m * w + n];
                std::snprintf(line, sizeof line, "%d %d %d %d %d %.17g %.17g\n", r[0], r[1], r[2], m + 1, n + 1, v.real(), v.imag());
                text += line;
            }
    return text;
}

}  // namespace

// The tiling rule of models.md §8 by a plain loop (row (c, m) += H(R)[m, n] at (c + R
// wrapped or dropped, n), disorder on the diagonal) against HrModel::row() and against the
// block stencil applied by the reference loop: periodic extents 1 and 2 (images of one
// neighbour coincide and add), open extents shorter than |R|.
TEST(HrModel, TilesAnyFileLikeThePlainLoop)
{
    std::map<std::array<int, 3>, std::vector<cplx>> blocks;
    const std::string path = write_file("second_hr.dat", second_neighbour_file(blocks));
    const int w = 3;
    struct Box {
        int nx, ny, nz;
        const char* b;
    };
    for (const Box& box : {Box{3, 2, 2, "ppp"}, Box{4, 1, 3, "pop"}, Box{2, 3, 1, "oop"}, Box{5, 2, 2, "opo"}, Box{1, 1, 1, "ppp"}}) {
        ModelParams p = hr_params(path, box.nx, box.ny, box.nz, box.b);
        p.disorder = 0.7;
        p.disorder_seed = 3;
        const auto model = hamiltonians::make_model(p);
        const std::string label = std::to_string(box.nx) + "x" + std::to_string(box.ny) + "x" + std::to_string(box.nz) + " " + box.b;
        const global_index n = model->num_rows();
        ASSERT_EQ(n, w * box.nx * box.ny * box.nz);
        std::vector<cplx> dense(static_cast<size_t>(n * n));
        const int ext[3] = {box.nx, box.ny, box.nz};
        for (int c1 = 0; c1 < box.nx; ++c1)
            for (int c2 = 0; c2 < box.ny; ++c2)
                for (int c3 = 0; c3 < box.nz; ++c3)
                    for (const auto& [r, b] : blocks) {
                        int q[3] = {c1 + r[0], c2 + r[1], c3 + r[2]};
                        bool inside = true;
                        for (int d = 0; d < 3; ++d) {
                            if (q[d] >= 0 && q[d] < ext[d]) continue;
                            if (box.b[d] == 'o') inside = false;
                            q[d] = ((q[d] % ext[d]) + ext[d]) % ext[d];
                        }
                        if (!inside) continue;
                        for (int m = 0; m < w; ++m)
                            for (int nn = 0; nn < w; ++nn) {
                                const global_index row = m + w * (c3 + box.nz * (c2 + box.ny * c1));
                                const global_index col = nn + w * (q[2] + box.nz * (q[1] + box.ny * q[0]));
                                dense[static_cast<size_t>(row + col * n)] += b[m * w + nn];
                            }
                    }
        for (global_index r = 0; r < n; ++r) dense[static_cast<size_t>(r + r * n)] += model->potential(r);
        const std::vector<complex_type> mine = topokpm::testing::dense_matrix(*model);
        // The same O(1) terms summed in another order (at most a few images): 1e-14.
        for (std::size_t k = 0; k < dense.size(); ++k) ASSERT_LT(std::abs(mine[k] - dense[k]), 1e-14) << label << " entry " << k;
        EXPECT_NE(model->potential(0), 0.0);
        // An upper bound: periodic images that coincide (extents 1, 2 and 4 with |R| = 2 here)
        // merge into one stored entry.
        EXPECT_GE(model->estimated_nonzeros(), model->num_nonzeros(0, n)) << label;

        // block_stencil() is the same matrix (the reference loop against the dense rows).
        const BlockStencil s = model->block_stencil();
        ASSERT_NO_THROW(s.validate()) << label;
        const topokpm::testing::DenseOperator oracle(mine, n);
        const auto stencil = make_block_stencil_reference_operator(s);
        BlockVector x(n, 2), y(n, 2), y_ref(n, 2);
        numerics::fill_random_phase_vectors(x, 21, 0, n);
        const AugmentedOps ops{0.6, 0.3, 0.0, true};
        DotSums d, d_ref;
        oracle.apply(x, y_ref, ops, &d_ref);
        stencil->apply(x, y, ops, &d);
        for (std::size_t k = 0; k < y.size(); ++k) ASSERT_LT(std::abs(y.data()[k] - y_ref.data()[k]), 1e-13) << label;
    }
    // The matrix-free kernels take at most 8 orbitals: a 9-orbital file is refused there only.
    std::string nine = "nine\n9\n1\n1\n";
    for (int n = 1; n <= 9; ++n)
        for (int m = 1; m <= 9; ++m) nine += "0 0 0 " + std::to_string(m) + " " + std::to_string(n) + (m == n ? " 1 0\n" : " 0 0\n");
    const auto big = hamiltonians::make_model(hr_params(write_file("nine_hr.dat", nine), 2, 1, 1, ""));
    EXPECT_EQ(big->num_rows(), 18);
    EXPECT_FALSE(big->offers_block_stencil());
    EXPECT_NE(input_error([&] { big->block_stencil(); }).find("{matrix} free"), std::string::npos);
}

TEST(HrModel, ValidatesItsParameters)
{
    const std::string file = kInputs + "graphene_hr.dat";
    EXPECT_NE(input_error([&] { hamiltonians::make_model(hr_params("", 2, 2, 1, "")); }).find("{model_file}"), std::string::npos);
    EXPECT_NE(input_error([&] { hamiltonians::make_model(hr_params(file, 2, 2, 1, "ppx")); }).find("{boundary}"), std::string::npos);
    EXPECT_NE(input_error([&] { hamiltonians::make_model(hr_params(file, 2, 2, 1, "pppp")); }).find("{boundary}"), std::string::npos);
    EXPECT_NE(input_error([&] { hamiltonians::make_model(hr_params(file, 0, 2, 1, "")); }).find("Nx = 0"), std::string::npos);
    ModelParams dots = hr_params(file, 4, 4, 1, "");
    dots.dot_period = 2;
    EXPECT_NE(input_error([&] { hamiltonians::make_model(dots); }).find("{dot_period} 2: dots on model hr"), std::string::npos);
    ModelParams big = hr_params(file, 1'000'000'000, 1'000'000'000, 1'000'000'000, "");
    EXPECT_NE(input_error([&] { hamiltonians::make_model(big); }).find("overflow"), std::string::npos);
    const auto m = hamiltonians::make_model(hr_params(file, 3, 2, 1, "o"));
    EXPECT_EQ(m->params().boundary, "opp");
    const AttributeList a = m->attributes();
    std::map<std::string, decltype(Attribute::value)> by_name;
    for (const Attribute& x : a) by_name[x.name] = x.value;
    EXPECT_EQ(std::get<std::string>(by_name.at("name")), "hr");
    EXPECT_EQ(std::get<std::string>(by_name.at("file")), file);
    EXPECT_EQ(std::get<std::int64_t>(by_name.at("num_orbitals")), 2);
    EXPECT_EQ(std::get<std::string>(by_name.at("file_sha256")).size(), 64u);
}

// The export of a disordered ti slab read back as matrix-market: the same rows, bit for bit.
TEST(MatrixMarketModel, ReadsTheExportBack)
{
    ModelParams t;
    t.name = "ti";
    t.nx = 3;
    t.ny = 3;
    t.nz = 2;
    t.disorder = 2.0;
    t.disorder_seed = 11;
    const auto ti = hamiltonians::make_model(t);
    const std::string path = testing::scratch_path("file_models", "export.mtx").string();
    std::remove(path.c_str());
    hamiltonians::export_matrix_market(*ti, path);
    ModelParams p;
    p.name = "matrix-market";
    p.file = path;
    const auto mm = hamiltonians::make_model(p);
    EXPECT_EQ(mm->num_rows(), ti->num_rows());
    EXPECT_EQ(mm->params().nx, ti->num_rows());
    EXPECT_EQ(entries(*mm), entries(*ti));
    EXPECT_FALSE(mm->real_valued());
    EXPECT_NE(input_error([&] { mm->block_stencil(); }).find("{matrix} free"), std::string::npos);
}

// hermitian / symmetric files hold the lower triangle; the upper is mirrored (conjugated).
TEST(MatrixMarketModel, MirrorsTriangleFiles)
{
    const std::string herm = write_file("h.mtx", "%%MatrixMarket matrix coordinate complex hermitian\n% a comment\n3 3 4\n"
                                                 "1 1 1.5 0\n2 1 0.5 0.25\n3 3 -1 0\n3 2 2 0\n");
    ModelParams p;
    p.name = "matrix-market";
    p.file = herm;
    const auto h = entries(*hamiltonians::make_model(p));
    EXPECT_EQ(h.size(), 6u);
    EXPECT_EQ(h.at({0, 1}), cplx(0.5, -0.25));
    EXPECT_EQ(h.at({1, 0}), cplx(0.5, 0.25));
    EXPECT_EQ(h.at({1, 2}), cplx(2, 0));
    p.file = write_file("s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 1\n2 1 -3\n");
    const auto model = hamiltonians::make_model(p);
    EXPECT_TRUE(model->real_valued());
    EXPECT_EQ(entries(*model).at({0, 1}), cplx(-3, 0));
}

TEST(MatrixMarketModel, RefusesEveryMalformedFileAtItsLine)
{
    const std::string banner = "%%MatrixMarket matrix coordinate complex general\n";
    struct Case {
        const char* what;
        std::string text;
        int line;
        const char* says;
    };
    const std::vector<Case> cases = {
        {"no banner", "2 2 1\n1 1 1 0\n", 1, "banner"},
        {"pattern", "%%MatrixMarket matrix coordinate pattern general\n", 1, "unsupported field"},
        {"skew", "%%MatrixMarket matrix coordinate real skew-symmetric\n", 1, "unsupported symmetry"},
        {"array", "%%MatrixMarket matrix array real general\n", 1, "banner"},
        {"not square", banner + "2 3 1\n", 2, "square"},
        {"nnz huge", banner + "2 2 1000000000000\n", 2, "do not fit"},
        {"no size", banner + "% only comments\n", 0, "ends before the size line"},
        {"index out of range", banner + "2 2 1\n3 1 1 0\n", 3, "row index"},
        {"zero-based", banner + "2 2 1\n1 0 1 0\n", 3, "column index"},
        {"missing imaginary", banner + "2 2 1\n1 1 1\n", 3, "4 fields"},
        {"nan", banner + "2 2 1\n1 1 Z9 0\n", 3, "real part"},
        {"inf", banner + "2 2 1\n1 1 1 inf\n", 3, "imaginary part"},
        {"beyond the energy limit", banner + "2 2 1\n1 1 -1e101 0\n", 3, "out of range"},
        {"truncated", banner + "2 2 3\n1 1 1 0\n2 2 1 0\n", 4, "ends after 2 of nnz = 3"},
        {"extra", banner + "1 1 1\n1 1 1 0\n1 1 1 0\n", 4, "after the last"},
        {"duplicate", banner + "2 2 3\n1 1 1 0\n2 2 1 0\n1 1 1 0\n", 5, "duplicate entry (1, 1) (first at line 3)"},
        {"upper in triangle", "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n", 3, "above the diagonal"},
        {"not Hermitian", banner + "2 2 2\n1 2 1 0.5\n2 1 1 0.5\n", 3, "not Hermitian: H(1, 2)"},
        {"missing partner", banner + "2 2 2\n1 1 1 0\n2 1 0.5 0\n", 4, "(no such entry)"},
        {"complex diagonal", "%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 0.5\n", 3, "not Hermitian"},
    };
    for (const Case& c : cases) {
        ModelParams p;
        p.name = "matrix-market";
        p.file = write_file("bad.mtx", c.text);
        const std::string msg = input_error([&] { hamiltonians::make_model(p); });
        ASSERT_FALSE(msg.empty()) << c.what;
        if (c.line > 0) {
            EXPECT_NE(msg.find(" line " + std::to_string(c.line) + ":"), std::string::npos) << c.what << ": " << msg;
        }
        EXPECT_NE(msg.find(c.says), std::string::npos) << c.what << ": " << msg;
        EXPECT_EQ(msg.find("Z9"), std::string::npos) << c.what << ": " << msg;
    }
    ModelParams lattice;
    lattice.name = "matrix-market";
    lattice.file = write_file("ok.mtx", banner + "1 1 1\n1 1 1 0\n");
    lattice.nx = 4;
    EXPECT_NE(input_error([&] { hamiltonians::make_model(lattice); }).find("no lattice"), std::string::npos);
}

}  // namespace topokpm
