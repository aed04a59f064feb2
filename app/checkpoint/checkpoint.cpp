#include "app/checkpoint/checkpoint.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <new>
#include <algorithm>
#include <exception>
#include <functional>
#include <optional>

#include "analysis/result_file.hpp"
#include "app/checkpoint/checksum.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {
namespace {

constexpr const char* kFormat = "topokpm-checkpoint";
constexpr std::int64_t kFormatVersion = 2;  // 2: CRC-64 checksums, threads not compared

std::string exact(double v)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

/// A digest that tells two row or momentum lists apart: the CRC-64 of the values as
/// little-endian int64.
std::string digest(const std::vector<std::int64_t>& values)
{
    std::uint64_t crc = 0;
    for (const std::int64_t v : values) {
        unsigned char bytes[8];
        for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * b));
        crc = crc64(bytes, sizeof bytes, crc);
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%zu values, crc64 %016llx", values.size(), static_cast<unsigned long long>(crc));
    return buf;
}

constexpr const char* kChecksums = "/checkpoint/checksums";

/// The name of a dataset's CRC-64 in /checkpoint/checksums: "/checkpoint/block/raw" -> "block_raw".
std::string checksum_key(std::string dataset)
{
    dataset.erase(0, std::string("/checkpoint/").size());
    std::replace(dataset.begin(), dataset.end(), '/', '_');
    return dataset;
}

// The CRCs are taken over the values' bytes in memory: the little-endian float64 the header promises.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoint CRCs assume a little-endian host");
std::uint64_t crc_of(const std::vector<double>& values) { return crc64(values.data(), values.size() * sizeof(double)); }
std::uint64_t crc64_of_text(const std::string& text) { return crc64(text.data(), text.size()); }

/// The header values that decide the moments, as exact text in a fixed order: its CRC-64
/// is the checksum `header` (not command_line and written_at, which are only reported).
std::string header_text(const CheckpointData& d, std::int64_t blocks_done, std::int64_t sweeps_done, int ranks,
                        const std::string& layout, const numerics::TwoIndexState* conductivity)
{
    std::string text = detail::concat("version ", kFormatVersion, "\nrealization ", d.realization, " of ",
                                      d.num_realizations, "\nmoments ", d.num_moments, "\nslots ", d.num_slots,
                                      "\nblocks_done ", blocks_done, "\nsweeps_done ", sweeps_done, "\nscale ",
                                      exact(d.scaling.a), " ", exact(d.scaling.b), "\nbounds ", exact(d.bounds.lower),
                                      " ", exact(d.bounds.upper), "\nranks ", ranks, " ", layout, "\nthreads ", d.threads, "\n");
    for (const auto& [key, value] : std::map<std::string, std::string>(d.parameters.begin(), d.parameters.end()))
        text += key + " = " + value + "\n";
    if (conductivity)
        text += detail::concat("conductivity ", conductivity->blocks_done, " ", conductivity->left_done, " ",
                               conductivity->left ? conductivity->left->sweeps_done : -1, "\n");
    return text;
}

/// A dataset of shape `dims` of which this rank holds the rows `runs`, one after the other at `local`.
struct RowsOf {
    const char* name;
    const double* local;
    std::vector<analysis::RowRun> runs;
    std::vector<std::uint64_t> dims;
    analysis::Meaning meaning = {};  ///< unit and description, where the set is written
    std::uint64_t row_values() const
    {
        std::uint64_t n = 1;
        for (std::size_t i = 1; i < dims.size(); ++i) n *= dims[i];
        return n;
    }
    std::uint64_t local_values() const
    {
        std::uint64_t n = 0;
        for (const analysis::RowRun& r : runs) n += r.count;
        return n * row_values();
    }
};

/// The CRC-64 of each dataset in `sets`, put together from every rank's rows (collective
/// through ranks.gather when ranks.size > 1; every rank gets the same values). `ok` =
/// false: this rank could not read its rows (`local` is not looked at); then, or when any
/// other rank says so, nullopt on every rank.
std::optional<std::vector<std::uint64_t>> crcs_of_rows(const std::vector<RowsOf>& sets, bool ok,
                                                       const CheckpointRanks& ranks)
{
    // Per rank: ok, then for each set its number of pieces and (offset, bytes, crc) each.
    std::vector<std::uint64_t> mine{ok ? 1U : 0U};
    for (const RowsOf& set : sets) {
        mine.push_back(set.runs.size());
        std::uint64_t at = 0;
        for (const analysis::RowRun& run : set.runs) {
            const std::uint64_t count = run.count * set.row_values();
            mine.insert(mine.end(), {run.begin * set.row_values() * sizeof(double), count * sizeof(double),
                                     ok ? crc64(set.local + at, count * sizeof(double)) : 0});
            at += count;
        }
    }
    const bool collective = ranks.size > 1;
    TOPOKPM_REQUIRE(!collective || bool(ranks.gather), "checkpoint CRCs of several ranks without a gather");
    const std::vector<std::uint64_t> all = collective ? ranks.gather(mine) : mine;
    std::vector<std::vector<CrcPiece>> pieces(sets.size());
    bool all_ok = true;
    std::size_t i = 0;
    for (int r = 0; r < (collective ? ranks.size : 1); ++r) {
        all_ok = all.at(i++) == 1 && all_ok;
        for (auto& list : pieces)
            for (std::uint64_t k = all.at(i++); k > 0; --k, i += 3) list.push_back({all.at(i), all.at(i + 1), all.at(i + 2)});
    }
    if (!all_ok) return std::nullopt;
    std::vector<std::uint64_t> crcs;
    for (std::size_t s = 0; s < sets.size(); ++s) {
        const std::optional<std::uint64_t> crc =
            crc64_of_pieces(pieces[s], sets[s].dims[0] * sets[s].row_values() * sizeof(double));
        TOPOKPM_REQUIRE(crc.has_value(), "the ranks' rows of ", sets[s].name, " do not tile the dataset");
        crcs.push_back(*crc);
    }
    return crcs;
}

