// The CPU stencil operator's construction: the row tables and the shifted-load, site and strip
// forms built from them, and the factories (the design: stencil_operator.hpp).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

#include "numerics/cpu/stencil_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace kernels::cpu::stencil {

CpuStencilOperator::CpuStencilOperator(std::shared_ptr<const BlockStencil> s, Precision precision,
                                       const StencilTuning& tuning)
    : held_(std::move(s)), s_(held(held_)), precision_(precision), tuning_(tuning)
{
    s_.validate();
    TOPOKPM_USER_REQUIRE(tuning.tblock_lines >= -1, "{tblock_lines} ", tuning.tblock_lines, ": must be >= -1");
    TOPOKPM_USER_REQUIRE(tuning.tblock_strip_sites >= 0, "{tblock_strip_sites} ", tuning.tblock_strip_sites,
                         ": must be >= 0");
    TOPOKPM_USER_REQUIRE(tuning.site_prefetch_bytes >= -1, "{site_prefetch_bytes} ", tuning.site_prefetch_bytes,
                         ": must be >= -1");
    const auto& t = tuning.tiles;
    TOPOKPM_USER_REQUIRE((t[0] == 0 && t[1] == 0 && t[2] == 0) || (t[0] > 0 && t[1] > 0 && t[2] > 0),
                         "{stencil_tiles} ", t[0], ",", t[1], ",", t[2], ": all 0 (the rule) or all >= 1");
    nb_ = s_.orbitals;
    extent_ = {s_.nx, s_.ny, s_.nz};
    periodic_ = s_.periodic;
    // Groups run along z; a lattice with nz = 1 (graphene) would give one-site columns.
    // Relabel (x, y, z) -> (1, x, y) while z is trivial: the site index z + nz (y + ny x)
    // is unchanged, so the vectors and the potential keep their order.
    int rotations = 0;
    while (extent_[2] == 1 && (extent_[0] > 1 || extent_[1] > 1)) {
        extent_ = {extent_[2], extent_[0], extent_[1]};
        periodic_ = {periodic_[2], periodic_[0], periodic_[1]};
        ++rotations;
    }
    auto rotate = [rotations](std::array<int, 3> d) {
        for (int i = 0; i < rotations; ++i) d = {d[2], d[0], d[1]};
        return d;
    };
    // Merge terms with equal offsets; offset (0, 0, 0) joins the on-site block. In a field
    // each term keeps its own phases: no two may merge (the models' terms are distinct).
    std::vector<complex_type> onsite = s_.onsite;
    std::vector<std::vector<complex_type>> blocks;
    for (size_t ti = 0; ti < s_.terms.size(); ++ti) {
        const StencilTerm& t = s_.terms[ti];
        const std::array<int, 3> d = rotate({t.dx, t.dy, t.dz});
        const auto it = std::find(offsets_.begin(), offsets_.end(), d);
        TOPOKPM_REQUIRE(!s_.field.active() || (d != std::array<int, 3>{0, 0, 0} && it == offsets_.end()),
                        name(), ": a term of offset (", t.dx, ", ", t.dy, ", ", t.dz,
                        ") would merge with another, which a field's phases do not allow");
        if (d == std::array<int, 3>{0, 0, 0}) {
            for (size_t i = 0; i < onsite.size(); ++i) onsite[i] += t.block[i];
            continue;
        }
        if (it == offsets_.end()) {
            offsets_.push_back(d);
            blocks.push_back(t.block);
            term_dy_.push_back(t.dy);
        } else {
            std::vector<complex_type>& blk = blocks[static_cast<size_t>(it - offsets_.begin())];
            for (size_t i = 0; i < blk.size(); ++i) blk[i] += t.block[i];
        }
    }
    const complex_type zero(0.0, 0.0);
    entries_.resize(static_cast<size_t>(nb_));
    for (int o = 0; o < nb_; ++o) {
        for (int b = 0; b < nb_; ++b)
            if (onsite[o * nb_ + b] != zero) entries_[o].push_back({-1, b, onsite[o * nb_ + b]});
        for (size_t t = 0; t < blocks.size(); ++t)
            for (int b = 0; b < nb_; ++b)
                if (blocks[t][o * nb_ + b] != zero) entries_[o].push_back({static_cast<int>(t), b, blocks[t][o * nb_ + b]});
        width_ = std::max(width_, static_cast<int>(entries_[o].size()));
    }
    width_ = std::max(width_, 1);
    // Real couplings (graphene): the sweep multiplies real table values into the complex
    // vectors, half the multiplications of complex ones (B = 2 only: the one real model).
    real_ = nb_ == 2 && !s_.field.active();
    for (const auto& row : entries_)
        for (const RowEntry& e : row) real_ = real_ && e.v.imag() == 0.0;
    for (const auto& d : offsets_)
        dlin_.push_back(d[2] + std::ptrdiff_t(extent_[2]) * (d[1] + std::ptrdiff_t(extent_[1]) * d[0]));
    // Interior box: lo <= q < hi in every direction means q + d inside for every term.
    for (int k = 0; k < 3; ++k) {
        int below = 0, above = 0;
        for (const auto& d : offsets_) {
            below = std::max(below, -d[k]);
            above = std::max(above, d[k]);
        }
        lo_[k] = below;
        hi_[k] = extent_[k] - above;
    }
    storage_bytes_ = 8.0 * static_cast<double>(s_.potential.size()) +
                     16.0 * static_cast<double>(s_.onsite.size() * (1 + s_.terms.size())) +
                     16.0 * static_cast<double>(s_.field.along.size() + s_.field.across.size());
    // A constant potential (clean graphene: 0) is not read per row.
    uniform_potential_ = std::all_of(s_.potential.begin(), s_.potential.end(),
                                     [&](double v) { return v == s_.potential.front(); });
    if (s_.field.active()) {
        // In a field every group takes the checked path, which puts each entry's phase on
        // it (checked_table): no interior box, no shifted-load, site or strip forms.
        lo_ = {0, 0, 0};
        hi_ = {0, 0, 0};
        return;
    }
    // The tables of this operator's precision only (the other one stays empty: nd = 0,
    // line = 0, the checked paths): a single operator sweeps double blocks in float.
    if (precision_ == Precision::Single) {
        shift_table(shift_single_);
        line_ends(line_ends_single_, shift_single_);
    } else {
        shift_table(shift_double_);
        line_ends(line_ends_double_, shift_double_);
    }
    if (nb_ == 4) {
        if (precision_ == Precision::Single) build_site_form(site_single_, onsite, blocks);
        else build_site_form(site_double_, onsite, blocks);
    }
    build_wide_form();
}

