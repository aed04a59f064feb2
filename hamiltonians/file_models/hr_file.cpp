#include "hamiltonians/file_models/hr_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "numerics/base/energy_limits.hpp"

namespace topokpm::hamiltonians::file_models {

namespace {

/// Fewest bytes an entry line can have: "0 0 0 1 1 0 0" (13, the last line without newline).
constexpr std::uint64_t kMinEntryBytes = 13;
/// Fewest bytes a degeneracy weight takes: one digit and a separator.
constexpr std::uint64_t kMinWeightBytes = 2;

std::uint64_t cell_key(const std::array<int, 3>& r)
{
    std::uint64_t key = 0;
    for (int v : r) key = key << 21 | static_cast<std::uint64_t>(v + kMaxCellOffset);
    return key;
}

/// One parsed entry line.
struct Entry {
    std::array<int, 3> r{};
    int m = 0, n = 0;  // 0-based
    complex_type value;
};

/// Parses the current line of `in` as `R1 R2 R3 m n Re Im`; InputError naming the field.
Entry parse_entry(const ModelFileReader& in, int num_wann)
{
    const auto& tok = in.tokens();
    if (in.overlong() || tok.size() != 7)
        throw in.error(detail::concat("expected an entry line of 7 fields `R1 R2 R3 m n Re Im`, found ",
                                      in.overlong() ? std::string("an over-long line") : std::to_string(tok.size()) + " fields"));
    Entry e;
    static const char* names[3] = {"R1", "R2", "R3"};
    for (int d = 0; d < 3; ++d) {
        std::int64_t v = 0;
        if (!token_integer(tok[static_cast<size_t>(d)], v) || v < -kMaxCellOffset || v > kMaxCellOffset)
            throw in.error(detail::concat(names[d], " is not an integer in -", kMaxCellOffset, " .. ", kMaxCellOffset));
        e.r[static_cast<size_t>(d)] = static_cast<int>(v);
    }
    std::int64_t m = 0, n = 0;
    if (!token_integer(tok[3], m) || m < 1 || m > num_wann)
        throw in.error(detail::concat("orbital m is not an integer in 1 .. num_wann = ", num_wann));
    if (!token_integer(tok[4], n) || n < 1 || n > num_wann)
        throw in.error(detail::concat("orbital n is not an integer in 1 .. num_wann = ", num_wann));
    e.m = static_cast<int>(m - 1);
    e.n = static_cast<int>(n - 1);
    double re = 0.0, im = 0.0;
    if (!token_real(tok[5], re)) throw in.error("Re is not a finite decimal number");
    if (!token_real(tok[6], im)) throw in.error("Im is not a finite decimal number");
    if (std::abs(re) > kMaxEnergy || std::abs(im) > kMaxEnergy)
        throw in.error("Re or Im out of range (allowed: magnitudes up to 1e+100, numerics/base/energy_limits.hpp)");
    e.value = complex_type(re, im);
    return e;
}

/// A header line holding exactly one integer in [lo, hi].
std::int64_t header_integer(ModelFileReader& in, const char* what, std::int64_t lo, std::int64_t hi)
{
    if (!in.next_line()) throw in.file_error(detail::concat("ends before the ", what, " line (line ", in.line_number() + 1, ")"));
    std::int64_t v = 0;
    if (in.tokens().size() != 1 || !token_integer(in.tokens()[0], v) || v < lo || v > hi)
        throw in.error(detail::concat("expected ", what, ", one integer in ", lo, " .. ", hi));
    return v;
}

/// The line of the entry (r, m, n) (0-based orbitals): a second scan, only to name the
/// line of a Hermiticity failure (the pass that read the file kept no line numbers).
std::int64_t line_of_entry(const std::string& path, int num_wann, std::int64_t nrpts, const std::array<int, 3>& r, int m, int n)
{
    ModelFileReader in(path);
    for (int k = 0; k < 3; ++k) in.next_line();
    for (std::int64_t read = 0; read < nrpts; read += static_cast<std::int64_t>(in.tokens().size())) in.next_line();
    while (in.next_line()) {
        if (in.tokens().empty()) continue;
        const Entry e = parse_entry(in, num_wann);
        if (e.r == r && e.m == m && e.n == n) return in.line_number();
    }
    return 0;
}

}  // namespace

HrHamiltonian read_hr_file(const std::string& path)
{
    ModelFileReader in(path);
    if (!in.next_line()) throw in.file_error("is empty (expected a Wannier90 _hr.dat: comment line, num_wann, nrpts, ...)");
    const int num_wann = static_cast<int>(header_integer(in, "num_wann", 1, kMaxWannierOrbitals));
    const std::int64_t w2 = std::int64_t(num_wann) * num_wann;
    // nrpts x num_wann^2 entry lines of >= 13 bytes and nrpts weights must fit the file:
    // checked before anything is allocated.
    const std::int64_t max_nrpts = std::int64_t(in.size() / kMinEntryBytes) / w2;
    const std::int64_t nrpts = header_integer(in, "nrpts", 1, std::int64_t(1) << 40);
    if (nrpts > max_nrpts || static_cast<std::uint64_t>(nrpts) > in.size() / kMinWeightBytes)
        throw in.error(detail::concat("nrpts = ", nrpts, " with num_wann = ", num_wann, " announces ", nrpts, " x ", w2,
                                      " entry lines; a file of ", in.size(), " bytes holds at most ", max_nrpts * w2,
                                      " (>= ", kMinEntryBytes, " bytes each)"));

    std::vector<std::int64_t> ndegen;
    ndegen.reserve(static_cast<size_t>(nrpts));
    while (static_cast<std::int64_t>(ndegen.size()) < nrpts) {
        if (!in.next_line())
            throw in.file_error(detail::concat("ends after ", ndegen.size(), " of nrpts = ", nrpts,
                                               " degeneracy weights (line ", in.line_number() + 1, ")"));
        const std::int64_t want = std::min<std::int64_t>(15, nrpts - static_cast<std::int64_t>(ndegen.size()));
        if (in.overlong() || static_cast<std::int64_t>(in.tokens().size()) != want)
            throw in.error(detail::concat("expected ", want, " degeneracy weights ndegen(R) (15 per line, ", nrpts,
                                          " in all), found ", in.tokens().size(), in.overlong() ? " or more" : ""));
        for (const auto& t : in.tokens()) {
            std::int64_t v = 0;
            if (!token_integer(t, v) || v < 1 || v > (std::int64_t(1) << 40))
                throw in.error("a degeneracy weight ndegen(R) is not an integer >= 1");
            ndegen.push_back(v);
        }
    }

    HrHamiltonian h;
    h.num_wann = num_wann;
    h.terms.reserve(static_cast<size_t>(nrpts));
    std::unordered_map<std::uint64_t, std::size_t> index;
    index.reserve(static_cast<size_t>(nrpts));
    std::vector<std::vector<bool>> seen;
    seen.reserve(static_cast<size_t>(nrpts));
    const std::int64_t expected = nrpts * w2;
    std::int64_t entries = 0;
    while (in.next_line()) {
        if (in.tokens().empty() && !in.overlong()) continue;  // blank lines are allowed
        if (entries == expected)
            throw in.error(detail::concat("a line after the last of the nrpts x num_wann^2 = ", expected, " entry lines"));
        const Entry e = parse_entry(in, num_wann);
        auto [it, added] = index.try_emplace(cell_key(e.r), h.terms.size());
        if (added) {
            if (static_cast<std::int64_t>(h.terms.size()) == nrpts)
                throw in.error(detail::concat("R = (", e.r[0], ", ", e.r[1], ", ", e.r[2], ") is one more than the nrpts = ",
                                              nrpts, " distinct cell vectors the header announces"));
            h.terms.push_back({e.r, std::vector<complex_type>(static_cast<size_t>(w2))});
            seen.emplace_back(static_cast<size_t>(w2), false);
        }
        const std::size_t k = it->second;
        const std::size_t at = static_cast<size_t>(e.m) * static_cast<size_t>(num_wann) + static_cast<size_t>(e.n);
        if (seen[k][at])
            throw in.error(detail::concat("duplicate entry R = (", e.r[0], ", ", e.r[1], ", ", e.r[2], "), m = ", e.m + 1,
                                          ", n = ", e.n + 1));
        seen[k][at] = true;
        const double weight = static_cast<double>(ndegen[k]);
        h.terms[k].block[at] = complex_type(e.value.real() / weight, e.value.imag() / weight);
        h.real = h.real && e.value.imag() == 0.0;
        ++entries;
    }
    if (entries < expected)
        throw in.error(detail::concat("the file ends after ", entries, " of nrpts x num_wann^2 = ", expected,
                                      " entry lines (truncated?)"));
    seen.clear();
    h.file = in.finish();

    // Hermiticity: H(-R) = H(R)^dagger within 1e-12 of the largest entry.
    double largest = 0.0;
    for (const auto& t : h.terms)
        for (const complex_type& v : t.block) largest = std::max(largest, std::abs(v));
    const double tolerance = 1e-12 * largest;
    for (const auto& t : h.terms) {
        const auto partner = index.find(cell_key({-t.r[0], -t.r[1], -t.r[2]}));
        const std::vector<complex_type>* other = partner == index.end() ? nullptr : &h.terms[partner->second].block;
        for (int m = 0; m < num_wann; ++m)
            for (int n = 0; n < num_wann; ++n) {
                const complex_type a = t.block[static_cast<size_t>(m * num_wann + n)];
                const complex_type b = other ? std::conj((*other)[static_cast<size_t>(n * num_wann + m)]) : complex_type(0.0, 0.0);
                if (std::abs(a - b) <= tolerance) continue;
                const std::int64_t line = line_of_entry(path, num_wann, nrpts, t.r, m, n);
                throw InputError(detail::concat(
                    "{model_file} ", path, " line ", line, ": H is not Hermitian: H(R)[m, n] for R = (", t.r[0], ", ", t.r[1],
                    ", ", t.r[2], "), m = ", m + 1, ", n = ", n + 1, " differs from conj(H(-R)[n, m]) by ", std::abs(a - b),
                    other ? "" : " (no -R in the file)", " (allowed: <= 1e-12 x the largest |H(R)[m, n]| = ", tolerance, ")"));
            }
    }
    return h;
}

}  // namespace topokpm::hamiltonians::file_models