/// The two-index state of several ranks, row-wise (checkpoint.hpp): each rank's own sums and
/// left raw moments (its row of rank_sums, left/rank_raw) and its rows of the left vectors.
/// `c` null: the names and shapes only (a reader's; `local` is set when it has read them).
std::vector<RowsOf> conductivity_sets(const numerics::TwoIndexState* c, bool left, const CheckpointRanks& ranks,
                                      std::uint64_t slots, std::uint64_t m, std::uint64_t w)
{
    const std::uint64_t p = std::uint64_t(ranks.size);
    const std::vector<analysis::RowRun> own{{std::uint64_t(ranks.rank), 1}};
    // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
    const auto values = [](const auto* v) { return v ? reinterpret_cast<const double*>(v->data()) : nullptr; };
    std::vector<RowsOf> sets{{"/checkpoint/conductivity/rank_sums", values(c ? &c->sums : nullptr), own,
                              {p, slots * m * m * 2}, {"t^2 length^2", "Each rank's own two-index sums (re, im)."}}};
    if (!left) return sets;
    const numerics::ChebyshevState* l = c ? &*c->left : nullptr;
    const analysis::Meaning vector{"1", "A vector of the left recurrence under way (re, im)."};
    sets.push_back({"/checkpoint/conductivity/left/current", values(l ? &l->current : nullptr), ranks.rows,
                    {ranks.num_rows_global, w, 2}, vector});
    sets.push_back({"/checkpoint/conductivity/left/previous", values(l ? &l->previous : nullptr), ranks.rows,
                    {ranks.num_rows_global, w, 2}, vector});
    sets.push_back({"/checkpoint/conductivity/left/rank_raw", l ? l->raw.data() : nullptr, own,
                    {p, w * std::uint64_t(numerics::probing_trace_moments(int(m)))},
                    {"1", "Each rank's own raw moments of the left recurrence."}});
    return sets;
}

/// The datasets a checkpoint writes row-wise: the vectors of the block under way (each rank
/// its rows) and, with per-rank partial sums (`partial`), each rank's own moment sums and
/// raw block moments (its own row).
std::vector<RowsOf> row_sets(const numerics::ChebyshevState* block, const std::vector<double>& sums,
                             const CheckpointData& d, const CheckpointRanks& ranks, bool partial)
{
    const std::uint64_t w = block ? std::uint64_t(block->current.num_cols()) : 0;
    const std::uint64_t row_len = std::uint64_t(d.num_slots) * std::uint64_t(d.num_moments);
    const std::vector<analysis::RowRun> rows =
        ranks.rows.empty() ? std::vector<analysis::RowRun>{{0, block ? std::uint64_t(block->current.num_rows()) : 0}}
                           : ranks.rows;
    const std::uint64_t total_rows = ranks.rows.empty() ? rows[0].count : ranks.num_rows_global;
    const std::vector<analysis::RowRun> own{{std::uint64_t(ranks.rank), 1}};
    const std::uint64_t p = std::uint64_t(ranks.size);
    std::vector<RowsOf> sets;
    const analysis::Meaning kVectorMeaning{"1", "A vector of the block under way (re, im)."};
    const auto values = [](const BlockVector& b) {
        // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
        return reinterpret_cast<const double*>(b.data());
    };
    if (block)
        sets = {{"/checkpoint/block/current", values(block->current), rows, {total_rows, w, 2}, kVectorMeaning},
                {"/checkpoint/block/previous", values(block->previous), rows, {total_rows, w, 2}, kVectorMeaning}};
    if (partial) {
        sets.push_back(
            {"/checkpoint/rank_sums", sums.data(), own, {p, row_len}, {"1", "Each rank's own moment sums."}});
        if (block)
            sets.push_back({"/checkpoint/block/rank_raw",
                            block->raw.data(),
                            own,
                            {p, w * std::uint64_t(d.num_moments)},
                            {"1", "Each rank's own raw block moments."}});
    }
    return sets;
}

/// The attributes of /checkpoint: format, sizes, scaling and bounds, and (written by several
/// ranks) their count and layout.
AttributeList header_attributes(const CheckpointData& d, std::int64_t blocks_done, const CheckpointRanks& ranks)
{
    AttributeList header = {{"format", std::string(kFormat)},
                            {"format_version", kFormatVersion},
                            {"command_line", d.command_line},
                            {"realization", std::int64_t(d.realization)},
                            {"num_realizations", std::int64_t(d.num_realizations)},
                            {"num_moments", std::int64_t(d.num_moments)},
                            {"num_slots", d.num_slots},
                            {"blocks_done", blocks_done},
                            {"scale_a", d.scaling.a},
                            {"scale_b", d.scaling.b},
                            {"bounds_lower", d.bounds.lower},
                            {"bounds_upper", d.bounds.upper},
                            {"threads", std::int64_t(d.threads)},
                            {"written_at", utc_now()}};
    if (ranks.size > 1) header.insert(header.end(), {{"ranks", std::int64_t(ranks.size)}, {"layout", ranks.layout}});
    return header;
}

}  // namespace