/// The shifted-load form of the rows (ShiftTable), values rounded to T; t.nd = 0 when
/// it does not apply (more than kMax distinct offsets, or kLanes % B != 0).
template <class T>
void CpuStencilOperator::shift_table(ShiftTable<T>& t) const
{
    constexpr int L = ShiftTable<T>::kLanes;
    t = ShiftTable<T>{};
    if (L % nb_ != 0) return;
    int nd = 0;
    std::vector<T> vr(2 * L * ShiftTable<T>::kMax, T(0)), vi(vr.size(), T(0));
    for (int l = 0; l < L; ++l) {
        const int o = l % nb_;
        for (const RowEntry& e : entries_[o]) {
            const std::ptrdiff_t dl = e.term < 0 ? 0 : dlin_[e.term];
            const std::ptrdiff_t d = std::ptrdiff_t(nb_) * dl + e.b - o;  // column - row
            int i = 0;
            while (i < nd && t.offset[i] != d) ++i;
            if (i == nd) {
                if (nd == ShiftTable<T>::kMax) return;  // t.nd stays 0
                t.offset[nd++] = d;
            }
            vr[2 * L * i + 2 * l] = vr[2 * L * i + 2 * l + 1] = static_cast<T>(e.v.real());
            vi[2 * L * i + 2 * l] = vi[2 * L * i + 2 * l + 1] = static_cast<T>(e.v.imag());
        }
    }
    if (nd == 0) return;  // no entries at all: the other paths handle it
    vr.resize(2 * L * nd);
    vi.resize(2 * L * nd);
    t.vr = std::move(vr);
    t.vi = std::move(vi);
    t.lo = *std::min_element(t.offset.begin(), t.offset.begin() + nd);
    t.hi = *std::max_element(t.offset.begin(), t.offset.begin() + nd) + L - 1;
    t.nd = nd;
}

