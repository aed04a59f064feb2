// The reference (naive) matrix-free operator of a BlockStencil: plain loops in the order
// the formula of block_stencil.hpp is written, a field's Peierls phases on each entry.
#include "tests/support/block_stencil_reference.hpp"

#include <array>
#include <cstdlib>

#include "numerics/base/block_stencil.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::testing {
namespace {

class BlockStencilReference final : public Operator {
public:
    explicit BlockStencilReference(BlockStencil s) : s_(std::move(s)) { s_.validate(); }

    global_index num_rows() const override { return s_.num_rows(); }
    std::string name() const override { return "reference-stencil-" + s_.name; }
    OperatorCost cost() const override
    {
        const double bytes = 8.0 * static_cast<double>(s_.potential.size());
        return {static_cast<double>(s_.num_nonzeros()), bytes, bytes};
    }

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        const int r = x.num_cols();
        if (dots) dots->reset(r);
        const int nb = s_.orbitals;
        const std::array<int, 3> extent{s_.nx, s_.ny, s_.nz};
        const complex_type* xp = x.data();
        complex_type* yp = y.data();
        for (global_index site = 0; site < s_.num_sites(); ++site) {
            const std::array<int, 3> pos{static_cast<int>(site / (global_index(s_.ny) * s_.nz)),
                                         static_cast<int>((site / s_.nz) % s_.ny), static_cast<int>(site % s_.nz)};
            for (int o = 0; o < nb; ++o) {
                const global_index row = o + nb * site;
                const double v = s_.potential_per_row() ? s_.potential[row] : s_.potential[site];
                for (int c = 0; c < r; ++c) {
                    complex_type acc = v * xp[row * r + c];
                    for (int b = 0; b < nb; ++b)
                        acc += entry(s_.onsite[o * nb + b], 0, o, b, pos, 0) * xp[(b + nb * site) * r + c];
                    for (std::size_t ti = 0; ti < s_.terms.size(); ++ti) {
                        const StencilTerm& t = s_.terms[ti];
                        const std::array<int, 3> d{t.dx, t.dy, t.dz};
                        std::array<int, 3> q{};
                        bool inside = true;
                        for (int k = 0; k < 3; ++k) {
                            q[k] = pos[k] + d[k];
                            if (q[k] < 0 || q[k] >= extent[k]) {
                                if (!s_.periodic[k]) inside = false;
                                q[k] = ((q[k] % extent[k]) + extent[k]) % extent[k];
                            }
                        }
                        if (!inside) continue;
                        const global_index nsite = q[2] + global_index(s_.nz) * (q[1] + global_index(s_.ny) * q[0]);
                        for (int b = 0; b < nb; ++b)
                            acc += entry(t.block[o * nb + b], static_cast<int>(ti) + 1, o, b, pos, t.dy) *
                                   xp[(b + nb * nsite) * r + c];
                    }
                    const complex_type xi = xp[row * r + c];
                    complex_type yi = ops.scale * (acc - ops.shift * xi);
                    if (ops.beta != 0.0) yi += ops.beta * yp[row * r + c];  // beta == 0: never read y
                    yp[row * r + c] = yi;
                    if (dots) {
                        dots->xx[c] += std::norm(xi);
                        dots->yx[c] += std::conj(yi) * xi;
                    }
                }
            }
        }
    }

private:
    /// The entry of a term with y step dy with its Peierls phase in a field (BlockStencil::phased),
    /// else itself.
    complex_type entry(complex_type v, int slot, int o, int b, const std::array<int, 3>& pos, int dy) const
    {
        return s_.phased(v, slot, o, b, pos[0], pos[1], dy);
    }

    BlockStencil s_;
};

}  // namespace

std::unique_ptr<Operator> make_block_stencil_reference_operator(BlockStencil stencil)
{
    return std::make_unique<BlockStencilReference>(std::move(stencil));
}

}  // namespace topokpm::testing