RunParameters run_parameters(const RunConfig& c, const std::vector<global_index>& ldos_rows,
                             const std::vector<numerics::Momentum>& momenta)
{
    const auto& m = c.model;
    RunParameters p = {
        {"model", m.name},
        {"lattice", std::to_string(m.nx) + "x" + std::to_string(m.ny) + "x" + std::to_string(m.nz)},
        {"t", exact(m.t)},
        {"m", exact(m.m)},
        {"dot-potential", exact(m.dot_potential)},
        {"dot-radius", exact(m.dot_radius)},
        {"dot-period", std::to_string(m.dot_period)},
        {"dot-depth", std::to_string(m.dot_depth)},
        {"disorder", exact(m.disorder)},
        {"disorder-seed", std::to_string(m.disorder_seed)},
        {"boundary", m.boundary},
        {"moments", std::to_string(c.kpm.num_moments)},
        {"vectors", std::to_string(c.kpm.num_vectors)},
        {"block-width", std::to_string(c.kpm.block_width)},
        {"vector-seed", std::to_string(c.kpm.vector_seed)},
        {"trace", to_string(c.kpm.trace)},
        {"quantity", to_string(quantity(c))},
        {"realizations", std::to_string(c.kpm.realizations)},
        {"bounds", to_string(c.kpm.bounds_method)},
        {"energy-range", c.kpm.bounds_method == BoundsMethod::User
                             ? exact(c.kpm.energy_range.lower) + ":" + exact(c.kpm.energy_range.upper)
                             : std::string("none")},
        {"epsilon", exact(c.kpm.epsilon)},
        {"lanczos-steps", std::to_string(c.kpm.lanczos_steps)},
        {"matrix", to_string(c.storage.matrix)},
        {"sell-C", std::to_string(c.storage.sell_chunk_height)},
        {"sell-sigma", std::to_string(c.storage.sell_sigma)},
        {"device", to_string(c.storage.device)},
        {"precision", to_string(c.storage.precision)},
    };
    if (!m.flux.zero()) p.push_back({"magnetic-flux", m.flux.text()});  // only field runs: older checkpoints stay valid
    if (m.exchange_mass != 0.0) p.push_back({"exchange-mass", exact(m.exchange_mass)});  // likewise
    if (!c.kpm.conductivity.empty()) p.push_back({"conductivity", c.kpm.conductivity});  // likewise
    if (!c.kpm.ldos.empty()) p.push_back({"ldos", digest(std::vector<std::int64_t>(ldos_rows.begin(), ldos_rows.end()))});
    if (c.kpm.ldos_method == LdosMethod::Probing)
        p.insert(p.end(), {{"ldos-method", to_string(c.kpm.ldos_method)},
                           {"probing-distance", std::to_string(c.kpm.probing_distance)},
                           {"probing-draws", std::to_string(c.kpm.probing_draws)}});
    if (!momenta.empty()) {
        std::vector<std::int64_t> flat;
        for (const auto& k : momenta) {
            flat.push_back(k.mx);
            flat.push_back(k.my);
        }
        p.push_back({"k-points", digest(flat)});
    }
    return p;
}

std::vector<std::string> parameter_differences(const RunParameters& saved, const RunParameters& now)
{
    std::map<std::string, std::string> a(saved.begin(), saved.end()), b(now.begin(), now.end());
    std::vector<std::string> diff;
    for (const auto& [key, value] : b) {
        const auto it = a.find(key);
        if (it == a.end()) diff.push_back("--" + key + ": not in the checkpoint, this run " + value);
        else if (it->second != value) diff.push_back("--" + key + ": checkpoint " + it->second + ", this run " + value);
    }
    for (const auto& [key, value] : a)
        if (!b.count(key)) diff.push_back("--" + key + ": checkpoint " + value + ", not in this run");
    return diff;
}