/// SiteForm tables from the merged on-site block and term blocks (B = 4), values rounded
/// to T. Not built when the classes would be many (tiny extents with long-range terms):
/// the other paths run.
template <class T>
void CpuStencilOperator::build_site_form(SiteForm<T>& f, const std::vector<complex_type>& onsite,
                                         const std::vector<std::vector<complex_type>>& blocks)
{
    std::array<std::vector<int>, 3> rep;  // per direction and class: a coordinate of it
    for (int k = 0; k < 3; ++k) {
        const int n = extent_[k];
        f.cls[k].assign(static_cast<size_t>(n), 0);
        for (int q = 0; q < n; ++q) {
            int c = q;  // boundary coordinates (and all, when there is no interior): their own class
            if (hi_[k] > lo_[k]) c = q < lo_[k] ? q : (q < hi_[k] ? lo_[k] : lo_[k] + 1 + (q - hi_[k]));
            f.cls[k][static_cast<size_t>(q)] = c;
            if (c >= static_cast<int>(rep[k].size())) rep[k].push_back(q);
        }
        f.ncls[k] = static_cast<int>(rep[k].size());
    }
    const size_t count = static_cast<size_t>(f.ncls[0]) * f.ncls[1] * f.ncls[2];
    if (count > 512) return;
    f.classes.resize(count);
    for (int ax = 0; ax < f.ncls[0]; ++ax)
        for (int ay = 0; ay < f.ncls[1]; ++ay)
            for (int az = 0; az < f.ncls[2]; ++az) {
                const std::array<int, 3> q = {rep[0][static_cast<size_t>(ax)], rep[1][static_cast<size_t>(ay)],
                                              rep[2][static_cast<size_t>(az)]};
                struct Item {
                    std::ptrdiff_t off;
                    int c;
                    int block;  // the add_block call that made it
                    std::array<double, 8> vr, vi;
                    bool re, im;
                };
                std::vector<Item> items;
                int blocks_added = 0;
                auto add_block = [&](const std::vector<complex_type>& blk, std::ptrdiff_t dsite) {
                    const int block = blocks_added++;
                    for (int c = 0; c < 4; ++c) {
                        Item it{8 * dsite, c, block, {}, {}, false, false};
                        for (int o = 0; o < 4; ++o) {
                            complex_type v = blk[static_cast<size_t>(o * 4 + (o ^ c))];
                            v = complex_type(static_cast<T>(v.real()), static_cast<T>(v.imag()));
                            it.vr[2 * o] = it.vr[2 * o + 1] = v.real();
                            it.vi[2 * o] = it.vi[2 * o + 1] = v.imag();
                            it.re = it.re || v.real() != 0.0;
                            it.im = it.im || v.imag() != 0.0;
                        }
                        if (it.re || it.im) items.push_back(it);
                    }
                };
                add_block(onsite, 0);
                for (size_t t = 0; t < offsets_.size(); ++t) {
                    std::array<std::ptrdiff_t, 3> delta{};
                    bool dropped = false;
                    for (int k = 0; k < 3; ++k) {
                        const int qn = neighbour_coord(q[k] + offsets_[t][k], extent_[k], periodic_[k]);
                        dropped = dropped || qn < 0;
                        delta[k] = qn - q[k];
                    }
                    if (dropped) continue;
                    add_block(blocks[t], delta[2] + std::ptrdiff_t(extent_[2]) * (delta[1] + std::ptrdiff_t(extent_[1]) * delta[0]));
                }
                typename SiteForm<T>::Class& cl =
                    f.classes[(static_cast<size_t>(ax) * f.ncls[1] + ay) * f.ncls[2] + az];
                // The grouped items (double R = 4, 8; float R = 8), from the items in block order:
                // the Re-only and Im-only items by block, then each "both" item as a group of its
                // own (its Re part, then its Im part). Each kind's items then come in the order
                // of the double sort below, "both" items last.
                const auto both = [](const Item& it) { return it.re && it.im; };
                int last_block = -1;
                for (const Item& it : items) {
                    if (both(it)) continue;
                    if (it.block != last_block) {
                        cl.group_off.push_back(it.off);
                        cl.group_first.push_back(static_cast<int>(cl.item_code.size()));
                        last_block = it.block;
                    }
                    cl.item_code.push_back(it.re ? it.c : 4 + it.c);
                    for (int o = 0; o < 4; ++o) cl.item_val.push_back(static_cast<T>(it.re ? it.vr[2 * o] : it.vi[2 * o]));
                }
                for (const Item& it : items) {
                    if (!both(it)) continue;
                    cl.group_off.push_back(it.off);
                    cl.group_first.push_back(static_cast<int>(cl.item_code.size()));
                    for (const int part : {0, 1}) {
                        cl.item_code.push_back(4 * part + it.c);
                        for (int o = 0; o < 4; ++o)
                            cl.item_val.push_back(static_cast<T>(part == 0 ? it.vr[2 * o] : it.vi[2 * o]));
                    }
                }
                cl.group_first.push_back(static_cast<int>(cl.item_code.size()));
                // Double: by kind (Re only, Im only, both), in block order within a kind.
                // Float: by kind, then by the diagonal c (each run of one c: a fixed permute).
                auto kind = [](const Item& it) { return it.re && it.im ? 2 : (it.re ? 0 : 1); };
                std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
                    if constexpr (std::is_same_v<T, double>) return kind(a) < kind(b);
                    else return 4 * kind(a) + a.c < 4 * kind(b) + b.c;
                });
                for (const Item& it : items) {
                    (it.re && it.im ? cl.n_both : (it.re ? cl.n_re : cl.n_im))++;
                    if constexpr (!std::is_same_v<T, double>) ++cl.first[static_cast<size_t>(4 * kind(it) + it.c) + 1];
                    cl.off.push_back(it.off);
                    if constexpr (std::is_same_v<T, double>) {
                        simd::v8l ix;
                        for (int o = 0; o < 4; ++o) {
                            ix[2 * o] = 2 * (o ^ it.c);
                            ix[2 * o + 1] = 2 * (o ^ it.c) + 1;
                        }
                        cl.idx.push_back(ix);
                    }
                    typename SiteForm<T>::Lanes lr, li;  // float: the 8 lanes of a site, twice
                    for (int l = 0; l < static_cast<int>(sizeof lr / sizeof(T)); ++l) {
                        lr[l] = static_cast<T>(it.vr[static_cast<size_t>(l % 8)]);
                        li[l] = static_cast<T>(it.vi[static_cast<size_t>(l % 8)]);
                    }
                    cl.vr.push_back(lr);
                    cl.vi.push_back(li);
                    cl.diag.push_back(it.c);
                    if constexpr (std::is_same_v<T, double>)
                        for (int h = 0; h < 2; ++h) {
                            simd::v8d r2, i2;
                            for (int l = 0; l < 8; ++l) {
                                r2[l] = it.vr[static_cast<size_t>(2 * (2 * h + l / 4))];
                                i2[l] = it.vi[static_cast<size_t>(2 * (2 * h + l / 4))];
                            }
                            cl.vr2.push_back(r2);
                            cl.vi2.push_back(i2);
                        }
                }
                for (size_t k = 1; k < cl.first.size(); ++k) cl.first[k] += cl.first[k - 1];
            }
    f.ok = true;
}

