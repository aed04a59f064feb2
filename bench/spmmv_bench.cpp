// spmmv-bench: the augmented SpMMV on this machine against its roofline (issue 4).
// One command reproduces every figure of docs/performance.md: scripts/bench_cpu.sh.
//
// 0. Machine facts: the SIMD path the CPU kernels were compiled for (compiled_isa()), the
//    CPU model, and the in-core peak
//        P_peak = cores used x clock x DP flops/cycle/core,
//    cores used = min(threads, physical cores of the sysfs topology: SMT siblings count
//    once), clock = cpufreq cpuinfo_max_freq if present, else /proc/cpuinfo "cpu MHz"
//    (--clock-ghz overrides), flops/cycle = doubles per SIMD datapath x FMA pipes x 2, the
//    datapath capped at the compiled width (vendor/family rules: machine_facts() below).
// 1. STREAM-like triad a = b + s c (3 arrays of --triad-mib MiB, far beyond the caches,
//    same thread count, median of --triad-reps): the attainable bandwidth b in GB/s,
//    measured at startup (used by the model) and again at the end (printed, for noise).
// 2. The ti model (64 x 64 x 40 sites by default, 4 orbitals, ~13 stored entries per row)
//    as SELL-32-256, SELL-8-256 and CRS, and its matrix-free stencil operator. "sell-32t",
//    "sell-8t": the same matrices with the cache-blocked sweep order (y tiles outer, x planes
//    inner, numerics/sparse/sell_schedule.hpp; the tile is chosen per R, untiled for small
//    R); "sell-<C>t<Ty>" forces a tile of Ty cells (for scans).
// 3. σ scan (skip with --no-sigma-scan): fill efficiency β, storage and the R = 1 sweep
//    time of SELL-C-σ for C in {8, 32} and σ in {1, 32, 256, 4096, N}.
// 4. For R = 1, 2, 4, 8, 16, 32 and each operator: the median time of one augmented sweep
//    (beta = -1, both dots, as in a KPM step), after one warm-up sweep.
// 5. In-cache limit P_LLC (seed 004 Eq. (11)): the same SELL kernels and stencils (free, frees,
//    free2, free2s) on a down-sized lattice (--llc-lattice, default 16x16x10) whose working set fits
//    the last-level cache.
//
// Flops per sweep, seed 004 Table I with complex scalars (F_a = 2, F_m = 6 flops per
// complex add / multiply), per block column:
//     F = N_nz (F_a + F_m) + N (ceil(7 F_a / 2) + ceil(9 F_m / 2)) = 8 N_nz + 34 N
// (8 per complex multiply-add; 34 per row for shift, scale, axpby and the two dots).
// Minimum traffic per sweep (Eq. (4)): V = N_nz (S_d + S_i) + 3 R S_d N, the matrix once
// (16-byte value + 4-byte column) and x read, y read, y written once per row and column.
// For 13 entries per row the code balance is (Eq. (5), (6)):
//     B_min(R) = V / (R F) = (260 / R + 48) / 138 bytes/flop   (B_min(1) = 2.23)
// and the roofline P* = min(P_peak, b / B_min(R)) (Eq. (9)).
//
// Columns: time per sweep [ms]; Gflop/s = R F / t; GB/s = V_own / t with V_own the
// operator's own minimum traffic (matrix bytes it really holds, incl. SELL padding; the
// potential only for the matrix-free operator); B_min(R) and P* as above; meas/P* in %;
// Omega = t / t_min with t_min = V_own / b (seed 004 Eq. (8): the factor by which the
// effective traffic exceeds the minimum, if the kernel ran at bandwidth b); own P* =
// min(P_peak, b F / V_own) and meas/own P* (the matrix-free operator's figure against its own
// minimum: its vectors and potential, no matrix); P_LLC and meas/P_LLC; meas/P_peak in %; "x R=1" = the speed-up
// per vector-moment over R = 1 of the same operator, t(1) R / t(R); the speed-up over the
// naive path (CRS SpMV + BLAS-1 sweeps, seed 004 Fig. 3) at the same R.
//
// Not a test: the numbers depend on the machine and on its load. Threads: OMP_NUM_THREADS.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/perf_model.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"

using namespace topokpm;