void write_checkpoint(const std::string& path, const CheckpointData& d, const numerics::BlockTrace* trace,
                      const CheckpointRanks& ranks, const numerics::TwoIndexState* conductivity)
{
    if (!conductivity && d.conductivity) conductivity = &*d.conductivity;
    const bool collective = ranks.size > 1;
    const numerics::ChebyshevState* block = trace ? trace->block_state() : (d.trace.block ? &*d.trace.block : nullptr);
    const std::vector<double>& sums = trace ? trace->sums() : d.trace.sums;
    const std::int64_t blocks_done = trace ? trace->blocks_done() : d.trace.blocks_done;
    // The file holds the moments summed over the ranks (what any rank count can resume);
    // with per-rank partial sums also each rank's own, for a bit-identical restart.
    const bool partial = collective && ranks.partial_dots;
    std::vector<double> summed_sums = sums, summed_raw = block ? block->raw : std::vector<double>{};
    if (partial) {
        TOPOKPM_REQUIRE(bool(ranks.sum), "write_checkpoint: partial dots without a sum over the ranks");
        ranks.sum(summed_sums.data(), summed_sums.size());
        if (block) ranks.sum(summed_raw.data(), summed_raw.size());
    }
    const std::uint64_t row_len = std::uint64_t(d.num_slots) * std::uint64_t(d.num_moments);
    std::vector<double> finished;
    finished.reserve(d.finished.size() * row_len);
    for (const auto& f : d.finished) finished.insert(finished.end(), f.begin(), f.end());

    const std::uint64_t w = block ? std::uint64_t(block->current.num_cols()) : 0;
    std::vector<RowsOf> sets = row_sets(block, sums, d, ranks, partial);
    if (conductivity && collective) {  // several ranks: the two-index state row-wise, with the others'
        const std::vector<RowsOf> more = conductivity_sets(
            conductivity, conductivity->left.has_value(), ranks, std::uint64_t(d.num_slots), std::uint64_t(d.num_moments),
            conductivity->left ? std::uint64_t(conductivity->left->current.num_cols()) : 0);
        sets.insert(sets.end(), more.begin(), more.end());
    }

    analysis::ResultWriter out(path, collective);
    const AttributeList header = header_attributes(d, blocks_done, ranks);
    out.write_attributes("/checkpoint", {"none", "The state of a stopped kpm-dos run, read back by --restart."}, header);
    AttributeList params;
    for (const auto& [key, value] : d.parameters) params.push_back({key, value});
    out.write_attributes("/checkpoint/parameters", {"none", "The options that decide the moments, as given."}, params);
    if (!d.finished.empty())
        out.write_doubles("/checkpoint/finished", {"1", "Slot moments of the finished realizations."}, finished,
                          {d.finished.size(), row_len});
    out.write_doubles("/checkpoint/sums", {"1", "Moment sums of the finished blocks."}, summed_sums,
                      {std::uint64_t(d.num_slots), std::uint64_t(d.num_moments)});
    for (const RowsOf& set : sets)
        out.write_rows(set.name, set.meaning, set.local, set.local_values(), set.runs, set.dims);
    if (block) {
        out.write_doubles("/checkpoint/block/raw", {"1", "The block's raw moments so far."}, summed_raw,
                          {w, std::uint64_t(d.num_moments)});
        out.write_attributes("/checkpoint/block", {"none", "The block of vectors under way."},
                             {{"sweeps_done", std::int64_t(block->sweeps_done)}});
    }

    AttributeList conductivity_crcs;  // one rank: each array whole
    if (conductivity) {
        out.write_attributes("/checkpoint/conductivity",
                             {"none", "The two-index moments of --conductivity under way (TwoIndexState)."},
                             {{"blocks_done", conductivity->blocks_done},
                              {"left_done", std::int64_t(conductivity->left_done)}});
        if (conductivity->left)
            out.write_attributes("/checkpoint/conductivity/left", {"none", "The left recurrence under way."},
                                 {{"sweeps_done", std::int64_t(conductivity->left->sweeps_done)}});
    }
    if (conductivity && !collective) {
        const numerics::TwoIndexState& c = *conductivity;
        const auto m = std::uint64_t(d.num_moments);
        const auto write = [&](const std::string& name, const analysis::Meaning& meaning, const void* values,
                               std::size_t count, const std::vector<std::uint64_t>& dims) {
            out.write_doubles(name, meaning, static_cast<const double*>(values), count, dims);
            conductivity_crcs.push_back({checksum_key(name), crc64(values, count * sizeof(double))});
        };
        // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
        write("/checkpoint/conductivity/sums", {"t^2 length^2", "The finished columns' two-index sums (re, im)."},
              c.sums.data(), 2 * c.sums.size(), {std::uint64_t(d.num_slots), m, m, 2});
        if (c.left) {
            const numerics::ChebyshevState& l = *c.left;
            const std::vector<std::uint64_t> dims{std::uint64_t(l.current.num_rows()), std::uint64_t(l.current.num_cols()), 2};
            const analysis::Meaning vector{"1", "A vector of the left recurrence under way (re, im)."};
            write("/checkpoint/conductivity/left/current", vector, l.current.data(), 2 * l.current.size(), dims);
            write("/checkpoint/conductivity/left/previous", vector, l.previous.data(), 2 * l.previous.size(), dims);
            write("/checkpoint/conductivity/left/raw", {"1", "The left recurrence's raw moments."}, l.raw.data(),
                  l.raw.size(), {std::uint64_t(l.current.num_cols()), l.raw.size() / std::uint64_t(l.current.num_cols())});
        }
    }

    // The CRC-64 of every dataset (the rows of several ranks put together, collective), once
    // the data is written: a write that fails (a full disk) costs no checksums.
    const std::vector<std::uint64_t> row_crcs = *crcs_of_rows(sets, true, ranks);
    AttributeList checksums = {
        {"header", crc64_of_text(header_text(d, blocks_done, block ? block->sweeps_done : -1, collective ? ranks.size : 1,
                                             collective ? ranks.layout : std::string(), conductivity))},
        {checksum_key("/checkpoint/sums"), crc_of(summed_sums)}};
    if (!d.finished.empty()) checksums.push_back({checksum_key("/checkpoint/finished"), crc_of(finished)});
    if (block) checksums.push_back({checksum_key("/checkpoint/block/raw"), crc_of(summed_raw)});
    for (std::size_t i = 0; i < sets.size(); ++i) checksums.push_back({checksum_key(sets[i].name), row_crcs[i]});
    checksums.insert(checksums.end(), conductivity_crcs.begin(), conductivity_crcs.end());
    out.write_attributes(kChecksums, {"none", "The CRC-64 of each dataset and of the header."}, checksums);
    out.commit();
}

namespace {

InputError unusable(const std::string& path, const std::string& why)
{
    return InputError(detail::concat("--restart '", path, "': not a usable topokpm checkpoint: ", why,
                                     ". Run without --restart to start afresh"));
}

/// Runs `read`, turning every error of the file (IoError, DimensionMismatch, ...) into the
/// --restart refusal; InputErrors (already refusals) pass through.
template <typename F>
auto refusing(const std::string& path, F&& read)
{
    try {
        return read();
    } catch (const InputError&) {
        throw;
    } catch (const Error& e) {
        throw unusable(path, e.what());
    } catch (const std::bad_alloc&) {
        throw unusable(path, "its arrays do not fit in memory");
    }
}

/// Whether `text` has at most `max` bytes and no control characters (it is printed).
bool printable(const std::string& text, std::size_t max)
{
    if (text.size() > max) return false;
    for (const unsigned char ch : text)
        if (ch < 0x20 || ch == 0x7f) return false;
    return true;
}

bool finite(const double* v, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) return false;
    return true;
}

/// a * b, or nullopt when it does not fit (or a factor is negative).
std::optional<std::uint64_t> times(std::int64_t a, std::int64_t b)
{
    std::uint64_t r = 0;
    if (a < 0 || b < 0 || __builtin_mul_overflow(std::uint64_t(a), std::uint64_t(b), &r) || r > std::uint64_t(INT64_MAX))
        return std::nullopt;
    return r;
}

std::string dims_text(const std::vector<std::uint64_t>& dims)
{
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + "]";
}

