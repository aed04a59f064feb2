#include "hamiltonians/field/magnetic_field.hpp"

#include <cctype>
#include <cmath>
#include <numeric>

#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians {

namespace {

constexpr const char* kAllowedFlux =
    "allowed: p/q with integers |p| <= 10^9, 1 <= q <= 10^9, or a decimal with at most 9 digits after the point, "
    "e.g. 1/400 or 0.0025; flux quanta h/e per unit cell";

[[noreturn]] void bad_flux(const std::string& text, const char* why)
{
    throw InputError(detail::concat("{magnetic_flux} '", text, "': ", why, " (", kAllowedFlux, ")"));
}

/// Digits only, 1 .. max_digits of them, as an integer.
std::int64_t digits_value(const std::string& text, const std::string& digits, std::size_t max_digits)
{
    if (digits.empty() || digits.size() > max_digits) bad_flux(text, "not a flux");
    std::int64_t v = 0;
    for (char c : digits) {
        if (!std::isdigit(static_cast<unsigned char>(c))) bad_flux(text, "not a flux");
        v = 10 * v + (c - '0');
    }
    return v;
}

std::int64_t ceil_multiple(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

/// x mod m in [0, m), m >= 1.
std::int64_t residue(std::int64_t x, std::int64_t m)
{
    const std::int64_t r = x % m;
    return r < 0 ? r + m : r;
}

/// a b mod m for 0 <= a, b < m < 2^40, in 64-bit steps below 2^63: b = b_hi 2^18 + b_lo.
std::int64_t mulmod(std::int64_t a, std::int64_t b, std::int64_t m)
{
    std::int64_t r = a * (b >> 18) % m;
    r = (r << 18) % m;
    return (r + a * (b & 0x3ffff)) % m;
}

}  // namespace

std::string MagneticFlux::text() const
{
    return denominator == 1 ? std::to_string(numerator) : detail::concat(numerator, "/", denominator);
}

MagneticFlux parse_magnetic_flux(const std::string& text)
{
    std::string body = text;
    bool negative = false;
    if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
        negative = body[0] == '-';
        body.erase(0, 1);
    }
    // Terms of up to 18 digits fit 64 bits; the reduced fraction is checked against 10^9 below.
    std::int64_t num = 0, den = 1;
    if (const std::size_t slash = body.find('/'); slash != std::string::npos) {
        num = digits_value(text, body.substr(0, slash), 18);
        den = digits_value(text, body.substr(slash + 1), 18);
        if (den == 0) bad_flux(text, "denominator 0");
    } else {
        const std::size_t point = body.find('.');
        const std::string whole = body.substr(0, point);
        const std::string frac = point == std::string::npos ? std::string() : body.substr(point + 1);
        if (point != std::string::npos && frac.empty()) bad_flux(text, "not a flux");
        if (frac.size() > 9) bad_flux(text, "more than 9 digits after the point");
        num = digits_value(text, whole, 9);
        for (char c : frac) {
            if (!std::isdigit(static_cast<unsigned char>(c))) bad_flux(text, "not a flux");
            num = 10 * num + (c - '0');
            den *= 10;
        }
    }
    const std::int64_t g = std::gcd(num, den);
    num /= g;
    den /= g;
    if (num > kMaxFluxTerm || den > kMaxFluxTerm) bad_flux(text, "out of range");
    return {negative ? -num : num, den};
}

LatticeSize smallest_admissible_lattice(const MagneticFlux& flux, std::int64_t nx, std::int64_t ny,
                                        std::int64_t multiple_of)
{
    // Nx' Ny' PHI is an integer iff q | Nx' Ny' (p and q coprime), i.e. g | Nx' and q/g | Ny'
    // for the divisor g = gcd(Nx', q). For each divisor g the smallest such pair takes the
    // least multiples >= (nx, ny); every admissible lattice is at least as large as the
    // pair of its own g, so the least of these pairs is the smallest.
    const std::int64_t q = flux.denominator, p = multiple_of;
    LatticeSize best{};
    long double best_area = -1;  // exact below 2^64 cells
    const auto consider = [&](std::int64_t g) {
        const std::int64_t mx = std::lcm(g, p), my = std::lcm(q / g, p);
        const LatticeSize c{ceil_multiple(nx, mx), ceil_multiple(ny, my)};
        const long double area = static_cast<long double>(c.nx) * static_cast<long double>(c.ny);
        if (best_area < 0 || area < best_area || (area == best_area && c.nx < best.nx)) {
            best = c;
            best_area = area;
        }
    };
    for (std::int64_t d = 1; d * d <= q; ++d)
        if (q % d == 0) {
            consider(d);
            consider(q / d);
        }
    return best;
}