namespace {

/// --cpu-time: the sweeps are timed by the process's CPU time divided by the thread count
/// instead of wall time. On a host shared with other jobs the wall time of a sweep measures
/// the share of the cores it got; CPU time still counts the memory stalls and the slowdown a
/// busy core causes, but not the time slices other processes ran in (docs/performance.md,
/// "ti R = 32: what the sweep waits for").
bool g_cpu_time = false;

/// Seconds on the clock the sweeps are timed with (wall, or --cpu-time).
double sweep_clock()
{
    if (!g_cpu_time) return wall_seconds();
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec)) / omp_get_max_threads();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::vector<std::string> split(const std::string& s)
{
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

struct Args {
    std::string model = "ti";  // ti | graphene
    int nx = 64, ny = 64, nz = 40;
    int reps = 7;
    int triad_mib = 256;
    int triad_reps = 10;
    double clock_ghz = 0.0;  // 0 = detect
    bool sigma_scan = true;
    int lx = 16, ly = 16, lz = 10;  // the in-cache (P_LLC) lattice; lx = 0: skip
    std::vector<int> widths{1, 2, 4, 8, 16, 32};
    std::vector<std::string> ops{"naive", "sell-32", "sell-8", "sell-32t", "sell-8t", "sell-8ts", "free", "frees"};
    bool interleave = false;
    std::string json;
};

[[noreturn]] void usage(int code)
{
    std::printf(
        "usage: spmmv-bench [options]\n"
        "  --model NAME        ti (default) or graphene (real-valued entries: the r ops below)\n"
        "  --lattice NXxNYxNZ  ti lattice in sites (default 64x64x40: N = 655360 rows); graphene: NXxNY cells\n"
        "  --reps N            timed sweeps per operator and width, median reported (default 7)\n"
        "  --widths LIST       block widths R, comma-separated (default 1,2,4,8,16,32)\n"
        "  --ops LIST          of naive,sell-32,sell-8,sell-32t,sell-8t,sell-8ts,free,frees (default all); also\n"
        "                      sell-<C> / sell-<C>t (tiled sweep order) for any C, sell-<C>t<Ty> (tile of\n"
        "                      Ty cells of y forced); a trailing s (sell-8s, sell-8ts): single precision\n"
        "                      (complex float, --precision single), rated against its own B_min;\n"
        "                      frees: the matrix-free stencil in single precision; an r before it\n"
        "                      (sell-8tr, sell-8trs): real stored values (real-valued models, graphene);\n"
        "                      free2: the stencil two sweeps per apply (apply_two_steps), timed per sweep;\n"
        "                      free2s: the same in single precision; free-rows: free as before issue 35 (the\n"
        "                      B = 4 site form off at R = 2, 4, 8, no site-form prefetch; A/B in one process);\n"
        "                      free-pf<N>: free with the site form's prefetch N bytes ahead (0: none)\n"
        "  --interleave        per repetition one sweep of every (width, op) pair in turn (A/B and\n"
        "                      R = 32 vs R = 1 under the same load; holds all widths' blocks at once)\n"
        "                      instead of all repetitions of one pair after the other\n"
        "  --cpu-time          time the sweeps by process CPU time / threads instead of wall time (a\n"
        "                      host shared with other jobs: the time slices others ran are not counted;\n"
        "                      the triad stays wall-clock, so compare times and ratios, not P* or Omega)\n"
        "  --triad-mib M       size of each of the 3 triad arrays in MiB (default 256)\n"
        "  --triad-reps N      triad repetitions, median reported (default 10)\n"
        "  --clock-ghz F       core clock for P_peak instead of the detected one\n"
        "  --llc-lattice L     lattice of the in-cache P_LLC runs (default 16x16x10; 0 = skip)\n"
        "  --no-sigma-scan     skip the SELL-C-sigma fill-efficiency scan\n"
        "  --json FILE         also write the results and the machine facts as JSON\n"
        "threads: OMP_NUM_THREADS (default: all cores)\n");
    std::exit(code);
}

Args parse(int argc, char** argv)
{
    Args a;
    bool llc_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--help" || k == "-h") usage(0);
        if (k == "--no-sigma-scan") {
            a.sigma_scan = false;
            continue;
        }
        if (k == "--interleave") {
            a.interleave = true;
            continue;
        }
        if (k == "--cpu-time") {
            g_cpu_time = true;
            continue;
        }
        if (i + 1 >= argc) usage(2);
        const std::string v = argv[++i];
        if (k == "--model") {
            a.model = v;
            if (v != "ti" && v != "graphene") usage(2);
        } else if (k == "--lattice") {
            const int got = std::sscanf(v.c_str(), "%dx%dx%d", &a.nx, &a.ny, &a.nz);
            if (got == 2) a.nz = 1;
            else if (got != 3) usage(2);
        } else if (k == "--reps") {
            a.reps = std::max(1, std::atoi(v.c_str()));
        } else if (k == "--widths") {
            a.widths.clear();
            for (const std::string& w : split(v)) a.widths.push_back(std::max(1, std::atoi(w.c_str())));
        } else if (k == "--ops") {
            a.ops = split(v);
        } else if (k == "--triad-mib") {
            a.triad_mib = std::max(1, std::atoi(v.c_str()));
        } else if (k == "--triad-reps") {
            a.triad_reps = std::max(1, std::atoi(v.c_str()));
        } else if (k == "--clock-ghz") {
            a.clock_ghz = std::atof(v.c_str());
        } else if (k == "--llc-lattice") {
            llc_given = true;
            if (v == "0")
                a.lx = 0;
            else if (const int got = std::sscanf(v.c_str(), "%dx%dx%d", &a.lx, &a.ly, &a.lz); got == 2)
                a.lz = 1;
            else if (got != 3)
                usage(2);
        } else if (k == "--json") {
            a.json = v;
        } else {
            usage(2);
        }
    }
    if (a.model == "graphene") {
        a.nz = 1;
        if (!llc_given) a.lx = a.ly = 64, a.lz = 1;  // 8192 rows: in cache like ti 16x16x10
    }
    return a;
}

// ---- Machine facts: SIMD path, CPU model, P_peak and how it was derived ----