/// read_checkpoint_state in its steps: (1) the header against the run, (2) every dataset's
/// shape, from the headers, before anything is read, (3) the header's checksum, (4) the
/// replicated arrays, each read once, checked finite and against its CRC-64, (5) this rank's
/// rows of the vectors, and whose moment sums it continues (checkpoint.hpp).
class StateReader {
public:
    /// Step 1 (the parameters agree, so this only fails on a corrupted or crafted file).
    StateReader(const std::string& path, const CheckpointRun& run, const CheckpointData& d,
                const CheckpointRanks& ranks)
        : path_(path), run_(run), ranks_(ranks)
    {
        TOPOKPM_REQUIRE(run.num_rows >= 1 && run.num_columns >= 1 && run.block_width >= 1 && run.num_moments >= 2 &&
                            run.num_slots >= 1 && run.num_realizations >= 1,
                        "read_checkpoint_state: invalid run sizes");
        if (d.num_moments != run.num_moments || d.num_slots != run.num_slots ||
            d.num_realizations != run.num_realizations)
            throw fail(detail::concat("its header (M = ", d.num_moments, ", ", d.num_slots, " slots, ",
                                      d.num_realizations, " realizations) does not fit this run (M = ", run.num_moments,
                                      ", ", run.num_slots, " slots, ", run.num_realizations, " realizations)"));
        width_ = std::min<std::int64_t>(run.block_width, run.num_columns);
        num_blocks_ = (run.num_columns + width_ - 1) / width_;
        if (d.trace.blocks_done > num_blocks_)
            throw fail(detail::concat("its header value blocks_done = ", d.trace.blocks_done, " is outside 0 .. ",
                                      num_blocks_, " (this run's blocks)"));
        const std::optional<std::uint64_t> row_len = times(run.num_slots, run.num_moments);
        const std::optional<std::uint64_t> block_len = times(run.num_rows, 2 * width_);
        const std::optional<std::uint64_t> finished_len =
            row_len ? times(d.realization, std::int64_t(*row_len)) : std::nullopt;
        if (!row_len || !block_len || !finished_len || *finished_len > std::uint64_t(PTRDIFF_MAX) / sizeof(double))
            throw fail("this run's arrays would be too large");
        row_len_ = *row_len;
        finished_dims_ = {std::uint64_t(d.realization), row_len_};
        sums_dims_ = {std::uint64_t(run.num_slots), std::uint64_t(run.num_moments)};
        block_dims_ = {std::uint64_t(run.num_rows), std::uint64_t(width_), 2};
        raw_dims_ = {std::uint64_t(width_), std::uint64_t(run.num_moments)};
    }

    /// Steps 2 to 5; fills d's state, or leaves d as it is when another rank could not read
    /// its rows (its message ends the run: Distribution::agree).
    void read(CheckpointData& d)
    {
        const analysis::ResultReader in(path_);
        check_shapes(in, d);
        if (crc64_of_text(header_text(d, d.trace.blocks_done, has_block_ ? sweeps_done_ : -1, d.ranks, d.layout,
                                      d.conductivity ? &*d.conductivity : nullptr)) !=
            in.read_uint64_attribute(kChecksums, "header"))
            throw fail("its header values do not match their CRC-64 (the file was changed or damaged after it was "
                       "written)");
        std::vector<std::vector<double>> finished = read_finished(in, d.realization);
        std::vector<double> sums = read_replicated(in, "/checkpoint/sums", sums_dims_);
        std::optional<numerics::ChebyshevState> block;
        if (has_block_) {
            block.emplace();
            block->raw = read_replicated(in, "/checkpoint/block/raw", raw_dims_);
            block->sweeps_done = static_cast<int>(sweeps_done_);
        }
        const bool own = ranks_.size > 1 && ranks_.partial_dots && d.ranks == ranks_.size &&
                         d.layout == ranks_.layout && in.exists("/checkpoint/rank_sums") &&
                         (!has_block_ || in.exists("/checkpoint/block/rank_raw"));
        if (!read_rank_rows(in, own, sums, block)) return;
        if (d.conductivity && !read_conductivity(in, d, *d.conductivity)) return;
        if (ranks_.size > 1 && ranks_.partial_dots && !own && ranks_.rank != 0) {
            std::fill(sums.begin(), sums.end(), 0.0);  // rank 0 carries the summed moments
            if (block) std::fill(block->raw.begin(), block->raw.end(), 0.0);
        }
        d.finished = std::move(finished);
        d.trace.sums = std::move(sums);
        d.trace.block = std::move(block);
        d.own_partials = own;
    }

private:
    InputError fail(const std::string& why) const { return unusable(path_, why); }