void require_stencil_carries_field(const MagneticFlux& flux, bool file_model)
{
    TOPOKPM_USER_REQUIRE(flux.zero() || !file_model, "{matrix} free with {magnetic_flux} ", flux.text(),
                         ": the Peierls phases at model hr's positions, which the matrix-free stencil does not carry "
                         "(use --matrix sell or crs)");
}

void append_field_attributes(AttributeList& attributes, const MagneticFlux& flux, const std::string& origin)
{
    if (flux.zero()) return;
    attributes.push_back({"magnetic_flux", flux.value()});
    attributes.push_back({"magnetic_flux_fraction", flux.text()});
    attributes.push_back(
        {"gauge", "landau: r = r0 + u a1 + v a2, r0 = " + origin +
                      "; A = -(Phi_0 PHI / A_cell) v grad u; the hop j -> i has phase -2 pi PHI [(v_i + v_j')/2 (u_i - u_j') "
                      "+ ky Ny u_j], j' = j + kx Nx a1 + ky Ny a2 the image of j next to i"});
}

PeierlsGauge::PeierlsGauge(const MagneticFlux& flux, int ny, int scale) : flux_(flux), ny_(ny), scale_(scale) {}

complex_type PeierlsGauge::hop(std::int64_t vi, std::int64_t du, std::int64_t dv, std::int64_t uj, std::int64_t ky,
                               const RealParts& real) const
{
    if (flux_.zero()) return {1.0, 0.0};
    // theta / (2 pi) = -PHI [(v_i + v_j')/2 (u_i - u_j') + ky Ny u_j] with u = U / s:
    //                = p [(2 V_i + dV) dU - 2 s ky Ny U_j] / (2 s^2 q),
    // reduced modulo den = 2 s^2 q < 2^37 (s <= 6, q <= 10^9) in exact integer steps:
    // positions are below 2^35 (int extents), |dU| <= 2 s, |ky| <= 1, |p| <= 10^9.
    const std::int64_t den = 2 * scale_ * scale_ * flux_.denominator;
    const std::int64_t wrap = mulmod(residue(2 * scale_ * ky * ny_, den), residue(uj, den), den);
    const std::int64_t bracket = residue(residue((2 * vi + dv) * du, den) - wrap, den);
    std::int64_t r = mulmod(bracket, residue(flux_.numerator, den), den);  // in [0, den)
    // Symmetric residue in (-den/2, den/2]: the reverse hop has -r (or den/2, when the
    // phase is -1), so cos and sin of -x give the exact conjugate.
    if (2 * r > den) r -= den;
    if (!real.zero()) {
        // With u = U/s + a, v = V/s + b the bracket gains
        //   X = [(2 V_i + dV)/s (a_j - a_i) + (b_i + b_j) (dU/s + a_j - a_i)] / 2 - ky Ny a_j,
        // the phase PHI X (in turns), reduced modulo 1 before it joins r / den.
        const double s = static_cast<double>(scale_);
        const double da = real.uj - real.ui;
        const double x = (static_cast<double>(2 * vi + dv) / s * da + (real.vi + real.vj) * (static_cast<double>(du) / s + da)) / 2.0 -
                         static_cast<double>(ky * ny_) * real.uj;
        double turns = flux_.value() * x;
        turns -= std::nearbyint(turns);
        const double angle = 2.0 * M_PI * (static_cast<double>(r) / static_cast<double>(den) + turns);
        return {std::cos(angle), std::sin(angle)};
    }
    if (r == 0) return {1.0, 0.0};
    if (2 * r == den) return {-1.0, 0.0};
    if (4 * r == den) return {0.0, 1.0};
    if (4 * r == -den) return {0.0, -1.0};
    const double angle = 2.0 * M_PI * (static_cast<double>(r) / static_cast<double>(den));
    return {std::cos(angle), std::sin(angle)};
}

}  // namespace topokpm::hamiltonians