/// The rows as a 2-D stencil for two_steps_wide (R > 1): lines along the relabelled
/// direction 1, sites along 2; only where direction 0 is trivial and no term reaches
/// beyond the adjacent line.
void CpuStencilOperator::build_wide_form()
{
    wide_ok_ = extent_[0] == 1;
    for (const auto& d : offsets_) wide_ok_ = wide_ok_ && d[0] == 0 && std::abs(d[1]) <= 1;
    if (!wide_ok_) return;
    kernels::cpu::WideStencil2D& w = wide_;
    w.lines = extent_[1];
    w.sites = extent_[2];
    w.orbitals = nb_;
    w.periodic_lines = periodic_[1];
    w.periodic_sites = periodic_[2];
    w.real = true;
    w.rows.assign(static_cast<size_t>(nb_), {});
    for (int o = 0; o < nb_; ++o)
        for (const RowEntry& e : entries_[static_cast<size_t>(o)]) {
            const std::array<int, 3> d = e.term < 0 ? std::array<int, 3>{0, 0, 0} : offsets_[static_cast<size_t>(e.term)];
            w.rows[static_cast<size_t>(o)].push_back({d[1], d[2], e.b, e.v.real(), e.v.imag()});
            w.site_reach = std::max(w.site_reach, std::abs(d[2]));
            w.real = w.real && e.v.imag() == 0.0;
        }
    w.potential = s_.potential.data();
    w.per_row = s_.potential_per_row();
    w.uniform_potential = uniform_potential_ && !s_.potential.empty();
}

}  // namespace kernels::cpu::stencil

std::unique_ptr<Operator> make_cpu_stencil_operator(BlockStencil stencil)
{
    return make_cpu_stencil_operator(std::move(stencil), Precision::Double, StencilTuning{});
}

std::unique_ptr<Operator> make_cpu_stencil_operator(BlockStencil stencil, Precision precision,
                                                    const StencilTuning& tuning)
{
    return make_cpu_stencil_operator(std::make_shared<const BlockStencil>(std::move(stencil)), precision, tuning);
}

std::unique_ptr<Operator> make_cpu_stencil_operator(std::shared_ptr<const BlockStencil> stencil, Precision precision,
                                                    const StencilTuning& tuning)
{
    return std::make_unique<kernels::cpu::stencil::CpuStencilOperator>(std::move(stencil), precision, tuning);
}

}  // namespace topokpm::numerics