    /// The two-index state (checkpoint.hpp): its ranks and layout against this run's (each
    /// rank continues its own partial sums: only the same ranks and layout can), its header
    /// values against the run, the shapes, then the arrays (several ranks: this rank's rows),
    /// each finite and matching its CRC-64. The DOS moments must be finished. False when
    /// another rank could not read its rows.
    bool read_conductivity(const analysis::ResultReader& in, const CheckpointData& d, numerics::TwoIndexState& c) const
    {
        const std::string layout = ranks_.size > 1 ? ranks_.layout : std::string();
        if (d.ranks != ranks_.size || d.layout != layout) {
            const auto ranks_text = [](int ranks, const std::string& l) {
                return detail::concat(ranks, ranks == 1 ? " rank" : " ranks", l.empty() ? "" : " (" + l + ")");
            };
            throw InputError(detail::concat(
                "--restart '", path_, "': its --conductivity phase was written by ", ranks_text(d.ranks, d.layout),
                ", this run has ", ranks_text(ranks_.size, layout),
                "; the two-index moments continue only on the same ranks and decomposition (rerun with ",
                d.ranks > 1 ? detail::concat("mpirun -np ", d.ranks, " and the same --decomposition and --weights")
                            : std::string("one rank"),
                ", or without --restart to start afresh)"));
        }
        if (has_block_ || d.trace.blocks_done != num_blocks_ || d.realization != run_.num_realizations - 1)
            throw fail("it holds two-index moments of --conductivity before its DOS moments are finished");
        if (c.blocks_done >= num_blocks_)
            throw fail(detail::concat("its value conductivity blocks_done = ", c.blocks_done, " is outside 0 .. ",
                                      num_blocks_ - 1));
        const int m = run_.num_moments, batch = std::min(m, numerics::kLeftBatch);
        if (c.left ? !(c.left_done > 0 && c.left_done < m && c.left_done % batch == 0 &&
                       (c.left->sweeps_done == c.left_done || c.left->sweeps_done == c.left_done - 1))
                   : c.left_done != 0)
            throw fail(detail::concat("its conductivity values left_done = ", c.left_done, ", sweeps_done = ",
                                      c.left ? c.left->sweeps_done : -1, " are not a point the trace stops at"));
        const std::optional<std::uint64_t> mm = times(m, m);
        const std::optional<std::uint64_t> values = mm ? times(run_.num_slots, std::int64_t(*mm)) : std::nullopt;
        if (!values || *values > std::uint64_t(PTRDIFF_MAX) / sizeof(complex_type))
            throw fail("this run's two-index sums would be too large");
        if (ranks_.size > 1) {  // each rank's own sums and left raw moments, its rows of the left vectors
            std::vector<RowsOf> sets = conductivity_sets(nullptr, c.left.has_value(), ranks_, std::uint64_t(run_.num_slots),
                                                         std::uint64_t(m), std::uint64_t(width_));
            for (const RowsOf& set : sets) require_shape(in, set.name, set.dims, "(ranks or rows, ...)");
            std::uint64_t local_rows = 0;
            for (const auto& r : ranks_.rows) local_rows += r.count;
            return read_sets(in, sets, [&] {
                c.sums.resize(*values);
                // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
                std::vector<double*> into{reinterpret_cast<double*>(c.sums.data())};
                if (c.left) {
                    numerics::ChebyshevState& l = *c.left;
                    l.current = BlockVector(static_cast<global_index>(local_rows), static_cast<int>(width_));
                    l.previous = BlockVector(static_cast<global_index>(local_rows), static_cast<int>(width_));
                    l.raw.resize(std::size_t(width_) * std::size_t(numerics::probing_trace_moments(m)));
                    into.insert(into.end(), {reinterpret_cast<double*>(l.current.data()),
                                             reinterpret_cast<double*>(l.previous.data()), l.raw.data()});
                }
                return into;
            });
        }
        const std::vector<std::uint64_t> sums_dims{std::uint64_t(run_.num_slots), std::uint64_t(m), std::uint64_t(m), 2};
        require_shape(in, "/checkpoint/conductivity/sums", sums_dims, "[slots, M, M, 2]");
        const std::vector<std::uint64_t> raw_dims{std::uint64_t(width_),
                                                  std::uint64_t(numerics::probing_trace_moments(m))};
        if (c.left) {
            const std::string n_text = detail::concat("[N, W, 2] with N = ", run_.num_rows, " rows");
            require_shape(in, "/checkpoint/conductivity/left/current", block_dims_, n_text);
            require_shape(in, "/checkpoint/conductivity/left/previous", block_dims_, n_text);
            require_shape(in, "/checkpoint/conductivity/left/raw", raw_dims, "[W, 2 M - 2]");
        }
        // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
        const auto read = [&](const std::string& name, const std::vector<std::uint64_t>& dims, void* to,
                              std::size_t count) {
            double* v = static_cast<double*>(to);
            in.read_doubles(name, dims, v, count);
            if (!finite(v, count)) throw fail(name + " holds non-finite values");
            verify(in, name, crc64(v, count * sizeof(double)));
        };
        c.sums.resize(*values);
        read("/checkpoint/conductivity/sums", sums_dims, c.sums.data(), 2 * c.sums.size());
        if (c.left) {
            numerics::ChebyshevState& l = *c.left;
            l.current = BlockVector(run_.num_rows, static_cast<int>(width_));
            l.previous = BlockVector(run_.num_rows, static_cast<int>(width_));
            l.raw.resize(raw_dims[0] * raw_dims[1]);
            read("/checkpoint/conductivity/left/current", block_dims_, l.current.data(), 2 * l.current.size());
            read("/checkpoint/conductivity/left/previous", block_dims_, l.previous.data(), 2 * l.previous.size());
            read("/checkpoint/conductivity/left/raw", raw_dims, l.raw.data(), l.raw.size());
        }
        return true;
    }

    void require_shape(const analysis::ResultReader& in, const std::string& name,
                       const std::vector<std::uint64_t>& want, const std::string& meaning) const
    {
        const std::vector<std::uint64_t> have = in.shape(name);
        if (have != want)
            throw fail(detail::concat(name, " has shape ", dims_text(have), ", this run needs ", meaning, " = ",
                                      dims_text(want)));
    }

    /// Step 2: the shapes, and whether a block is under way (its sweeps_done).
    void check_shapes(const analysis::ResultReader& in, const CheckpointData& d)
    {
        if (d.realization > 0)
            require_shape(in, "/checkpoint/finished", finished_dims_, "[realizations done, slots * M]");
        require_shape(in, "/checkpoint/sums", sums_dims_, "[slots, M]");
        has_block_ = in.exists("/checkpoint/block");
        if (!has_block_) return;
        if (d.trace.blocks_done >= num_blocks_)
            throw fail(detail::concat("it has a block under way after all ", num_blocks_, " blocks"));
        const std::string n_text = detail::concat("[N, W, 2] with N = ", run_.num_rows, " rows");
        require_shape(in, "/checkpoint/block/current", block_dims_, n_text);
        require_shape(in, "/checkpoint/block/previous", block_dims_, n_text);
        require_shape(in, "/checkpoint/block/raw", raw_dims_, "[W, M]");
        sweeps_done_ = in.read_int64_attribute("/checkpoint/block", "sweeps_done");
        const std::int64_t max_sweeps = numerics::kpm_num_sweeps(run_.num_moments);
        if (sweeps_done_ < 0 || sweeps_done_ >= max_sweeps)
            throw fail(detail::concat("its value sweeps_done = ", sweeps_done_, " is outside 0 .. ", max_sweeps - 1));
    }