std::string read_first_line(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::string trim(const std::string& s)
{
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

struct Machine {
    std::string isa;                 // compiled SIMD path of the CPU kernels
    std::string cpu_model = "unknown", vendor = "unknown", uarch = "unknown";
    int family = -1, model = -1;
    bool avx512 = false, avx2 = false, fma = false, avx = false;
    int logical_cpus = 0, physical_cores = 0, threads = 0, cores_used = 0;
    std::string siblings_cpu0;       // thread_siblings_list of cpu0 ("" if absent)
    double clock_ghz = 0.0;
    std::string clock_source;
    int datapath_doubles = 2, compiled_doubles = 2, vector_doubles = 2;  // per SIMD op
    int fp_pipes = 2, flops_per_op = 1;  // FMA pipes (or add + mul pipes without FMA), 2 = FMA
    int flops_per_cycle = 4;
    std::string flops_note;
    double peak_gflops = 0.0;
};

Machine machine_facts(int threads, double clock_override_ghz)
{
    Machine m;
    m.isa = numerics::kernels::cpu::compiled_isa();
    m.threads = threads;
    // /proc/cpuinfo: the first processor's identification and flags, the highest "cpu MHz".
    double mhz = 0.0;
    {
        std::ifstream in("/proc/cpuinfo");
        bool first = true;
        for (std::string line; std::getline(in, line);) {
            const auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            const std::string key = trim(line.substr(0, colon)), val = trim(line.substr(colon + 1));
            if (key == "processor") {
                first = m.logical_cpus == 0;
                ++m.logical_cpus;
            } else if (key == "cpu MHz") {
                mhz = std::max(mhz, std::atof(val.c_str()));
            } else if (!first) {
                continue;
            } else if (key == "model name") {
                m.cpu_model = val;
            } else if (key == "vendor_id") {
                m.vendor = val;
            } else if (key == "cpu family") {
                m.family = std::atoi(val.c_str());
            } else if (key == "model") {
                m.model = std::atoi(val.c_str());
            } else if (key == "flags") {
                std::istringstream fl(val);
                for (std::string f; fl >> f;) {
                    m.avx512 |= f == "avx512f";
                    m.avx2 |= f == "avx2";
                    m.fma |= f == "fma";
                    m.avx |= f == "avx";
                }
            }
        }
    }
    if (m.logical_cpus == 0) m.logical_cpus = std::max(1, omp_get_num_procs());
    // Physical cores: distinct (package, core) pairs of the sysfs topology.
    std::set<std::pair<std::string, std::string>> cores;
    for (int c = 0; c < m.logical_cpus; ++c) {
        const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
        const std::string core = read_first_line(dir + "core_id");
        if (core.empty()) continue;
        cores.insert({read_first_line(dir + "physical_package_id"), core});
    }
    m.physical_cores = cores.empty() ? m.logical_cpus : static_cast<int>(cores.size());
    m.siblings_cpu0 = read_first_line("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
    m.cores_used = std::min(threads, m.physical_cores);
    // Clock.
    const std::string max_khz = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    if (clock_override_ghz > 0.0) {
        m.clock_ghz = clock_override_ghz;
        m.clock_source = "--clock-ghz";
    } else if (!max_khz.empty() && std::atof(max_khz.c_str()) > 0.0) {
        m.clock_ghz = std::atof(max_khz.c_str()) * 1e-6;
        m.clock_source = "cpufreq cpuinfo_max_freq (maximum boost clock)";
    } else if (mhz > 0.0) {
        m.clock_ghz = mhz * 1e-3;
        m.clock_source = "/proc/cpuinfo \"cpu MHz\" (no cpufreq: the clock the guest is told; boost may be higher)";
    } else {
        m.clock_ghz = 1.0;
        m.clock_source = "unknown (1 GHz assumed; pass --clock-ghz)";
    }
    // SIMD datapath and FP pipes by vendor and family.
    const bool amd = m.vendor == "AuthenticAMD";
    char fam[64];
    std::snprintf(fam, sizeof fam, "family 0x%x model 0x%x", m.family, m.model);
    if (amd && m.family >= 0x1a) {
        m.uarch = std::string("AMD Zen 5 (") + fam + ")";
        m.datapath_doubles = m.avx512 ? 8 : 4;
        m.fp_pipes = 2;
        m.flops_per_op = 2;
        m.flops_note = "Zen 5: 512-bit FMA datapath assumed (server/desktop parts), 2 FMA pipes";
    } else if (amd && m.family == 0x19) {
        m.uarch = std::string(m.avx512 ? "AMD Zen 4 (" : "AMD Zen 3 (") + fam + ")";
        m.datapath_doubles = 4;
        m.fp_pipes = 2;
        m.flops_per_op = 2;
        m.flops_note = m.avx512 ? "Zen 4: AVX-512 executes on 2 x 256-bit FMA pipes (double-pumped), "
                                  "so 4 doubles x 2 FMA pipes x 2 = 16"
                                : "Zen 3: 2 x 256-bit FMA pipes, 4 doubles x 2 x 2 = 16";
    } else if (amd && m.family == 0x17) {
        const bool zen2 = m.model >= 0x30;
        m.uarch = std::string(zen2 ? "AMD Zen 2 (" : "AMD Zen 1 (") + fam + ")";
        m.datapath_doubles = zen2 ? 4 : 2;
        m.fp_pipes = 2;
        m.flops_per_op = 2;
        m.flops_note = zen2 ? "Zen 2: 2 x 256-bit FMA pipes" : "Zen 1: 2 x 128-bit FMA pipes (AVX2 split in halves)";
    } else if (m.avx512) {
        m.uarch = m.vendor + " " + fam + " with AVX-512";
        m.datapath_doubles = 8;
        m.fp_pipes = 2;
        m.flops_per_op = 2;
        m.flops_note = "AVX-512 with 2 FMA pipes assumed (parts with one 512-bit FMA unit reach half)";
    } else if (m.avx2 && m.fma) {
        m.uarch = m.vendor + " " + fam + " with AVX2+FMA";
        m.datapath_doubles = 4;
        m.fp_pipes = 2;
        m.flops_per_op = 2;
        m.flops_note = "AVX2 with 2 FMA pipes assumed";
    } else if (m.avx) {
        m.uarch = m.vendor + " " + fam + " with AVX (no FMA)";
        m.datapath_doubles = 4;
        m.fp_pipes = 2;
        m.flops_per_op = 1;
        m.flops_note = "AVX without FMA: one add and one multiply pipe";
    } else {
        m.uarch = m.vendor + " " + fam;
        m.datapath_doubles = 2;
        m.fp_pipes = 2;
        m.flops_per_op = 1;
        m.flops_note = "SSE2: one add and one multiply pipe of 2 doubles";
    }
    const std::string isa = m.isa;
    m.compiled_doubles = isa == "AVX-512" ? 8 : isa == "AVX2" ? 4 : m.datapath_doubles;
    m.vector_doubles = std::min(m.datapath_doubles, m.compiled_doubles);
    m.flops_per_cycle = m.vector_doubles * m.fp_pipes * m.flops_per_op;
    m.peak_gflops = m.cores_used * m.clock_ghz * m.flops_per_cycle;
    return m;
}

std::string json_string(const std::string& s)
{
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// Seconds of one augmented sweep: one warm-up sweep, then `reps` timings of `inner`
// consecutive sweeps each (x and y swapped after each, the KPM access pattern); the median
// (best = false) or the fastest (best = true: a capability, robust to other processes).
double time_sweeps(const Operator& op, BlockVector& x, BlockVector& y, int reps, int inner, bool best = false)
{
    const AugmentedOps step{0.2, 0.0, -1.0, true};
    DotSums dots;
    op.apply(x, y, step, &dots);  // warm-up (page faults, caches, the PERFWARNING)
    std::vector<double> t;
    for (int k = 0; k < reps; ++k) {
        const double s = sweep_clock();
        for (int j = 0; j < inner; ++j) {
            op.apply(x, y, step, &dots);
            std::swap(x, y);
        }
        t.push_back((sweep_clock() - s) / inner);
    }
    return best ? *std::min_element(t.begin(), t.end()) : median(t);
}

// --interleave: per repetition one sweep of every (width, operator) pair in turn, after one
// warm-up sweep each, so A/B comparisons and the R = 32 / R = 1 ratio see the same load
// (the bandwidth of this shared VM varies by 2x between minutes); the median per pair.
// Holds the x, y blocks of all widths at once.
template <class OpList>
std::map<std::pair<int, std::size_t>, double> time_sweeps_interleaved(const OpList& ops, const std::vector<int>& widths,
                                                                     global_index n, int reps)
{
    const AugmentedOps step{0.2, 0.0, -1.0, true};
    DotSums dots;
    std::vector<BlockVector> xs, ys;
    for (const int r : widths) {
        xs.emplace_back(n, r);
        ys.emplace_back(n, r);
        numerics::fill_random_phase_vectors(xs.back(), 1, 0, n);
        numerics::fill_random_phase_vectors(ys.back(), 2, 0, n);
    }
    for (std::size_t w = 0; w < widths.size(); ++w)
        for (const auto& o : ops) o.op->apply(xs[w], ys[w], step, &dots);
    std::map<std::pair<int, std::size_t>, std::vector<double>> t;
    for (int k = 0; k < reps; ++k)
        for (std::size_t w = 0; w < widths.size(); ++w)
            for (std::size_t i = 0; i < ops.size(); ++i) {
                const double s = sweep_clock();
                ops[i].op->apply(xs[w], ys[w], step, &dots);
                t[{widths[w], i}].push_back((sweep_clock() - s) / ops[i].sweeps);
                std::swap(xs[w], ys[w]);
            }
    std::map<std::pair<int, std::size_t>, double> out;
    for (auto& [key, v] : t) out[key] = median(v);
    return out;
}

std::string load_average()
{
    const std::string l = read_first_line("/proc/loadavg");
    return l.substr(0, l.find(' ', l.find(' ', l.find(' ') + 1) + 1));  // 1, 5, 15 minutes
}

bool wanted(const Args& a, const std::string& op) { return std::find(a.ops.begin(), a.ops.end(), op) != a.ops.end(); }

/// "sell-<C>" (plain), "sell-<C>t" (tiled, tile from R), "sell-<C>t<Ty>" (tile forced);
/// a trailing "s" (e.g. "sell-8ts"): the same in single precision (--precision single).
struct SellLabel {
    bool ok = false;
    int c = 0;
    bool tiled = false;
    int tile = 0;
    bool single = false;
    bool real = false;  ///< real stored values (BasicSellMatrix<double> / <float>)
};
SellLabel parse_sell_label(const std::string& label)
{
    SellLabel l;
    if (label.rfind("sell-", 0) != 0) return l;
    std::string rest = label.substr(5);
    if (!rest.empty() && rest.back() == 's') {
        l.single = true;
        rest.pop_back();
    }
    if (!rest.empty() && rest.back() == 'r') {
        l.real = true;
        rest.pop_back();
    }
    const auto t = rest.find('t');
    const std::string cs = rest.substr(0, t);
    if (cs.empty() || cs.find_first_not_of("0123456789") != std::string::npos) return l;
    l.c = std::atoi(cs.c_str());
    if (t != std::string::npos) {
        const std::string ts = rest.substr(t + 1);
        if (!ts.empty() && ts.find_first_not_of("0123456789") != std::string::npos) return l;
        l.tiled = true;
        l.tile = ts.empty() ? 0 : std::atoi(ts.c_str());
    }
    l.ok = l.c >= 1;
    return l;
}

/// The double matrix-free operator of op "free" (the defaults), "free-rows" (the sweep before
/// issue 35: the B = 4 site form off at R = 2, 4, 8 and no site-form prefetch) or "free-pf<N>"
/// (the site form's prefetch N bytes ahead), for A/B runs in one process (StencilTuning).
std::unique_ptr<Operator> free_operator(const BlockStencil& stencil, const std::string& label)
{
    numerics::StencilTuning tuning;
    if (label == "free-rows") {  // the sweep before issue 35
        tuning.wide_site_form = false;
        tuning.site_prefetch_bytes = 0;
    }
    if (label.rfind("free-pf", 0) == 0) tuning.site_prefetch_bytes = std::atoi(label.c_str() + 7);
    return numerics::make_cpu_stencil_operator(stencil, Precision::Double, tuning);
}

/// Benchmark adapter for two KPM sweeps per apply(): apply_two_steps(x, y) (y := s (H - shift) x
/// + beta y, then x := s (H - shift) y + beta x), the pass kpm-dos makes for every pair of sweeps
/// when the operator's fused_steps(R) is 2 (else the same two sweeps one after the other). The
/// harness divides its times by two: "free2" is timed per sweep, as "free".
class PairedSweep final : public Operator {
public:
    explicit PairedSweep(std::unique_ptr<Operator> op) : op_(std::move(op)) {}
    global_index num_rows() const override { return op_->num_rows(); }
    std::string name() const override { return op_->name(); }
    OperatorCost cost() const override { return op_->cost(); }

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        op_->apply_two_steps(const_cast<BlockVector&>(x), y, ops, dots, &second_);  // the harness's own blocks
    }

private:
    std::unique_ptr<Operator> op_;
    mutable DotSums second_;
};

/// Benchmark adapter for a single-precision operator: apply() ignores the double blocks
/// it is given (their width only selects a pair) and sweeps its own complex-float pair of
/// that width, swapping them after each sweep as the timing loops do with x and y. So the
/// harness times exactly the kernel kpm-dos --precision single runs.
/// two_steps: apply_two_steps() on the pair instead (free2s, timed per sweep as free2).
class SingleSweep final : public Operator {
public:
    explicit SingleSweep(std::unique_ptr<Operator> op, bool two_steps = false) : op_(std::move(op)), two_steps_(two_steps) {}
    global_index num_rows() const override { return op_->num_rows(); }
    Precision precision() const override { return Precision::Single; }
    std::string name() const override { return op_->name(); }
    OperatorCost cost() const override { return op_->cost(); }

protected:
    void do_apply(const BlockVector& x, BlockVector&, const AugmentedOps& ops, DotSums* dots) const override
    {
        auto& pair = blocks_[x.num_cols()];
        if (pair.first.num_rows() == 0) {
            BlockVector xd(num_rows(), x.num_cols()), yd(num_rows(), x.num_cols());
            numerics::fill_random_phase_vectors(xd, 1, 0, num_rows());
            numerics::fill_random_phase_vectors(yd, 2, 0, num_rows());
            pair = {convert_block<complex_single>(xd), convert_block<complex_single>(yd)};
        }
        if (two_steps_) {
            op_->apply_two_steps(pair.first, pair.second, ops, dots, &second_);
            return;
        }
        op_->apply(pair.first, pair.second, ops, dots);
        pair.first.swap(pair.second);
    }

private:
    std::unique_ptr<Operator> op_;
    bool two_steps_ = false;
    mutable DotSums second_;
    using SingleBlock = BasicBlockVector<complex_single>;
    mutable std::map<int, std::pair<SingleBlock, SingleBlock>> blocks_;
};

}  // namespace

int main(int argc, char** argv)
{
    const Args args = parse(argc, argv);
    const int threads = omp_get_max_threads();
    const Machine mach = machine_facts(threads, args.clock_ghz);
    const std::string load_start = load_average();
    std::printf("spmmv-bench: %d OpenMP thread(s); load average at start %s (other processes disturb timings)\n",
                threads, load_start.c_str());
    if (g_cpu_time)
        std::printf("sweep times: process CPU time / %d thread(s) (--cpu-time), not wall time; the triad b is wall "
                    "time, so P*, meas/P* and Omega below mix the two clocks\n",
                    threads);
    std::printf("SIMD path   : %s (compiled; numerics::kernels::cpu::compiled_isa())\n", mach.isa.c_str());
    std::printf("CPU         : %s, %s; %d logical CPU(s), %d physical core(s) in the topology "
                "(cpu0 thread_siblings_list = %s)\n",
                mach.cpu_model.c_str(), mach.uarch.c_str(), mach.logical_cpus, mach.physical_cores,
                mach.siblings_cpu0.empty() ? "n/a" : mach.siblings_cpu0.c_str());
    std::printf("clock       : %.3f GHz from %s\n", mach.clock_ghz, mach.clock_source.c_str());
    std::printf("flops/cycle : %d DP per core = %d doubles per SIMD op (datapath %d, compiled %d) x %d pipes x %d (%s)\n",
                mach.flops_per_cycle, mach.vector_doubles, mach.datapath_doubles, mach.compiled_doubles,
                mach.fp_pipes, mach.flops_per_op, mach.flops_note.c_str());
    std::printf("P_peak      : %d core(s) used x %.3f GHz x %d = %.1f Gflop/s (cores used = min(threads, physical cores))\n",
                mach.cores_used, mach.clock_ghz, mach.flops_per_cycle, mach.peak_gflops);
    const std::size_t triad_elements = static_cast<std::size_t>(args.triad_mib) << 17;  // MiB / 8 bytes
    const double bw = measure_triad_bandwidth_gbs(triad_elements, args.triad_reps);
    std::printf("b           : %.2f GB/s, STREAM-like triad (3 x %d MiB, 24 bytes/element, %d thread(s), median of %d)\n",
                bw, args.triad_mib, threads, args.triad_reps);

    hamiltonians::ModelParams mp;
    mp.name = args.model;
    mp.nx = args.nx;
    mp.ny = args.ny;
    mp.nz = args.nz;
    mp.disorder = 0.5;  // a generic diagonal, as in a disordered production run
    const auto model = hamiltonians::make_model(mp);
    const global_index n = model->num_rows();

    struct Op {
        std::string label;
        std::unique_ptr<Operator> op;
        int sweeps = 1;  ///< sweeps per apply() (free2: two, times are per sweep)
    };
    std::vector<Op> ops;
    double t0 = wall_seconds();
    if (wanted(args, "naive")) {
        auto crs = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {1, 1}));
        ops.push_back({"naive", numerics::make_naive_operator(crs)});
    }
    // SELL operators in the order of --ops; one matrix per C, shared by its plain and tiled sweeps.
    // S = orbitals x Nz rows per (x, y) cell: 4 Nz for ti, 2 for graphene (models.md §2, §3)
    const numerics::LatticeRowOrder lattice{args.nx, args.ny, model->orbitals_per_site() * args.nz};
    std::map<int, std::shared_ptr<const numerics::SellMatrix>> sell_by_c;
    const auto sell_matrix = [&](const hamiltonians::Model& mod, global_index rows, int c,
                                 std::map<int, std::shared_ptr<const numerics::SellMatrix>>& cache) {
        auto& m = cache[c];
        if (!m) m = std::make_shared<const numerics::SellMatrix>(numerics::SellMatrix::build(mod, 0, rows, {c, 256}));
        return m;
    };
    const auto make_sell = [](const SellLabel& l, std::shared_ptr<const numerics::SellMatrix> m,
                              const numerics::LatticeRowOrder& lat,
                              const hamiltonians::Model& mod) -> std::unique_ptr<Operator> {
        numerics::TileOptions o;
        o.tile_cells = l.tile;
        if (l.real) {  // real stored values, built from the model as make_operator does
            if (!mod.real_valued()) {
                std::fprintf(stderr, "spmmv-bench: real-valued ops need a real-valued model (graphene)\n");
                std::exit(2);
            }
            const numerics::SellParams p{m->chunk_height(), m->sigma()};
            if (l.single) {
                const auto f = std::make_shared<const numerics::BasicSellMatrix<float>>(
                    numerics::BasicSellMatrix<float>::build(mod, 0, m->num_rows(), p));
                return std::make_unique<SingleSweep>(l.tiled ? numerics::make_sell_operator(f, lat, o)
                                                             : numerics::make_sell_operator(f));
            }
            const auto d = std::make_shared<const numerics::BasicSellMatrix<double>>(
                numerics::BasicSellMatrix<double>::build(mod, 0, m->num_rows(), p));
            return l.tiled ? numerics::make_sell_operator(d, lat, o) : numerics::make_sell_operator(d);
        }
        if (l.single) {  // the double matrix rounded, as BasicSellMatrix<complex_single>::build does
            const auto f = std::make_shared<const numerics::BasicSellMatrix<complex_single>>(
                numerics::convert_values<complex_single>(*m));
            return std::make_unique<SingleSweep>(l.tiled ? numerics::make_sell_operator(f, lat, o)
                                                         : numerics::make_sell_operator(f));
        }
        if (!l.tiled) return numerics::make_sell_operator(std::move(m));
        return numerics::make_sell_operator(std::move(m), lat, o);
    };
    for (const std::string& label : args.ops) {
        if (label == "naive") continue;
        if (label == "frees") {  // the matrix-free stencil in single precision
            ops.push_back({"frees", std::make_unique<SingleSweep>(
                                        numerics::make_cpu_stencil_operator(model->block_stencil(), Precision::Single))});
            continue;
        }
        if (label == "free" || label == "free-rows" || label.rfind("free-pf", 0) == 0) {
            ops.push_back({label, free_operator(model->block_stencil(), label)});
            continue;
        }
        if (label == "free2") {  // two sweeps per apply where the stencil fuses them (fused_steps(R) = 2)
            ops.push_back({"free2", std::make_unique<PairedSweep>(numerics::make_cpu_stencil_operator(model->block_stencil())), 2});
            continue;
        }
        if (label == "free2s") {  // the same in single precision
            ops.push_back({"free2s", std::make_unique<SingleSweep>(
                                         numerics::make_cpu_stencil_operator(model->block_stencil(), Precision::Single), true),
                           2});
            continue;
        }
        const SellLabel l = parse_sell_label(label);
        if (!l.ok) {
            std::fprintf(stderr, "spmmv-bench: unknown op '%s'\n", label.c_str());
            usage(2);
        }
        const bool is_new = !sell_by_c.count(l.c);
        auto m = sell_matrix(*model, n, l.c, sell_by_c);
        if (is_new)
            std::printf("sell-%d-256: fill efficiency beta = %.4f, %.1f MiB\n", l.c, m->fill_efficiency(),
                        m->storage_bytes() / 1048576.0);
        ops.push_back({label, make_sell(l, m, lattice, *model)});
    }
    for (const Op& o : ops) {
        const SellLabel l = parse_sell_label(o.label);
        if (!l.tiled) continue;
        std::printf("%-8s: sweep order per R:", o.label.c_str());
        for (const int r : args.widths) {
            numerics::TileOptions to;
            to.tile_cells = l.tile;
            const auto s = numerics::lattice_chunk_schedule(*sell_by_c.at(l.c), lattice, r, omp_get_max_threads(), to);
            std::printf(" R=%d: %s", r, s.tile_cells ? ("Ty " + std::to_string(s.tile_cells)).c_str() : "static");
        }
        std::printf(" (%d threads)\n", omp_get_max_threads());
    }
    const double nnz = static_cast<double>(model->num_nonzeros(0, n));
    std::printf("%s %dx%dx%d (disorder 0.5): N = %lld rows, N_nz = %.0f (%.2f per row); matrices built in %.2f s\n",
                args.model.c_str(), args.nx, args.ny, args.nz, static_cast<long long>(n), nnz, nnz / double(n), wall_seconds() - t0);
    const auto opt = [](double v, const char* fmt) {
        char buf[32] = "-";
        if (v >= 0.0) std::snprintf(buf, sizeof buf, fmt, v);
        return std::string(buf);
    };
    const auto jnum = [](double v) {
        std::ostringstream s;
        if (v >= 0.0 && std::isfinite(v))
            s << v;
        else
            s << "null";
        return s.str();
    };

    // ---- σ scan: fill efficiency β and storage of SELL-C-σ, and the R = 1 sweep time ----
    std::ostringstream json_sigma;
    json_sigma.precision(10);
    if (args.sigma_scan) {
        std::printf("\nSELL-C-sigma scan (beta = N_nz / stored entries; R = 1 sweep, median of %d):\n", args.reps);
        std::printf("%4s %8s %8s %11s %9s %11s %9s\n", "C", "sigma", "beta", "storage", "build", "t(R=1)", "Gflop/s");
        std::printf("%4s %8s %8s %11s %9s %11s %9s\n", "", "[rows]", "", "[MiB]", "[s]", "[ms]", "");
        BlockVector x(n, 1), y(n, 1);
        numerics::fill_random_phase_vectors(x, 1, 0, n);
        numerics::fill_random_phase_vectors(y, 2, 0, n);
        bool first = true;
        for (const int c : {8, 32}) {
            for (const long long sigma_ll : {1LL, 32LL, 256LL, 4096LL, static_cast<long long>(n)}) {
                const int sigma = static_cast<int>(sigma_ll);
                const double tb = wall_seconds();
                auto m = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {c, sigma}));
                const double build_s = wall_seconds() - tb;
                const auto op = numerics::make_sell_operator(m);
                const double s = time_sweeps(*op, x, y, args.reps, 1);
                const double gf = perf::sweep_flops(nnz, double(n), 1) / s * 1e-9;
                std::printf("%4d %8d %8.4f %11.1f %9.2f %11.3f %9.2f%s\n", c, m->sigma(), m->fill_efficiency(),
                            m->storage_bytes() / 1048576.0, build_s, s * 1e3, gf,
                            sigma_ll == static_cast<long long>(n) ? "   (sigma = N)" : "");
                json_sigma << (first ? "\n" : ",\n") << "    {\"C\": " << c << ", \"sigma\": " << m->sigma()
                           << ", \"sigma_is_n\": " << (sigma_ll == static_cast<long long>(n) ? "true" : "false")
                           << ", \"beta\": " << m->fill_efficiency() << ", \"storage_mib\": "
                           << m->storage_bytes() / 1048576.0 << ", \"build_seconds\": " << build_s
                           << ", \"r1_seconds\": " << s << ", \"r1_gflops\": " << gf << "}";
                first = false;
            }
        }
    }

    // ---- In-cache limit P_LLC (seed 004 Eq. (11)): a down-sized lattice, same kernels ----
    std::map<std::string, std::map<int, double>> p_llc;  // op -> R -> Gflop/s
    std::ostringstream json_llc;
    json_llc.precision(10);
    if (args.lx > 0) {
        hamiltonians::ModelParams sp = mp;
        sp.nx = args.lx;
        sp.ny = args.ly;
        sp.nz = args.lz;
        const auto small = hamiltonians::make_model(sp);
        const global_index ns = small->num_rows();
        const double nnz_s = static_cast<double>(small->num_nonzeros(0, ns));
        std::printf("\nIn-cache limit P_LLC: %s %dx%dx%d, N = %lld rows (working set = matrix + x + y; "
                    "fastest single sweep of --reps x 2 ms of sweeps):\n",
                    args.model.c_str(), args.lx, args.ly, args.lz, static_cast<long long>(ns));
        std::printf("%-8s %3s %11s %9s %12s\n", "op", "R", "t [us]", "P_LLC", "working set");
        std::printf("%-8s %3s %11s %9s %12s\n", "", "", "per sweep", "[Gflop/s]", "[MiB]");
        bool first = true;
        const numerics::LatticeRowOrder small_lattice{args.lx, args.ly, small->orbitals_per_site() * args.lz};
        std::map<int, std::shared_ptr<const numerics::SellMatrix>> small_by_c;
        for (const std::string& label : args.ops) {
            const SellLabel l = parse_sell_label(label);
            const bool free_op = label == "free" || label == "free-rows" || label.rfind("free-pf", 0) == 0 ||
                                 label == "frees" || label == "free2" || label == "free2s";
            if (!l.ok && !free_op) continue;
            std::unique_ptr<Operator> op;
            const int per_apply = label == "free2" || label == "free2s" ? 2 : 1;  // two sweeps per apply, timed per sweep
            if (label == "free" || label == "free-rows" || label.rfind("free-pf", 0) == 0)
                op = free_operator(small->block_stencil(), label);
            else if (label == "free2")
                op = std::make_unique<PairedSweep>(numerics::make_cpu_stencil_operator(small->block_stencil()));
            else if (label == "free2s")
                op = std::make_unique<SingleSweep>(
                    numerics::make_cpu_stencil_operator(small->block_stencil(), Precision::Single), true);
            else if (label == "frees")
                op = std::make_unique<SingleSweep>(
                    numerics::make_cpu_stencil_operator(small->block_stencil(), Precision::Single));
            else op = make_sell(l, sell_matrix(*small, ns, l.c, small_by_c), small_lattice, *small);
            for (const int r : args.widths) {
                BlockVector x(ns, r), y(ns, r);
                numerics::fill_random_phase_vectors(x, 1, 0, ns);
                numerics::fill_random_phase_vectors(y, 2, 0, ns);
                const double probe = time_sweeps(*op, x, y, 3, 1);
                // The fastest of many single sweeps (as many as fit in reps x 2 ms): an in-core
                // figure that a time slice lost to another process does not inflate (on a
                // loaded host a 2 ms batch rarely runs uninterrupted).
                const int sweeps = static_cast<int>(
                    std::clamp(std::ceil(args.reps * 2e-3 / std::max(probe, 1e-9)), double(args.reps), 20000.0));
                const double s = time_sweeps(*op, x, y, sweeps, 1, true) / per_apply;
                const double gf = perf::sweep_flops(nnz_s, double(ns), r) / s * 1e-9;
                const bool single = l.single || label == "frees" || label == "free2s";
                const double ws = (op->cost().storage_bytes + 2.0 * (single ? 8.0 : 16.0) * double(ns) * r) / 1048576.0;
                p_llc[label][r] = gf;
                std::printf("%-8s %3d %11.1f %9.2f %12.1f\n", label.c_str(), r, s * 1e6, gf, ws);
                json_llc << (first ? "\n" : ",\n") << "      {\"op\": \"" << label << "\", \"R\": " << r
                         << ", \"seconds\": " << s << ", \"gflops\": " << gf << ", \"working_set_mib\": " << ws << "}";
                first = false;
            }
        }
    }

    // ---- The roofline table ----
    const double per_row = nnz / double(n);
    std::printf("\n%s %dx%dx%d, %d reps, median. flops/sweep = R (8 N_nz + 34 N); B_min(R) = (%.2f e/R + 3 v)/%.1f "
                "bytes/flop\n(e = bytes per stored entry: 20 complex double, 12 single or real double, 8 real single; "
                "v = 16 double, 8 single);\nP* = min(P_peak, b / B_min(R)) with b = %.2f GB/s, P_peak = %.1f Gflop/s; "
                "Omega = t / (V_own / b);\nown P* = min(P_peak, b F / V_own), V_own = the operator's own bytes "
                "(SELL: its arrays incl. padding; free: the potential) + the vectors\n\n",
                args.model.c_str(), args.nx, args.ny, args.nz, args.reps, per_row, 8 * per_row + 34, bw,
                mach.peak_gflops);
    const char* hfmt = "%-8s %3s %9s %8s %7s %7s %8s %7s %6s %8s %7s %8s %7s %7s %6s %6s\n";
    std::printf(hfmt, "op", "R", "t [ms]", "Gflop/s", "GB/s", "B_min", "P*", "meas/P*", "Omega", "own P*", "/own P*",
                "P_LLC", "/P_LLC", "/P_peak", "x R=1", "vs");
    std::printf(hfmt, "", "", "per sweep", "", "(min)", "[B/flop]", "[Gflop/s]", "[%]", "", "[Gflop/s]", "[%]",
                "[Gflop/s]", "[%]", "[%]", "[x]", "naive");
    std::ostringstream json;
    json.precision(10);
    bool first = true;
    std::map<std::string, double> t_r1;                    // op -> seconds at R = 1
    std::map<std::string, std::map<int, double>> t_all;  // op -> R -> seconds
    std::map<std::pair<int, std::size_t>, double> interleaved;  // (R, op index) -> seconds
    if (args.interleave) interleaved = time_sweeps_interleaved(ops, args.widths, n, args.reps);
    for (const int r : args.widths) {
        BlockVector x, y;  // --interleave: timed above
        if (!args.interleave) {
            x = BlockVector(n, r);
            y = BlockVector(n, r);
            numerics::fill_random_phase_vectors(x, 1, 0, n);
            numerics::fill_random_phase_vectors(y, 2, 0, n);
        }
        double naive_seconds = 0.0;
        for (std::size_t oi = 0; oi < ops.size(); ++oi) {
            const Op& o = ops[oi];
            const OperatorCost cost = o.op->cost();
            const double flops = perf::sweep_flops(nnz, double(n), r);
            const bool single = o.op->precision() == Precision::Single;
            const double own_bytes = perf::sweep_bytes(cost.matrix_bytes, double(n), r, single ? 8.0 : 16.0);
            const double seconds =
                args.interleave ? interleaved.at({r, oi}) : time_sweeps(*o.op, x, y, args.reps, 1) / o.sweeps;
            if (o.label == "naive") naive_seconds = seconds;
            if (r == 1) t_r1[o.label] = seconds;
            t_all[o.label][r] = seconds;
            const double gflops = flops / seconds * 1e-9;
            // Each format against its own minimum traffic (single: 8-byte vector values; real:
            // half-size stored values), so P* is its roofline (ti complex: (260/R + 48)/138).
            const bool real = parse_sell_label(o.label).real;
            const double entry_bytes = (single ? 8.0 : 16.0) / (real ? 2.0 : 1.0) + 4.0;
            const double balance =
                (entry_bytes * per_row / r + 3.0 * (single ? 8.0 : 16.0)) / (8.0 * per_row + 34.0);
            int tile_cells = 0;  // y tile of the tiled SELL sweep order (0: static split)
            if (const SellLabel l = parse_sell_label(o.label); l.tiled) {
                numerics::TileOptions to;
                to.tile_cells = l.tile;
                const int ty = numerics::lattice_tile_cells(lattice, r, to);
                tile_cells = ty < lattice.ny ? ty : 0;
            }
            const double p_mem = perf::roofline_gflops(bw, balance);
            const double pstar = perf::roofline_gflops(bw, balance, mach.peak_gflops);
            const double own_pstar = perf::roofline_gflops(bw, own_bytes / flops, mach.peak_gflops);
            const double omega = seconds / (own_bytes / (bw * 1e9));
            const auto llc_it = p_llc.find(o.label);
            const double pl = llc_it != p_llc.end() && llc_it->second.count(r) ? llc_it->second.at(r) : -1.0;
            const double per_vm = t_r1.count(o.label) ? t_r1[o.label] * r / seconds : -1.0;
            const double vs_naive = naive_seconds > 0.0 ? naive_seconds / seconds : -1.0;
            std::printf("%-8s %3d %9.3f %8.2f %7.2f %7.3f %8.2f %7.0f %6.2f %8.2f %7.0f %8s %7s %7.1f %6s %6s\n",
                        o.label.c_str(), r, seconds * 1e3, gflops, own_bytes / seconds * 1e-9, balance, pstar,
                        100.0 * gflops / pstar, omega, own_pstar, 100.0 * gflops / own_pstar, opt(pl, "%.2f").c_str(),
                        opt(pl > 0 ? 100.0 * gflops / pl : -1.0, "%.0f").c_str(), 100.0 * gflops / mach.peak_gflops,
                        opt(per_vm, "%.2f").c_str(), opt(vs_naive, "%.2f").c_str());
            json << (first ? "\n" : ",\n") << "    {\"op\": \"" << o.label << "\", \"name\": " << json_string(o.op->name())
                 << ", \"R\": " << r << ", \"tile_cells\": " << tile_cells << ", \"seconds\": " << seconds
                 << ", \"flops\": " << flops
                 << ", \"own_bytes\": " << own_bytes << ", \"gflops\": " << gflops
                 << ", \"gb_s\": " << own_bytes / seconds * 1e-9 << ", \"b_min\": " << balance
                 << ", \"memory_roofline_gflops\": " << p_mem << ", \"roofline_gflops\": " << pstar
                 << ", \"meas_over_roofline\": " << gflops / pstar << ", \"omega\": " << omega
                 << ", \"own_roofline_gflops\": " << own_pstar << ", \"meas_over_own_roofline\": " << gflops / own_pstar
                 << ", \"llc_gflops\": " << jnum(pl)
                 << ", \"meas_over_llc\": " << jnum(pl > 0 ? gflops / pl : -1.0)
                 << ", \"meas_over_peak\": " << gflops / mach.peak_gflops
                 << ", \"speedup_per_vector_moment_vs_r1\": " << jnum(per_vm)
                 << ", \"speedup_vs_naive\": " << jnum(vs_naive) << "}";
            first = false;
        }
    }
    std::printf("\nper vector-moment speed-up at the largest R over R = 1 (target at R = 32: >= 4x):\n");
    const int rmax = *std::max_element(args.widths.begin(), args.widths.end());
    for (const Op& o : ops) {
        const auto& t = t_all[o.label];
        if (!t.count(1) || !t.count(rmax)) continue;
        const double gf = perf::sweep_flops(nnz, double(n), rmax) / t.at(rmax) * 1e-9;
        const auto llc_it = p_llc.find(o.label);
        const double pl = llc_it != p_llc.end() && llc_it->second.count(rmax) ? llc_it->second.at(rmax) : -1.0;
        std::printf("  %-8s R = %d: %.2fx (t(1) = %.3f ms, t(%d) = %.3f ms); %.2f Gflop/s = %.1f %% of P_peak%s\n",
                    o.label.c_str(), rmax, t.at(1) * rmax / t.at(rmax), t.at(1) * 1e3, rmax, t.at(rmax) * 1e3, gf,
                    100.0 * gf / mach.peak_gflops,
                    pl > 0 ? (", " + opt(100.0 * gf / pl, "%.0f") + " % of P_LLC").c_str() : "");
    }
    const double bw_end = measure_triad_bandwidth_gbs(triad_elements, args.triad_reps);
    const std::string load_end = load_average();
    std::printf("b at the end: %.2f GB/s (start %.2f GB/s; the model uses the start value); load average %s\n",
                bw_end, bw, load_end.c_str());

    std::ostringstream doc;
    doc.precision(10);
    char derivation[256];
    std::snprintf(derivation, sizeof derivation, "%d core(s) x %.3f GHz x %d flops/cycle (%d doubles x %d pipes x %d)",
                  mach.cores_used, mach.clock_ghz, mach.flops_per_cycle, mach.vector_doubles, mach.fp_pipes,
                  mach.flops_per_op);
    doc << "{\n  \"threads\": " << threads << ",\n  \"machine\": {\"isa\": " << json_string(mach.isa)
        << ", \"cpu_model\": " << json_string(mach.cpu_model) << ", \"vendor\": " << json_string(mach.vendor)
        << ", \"uarch\": " << json_string(mach.uarch) << ", \"family\": " << mach.family << ", \"model\": " << mach.model
        << ",\n    \"logical_cpus\": " << mach.logical_cpus << ", \"physical_cores\": " << mach.physical_cores
        << ", \"cores_used\": " << mach.cores_used << ", \"thread_siblings_cpu0\": " << json_string(mach.siblings_cpu0)
        << ",\n    \"clock_ghz\": " << mach.clock_ghz << ", \"clock_source\": " << json_string(mach.clock_source)
        << ",\n    \"datapath_doubles\": " << mach.datapath_doubles << ", \"compiled_doubles\": " << mach.compiled_doubles
        << ", \"vector_doubles\": " << mach.vector_doubles << ", \"fp_pipes\": " << mach.fp_pipes
        << ", \"flops_per_op\": " << mach.flops_per_op << ", \"flops_per_cycle\": " << mach.flops_per_cycle
        << ",\n    \"flops_note\": " << json_string(mach.flops_note) << ",\n    \"peak_gflops\": " << mach.peak_gflops
        << ", \"peak_derivation\": " << json_string(derivation) << "},\n  \"stream_gb_s\": " << bw
        << ",\n  \"stream_gb_s_end\": " << bw_end << ",\n  \"load_average_start\": " << json_string(load_start)
        << ", \"load_average_end\": " << json_string(load_end) << ",\n  \"triad\": {\"mib_per_array\": " << args.triad_mib
        << ", \"reps\": " << args.triad_reps << "},\n  \"model\": " << json_string(args.model)
        << ",\n  \"lattice\": [" << args.nx << ", " << args.ny << ", " << args.nz
        << "],\n  \"rows\": " << n << ",\n  \"nonzeros\": " << nnz << ",\n  \"reps\": " << args.reps
        << ",\n  \"sigma_scan\": [" << json_sigma.str() << "\n  ],\n  \"llc\": {\"lattice\": [" << args.lx << ", "
        << args.ly << ", " << args.lz << "], \"results\": [" << json_llc.str() << "\n  ]},\n  \"results\": ["
        << json.str() << "\n  ]\n}\n";
    if (!args.json.empty()) {
        std::ofstream out(args.json);
        out << doc.str();
        out.flush();
        if (!out) {
            std::fprintf(stderr, "spmmv-bench: cannot write %s\n", args.json.c_str());
            return 1;
        }
        std::printf("\nJSON written to %s\n", args.json.c_str());
    }
    return 0;
}