    /// A dataset's CRC-64 against the one the file holds for it (a file of format 2 has all
    /// of those it needs).
    void verify(const analysis::ResultReader& in, const std::string& dataset, std::uint64_t crc) const
    {
        if (crc != in.read_uint64_attribute(kChecksums, checksum_key(dataset)))
            throw fail(detail::concat(dataset, " does not match its CRC-64 (the file was changed or damaged after "
                                               "it was written)"));
    }

    /// Step 4: one replicated array, read whole, finite and matching its CRC-64.
    std::vector<double> read_replicated(const analysis::ResultReader& in, const std::string& name,
                                        const std::vector<std::uint64_t>& dims) const
    {
        std::vector<double> values = in.read_doubles(name, dims);
        if (!finite(values.data(), values.size())) throw fail(name + " holds non-finite values");
        verify(in, name, crc_of(values));
        return values;
    }

    /// The slot moments of the realizations finished before the checkpoint, one row each.
    std::vector<std::vector<double>> read_finished(const analysis::ResultReader& in, int realizations) const
    {
        std::vector<std::vector<double>> finished;
        if (realizations == 0) return finished;
        const std::vector<double> flat = read_replicated(in, "/checkpoint/finished", finished_dims_);
        for (int k = 0; k < realizations; ++k)
            finished.emplace_back(flat.begin() + k * row_len_, flat.begin() + (k + 1) * row_len_);
        return finished;
    }

    /// Step 5: this rank's rows (of rank_sums and rank_raw: its own row) into `sums` and
    /// `block`. Their CRC-64 needs every rank's pieces, so a failed read is kept until all
    /// ranks have read (crcs_of_rows). False when another rank could not read its rows.
    bool read_rank_rows(const analysis::ResultReader& in, bool own, std::vector<double>& sums,
                        std::optional<numerics::ChebyshevState>& block) const
    {
        const std::vector<analysis::RowRun> rows =
            ranks_.rows.empty() ? std::vector<analysis::RowRun>{{0, std::uint64_t(run_.num_rows)}} : ranks_.rows;
        std::uint64_t local_rows = 0;
        for (const auto& r : rows) local_rows += r.count;
        const std::vector<analysis::RowRun> own_row{{std::uint64_t(ranks_.rank), 1}};
        const std::uint64_t p = std::uint64_t(ranks_.size);
        std::vector<RowsOf> sets;  // the same names on every rank (`own` and has_block_ are the file's)
        if (own) sets.push_back({"/checkpoint/rank_sums", nullptr, own_row, {p, row_len_}});
        if (has_block_) {
            sets.push_back({"/checkpoint/block/current", nullptr, rows, block_dims_});
            sets.push_back({"/checkpoint/block/previous", nullptr, rows, block_dims_});
            if (own)
                sets.push_back(
                    {"/checkpoint/block/rank_raw", nullptr, own_row, {p, std::uint64_t(width_ * run_.num_moments)}});
        }
        return read_sets(in, sets, [&] {
            if (has_block_) {
                block->current = BlockVector(static_cast<global_index>(local_rows), static_cast<int>(width_));
                block->previous = BlockVector(static_cast<global_index>(local_rows), static_cast<int>(width_));
            }
            std::vector<double*> into;
            for (const RowsOf& set : sets) {
                const std::string name = set.name;
                // complex<double> is layout-compatible with double[2] ([complex.numbers.general]).
                into.push_back(name == "/checkpoint/rank_sums"        ? sums.data()
                               : name == "/checkpoint/block/rank_raw" ? block->raw.data()
                               : name == "/checkpoint/block/current"
                                   ? reinterpret_cast<double*>(block->current.data())
                                   : reinterpret_cast<double*>(block->previous.data()));
            }
            return into;
        });
    }

    /// Reads this rank's rows of each of `sets` into the array `prepare` returns for it (run
    /// first: it allocates), each finite, then verifies the sets' CRC-64s put together from
    /// every rank's pieces (crcs_of_rows: collective with several ranks, so a failed read is
    /// kept until all ranks have read, then rethrown). False when another rank could not read.
    bool read_sets(const analysis::ResultReader& in, std::vector<RowsOf>& sets,
                   const std::function<std::vector<double*>()>& prepare) const
    {
        std::exception_ptr failure;
        try {
            const std::vector<double*> into = prepare();
            for (std::size_t i = 0; i < sets.size(); ++i) {
                const std::uint64_t count = sets[i].local_values();
                in.read_rows(sets[i].name, sets[i].dims, sets[i].runs, into[i], count);
                if (!finite(into[i], count)) throw fail(std::string(sets[i].name) + " holds non-finite values");
                sets[i].local = into[i];
            }
        } catch (...) {
            failure = std::current_exception();
        }
        const std::optional<std::vector<std::uint64_t>> crcs = crcs_of_rows(sets, !failure, ranks_);
        if (failure) std::rethrow_exception(failure);
        if (!crcs) return false;
        for (std::size_t i = 0; i < sets.size(); ++i) verify(in, sets[i].name, (*crcs)[i]);
        return true;
    }

    const std::string& path_;
    const CheckpointRun& run_;
    const CheckpointRanks& ranks_;
    std::int64_t width_ = 0, num_blocks_ = 0;
    std::uint64_t row_len_ = 0;
    std::vector<std::uint64_t> finished_dims_, sums_dims_, block_dims_, raw_dims_;
    bool has_block_ = false;
    std::int64_t sweeps_done_ = 0;
};

}  // namespace

CheckpointData read_checkpoint_header(const std::string& path)
{
    const auto fail = [&](const std::string& why) { return unusable(path, why); };
    return refusing(path, [&] {
        const analysis::ResultReader in(path);
        if (!in.exists("/checkpoint") ||
            in.read_string_attribute("/checkpoint", "format") != kFormat)
            throw fail("it has no /checkpoint group of format 'topokpm-checkpoint' (a result file?)");
        const std::int64_t version = in.read_int64_attribute("/checkpoint", "format_version");
        if (version != kFormatVersion)
            throw fail(detail::concat("format version ", version, ", this program reads ", kFormatVersion));
        CheckpointData d;
        // Every number is checked in int64 before it is narrowed.
        const auto integer = [&](const char* name, std::int64_t lo, std::int64_t hi) {
            const std::int64_t v = in.read_int64_attribute("/checkpoint", name);
            if (v < lo || v > hi)
                throw fail(detail::concat("its header value ", name, " = ", v, " is outside ", lo, " .. ", hi));
            return v;
        };
        const std::int64_t int_max = std::numeric_limits<int>::max();
        d.num_realizations = static_cast<int>(integer("num_realizations", 1, int_max));
        d.realization = static_cast<int>(integer("realization", 0, d.num_realizations - 1));
        d.num_moments = static_cast<int>(integer("num_moments", 2, int_max));
        d.num_slots = integer("num_slots", 1, INT64_MAX);
        d.trace.blocks_done = integer("blocks_done", 0, INT64_MAX);
        d.scaling = {in.read_double_attribute("/checkpoint", "scale_a"), in.read_double_attribute("/checkpoint", "scale_b")};
        d.bounds = {in.read_double_attribute("/checkpoint", "bounds_lower"),
                    in.read_double_attribute("/checkpoint", "bounds_upper")};
        if (!(std::isfinite(d.scaling.a) && d.scaling.a > 0) || !std::isfinite(d.scaling.b) ||
            !std::isfinite(d.bounds.lower) || !std::isfinite(d.bounds.upper) || !(d.bounds.lower < d.bounds.upper))
            throw fail("its scaling or spectral bounds are not finite with scale_a > 0 and lower < upper");
        // Written by several ranks: their count and decomposition (absent: one rank).
        try {
            d.ranks = static_cast<int>(integer("ranks", 1, int_max));
            d.layout = in.read_string_attribute("/checkpoint", "layout");
        } catch (const IoError&) {
            d.ranks = 1;
            d.layout.clear();
        }
        if (!printable(d.layout, 65536)) throw fail("its layout is not printable text of at most 65536 bytes");
        d.threads = static_cast<int>(integer("threads", 1, int_max));
        d.command_line = in.read_string_attribute("/checkpoint", "command_line");
        if (!printable(d.command_line, 65536))
            throw fail("its command_line is not printable text of at most 65536 bytes");
        const char* keys[] = {"model", "lattice", "t", "m", "dot-potential", "dot-radius", "dot-period", "dot-depth",
                              "disorder", "disorder-seed", "boundary", "moments", "vectors", "block-width", "vector-seed", "trace",
                              "quantity", "realizations", "bounds", "energy-range", "epsilon", "lanczos-steps",
                              "matrix", "sell-C", "sell-sigma", "device", "precision", "ldos", "k-points",
                              "model-file-sha256", "magnetic-flux", "ldos-method", "probing-distance", "probing-draws",
                              "conductivity", "exchange-mass", "cell-vectors", "orbital-positions-sha256"};
        for (const char* key : keys) {
            std::string value;
            const std::string k = key;
            if (k == "ldos" || k == "k-points" || k == "model-file-sha256" || k == "magnetic-flux" || k == "ldos-method" ||
                k == "probing-distance" || k == "probing-draws" || k == "conductivity" || k == "exchange-mass" ||
                k == "cell-vectors" || k == "orbital-positions-sha256") {
                try {
                    value = in.read_string_attribute("/checkpoint/parameters", key);
                } catch (const IoError&) {
                    continue;  // only LDOS / spectral runs record their selection, file models their file, field runs
                               // the flux, probing LDOS runs their method, conductivity runs the component, slabs
                               // with an exchange mass its value, hr models with positions their cell and file
                }
            } else if (key == std::string("precision")) {
                try {
                    value = in.read_string_attribute("/checkpoint/parameters", key);
                } catch (const IoError&) {
                    value = "double";  // written before --precision existed
                }
            } else {
                value = in.read_string_attribute("/checkpoint/parameters", key);
            }
            // The values are printed when they differ from the run's: short plain text only.
            if (!printable(value, 256))
                throw fail(detail::concat("its parameter '", key, "' is not printable text of at most 256 bytes"));
            d.parameters.push_back({key, value});
        }
        if (in.exists("/checkpoint/conductivity")) {
            const auto at = [&](const char* group, const char* name) {
                const std::int64_t v = in.read_int64_attribute(group, name);
                if (v < 0 || v > int_max)
                    throw fail(detail::concat("its value ", group, " ", name, " = ", v, " is outside 0 .. ", int_max));
                return v;
            };
            numerics::TwoIndexState& c = d.conductivity.emplace();
            c.blocks_done = at("/checkpoint/conductivity", "blocks_done");
            c.left_done = static_cast<int>(at("/checkpoint/conductivity", "left_done"));
            if (in.exists("/checkpoint/conductivity/left"))
                c.left.emplace().sweeps_done = static_cast<int>(at("/checkpoint/conductivity/left", "sweeps_done"));
        }
        return d;
    });
}

void read_checkpoint_state(const std::string& path, const CheckpointRun& run, CheckpointData& d,
                           const CheckpointRanks& ranks)
{
    StateReader reader(path, run, d, ranks);
    refusing(path, [&] {
        reader.read(d);
        return 0;
    });
}

double checkpoint_file_bytes(const CheckpointRun& run, int ranks)
{
    const double w = static_cast<double>(std::min<std::int64_t>(run.block_width, run.num_columns));
    const double m = run.num_moments, slots = static_cast<double>(run.num_slots);
    const double vectors = 2.0 * 2.0 * static_cast<double>(run.num_rows) * w;  // current, previous: re, im
    const double moments = w * m + slots * m * run.num_realizations;        // raw; sums + finished
    const double partials = ranks > 1 ? ranks * (slots + w) * m : 0.0;      // rank_sums, rank_raw
    return sizeof(double) * (vectors + moments + partials);
}

}  // namespace topokpm::app
