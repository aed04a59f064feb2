// spmmv-bench: the augmented SpMMV on this machine against its memory-bandwidth roofline.
//
// 1. STREAM-like triad a = b + s c (3 arrays of --triad-mib MiB, far beyond the caches,
//    same thread count, median of 10): the attainable bandwidth b in GB/s.
// 2. The ti model (64 x 64 x 40 sites by default, 4 orbitals, ~13 stored entries per row)
//    as SELL-32-256, SELL-8-256 and CRS, and its matrix-free stencil operator.
// 3. For R = 1, 2, 4, 8, 16, 32 and each operator: the median time of one augmented sweep
//    (beta = -1, both dots, as in a KPM step), after one warm-up sweep.
//
// Flops per sweep, seed 004 Table I with complex scalars (F_a = 2, F_m = 6 flops per
// complex add / multiply), per block column:
//     F = N_nz (F_a + F_m) + N (ceil(7 F_a / 2) + ceil(9 F_m / 2)) = 8 N_nz + 34 N
// (8 per complex multiply-add; 34 per row for shift, scale, axpby and the two dots).
// Minimum traffic per sweep (Eq. (4)): V = N_nz (S_d + S_i) + 3 R S_d N, the matrix once
// (16-byte value + 4-byte column) and x read, y read, y written once per row and column.
// For 13 entries per row the code balance is (Eq. (5), (6)):
//     B_min(R) = V / (R F) = (260 / R + 48) / 138 bytes/flop   (B_min(1) = 2.23)
// and the roofline prediction P* = b / B_min(R) (Eq. (9), no compute cap).
//
// Columns: time per sweep [ms]; Gflop/s = R F / t; GB/s = the operator's own minimum
// traffic / t (matrix bytes it really holds, incl. SELL padding; the potential only for
// the matrix-free operator); P* [Gflop/s] from B_min(R) above; meas/P* in %; the speed-up
// over the naive path (CRS SpMV + BLAS-1 sweeps, seed 004 Fig. 3) at the same R.
// The matrix-free operator reads almost no matrix, so its own roofline is higher than
// P*; the "own P*" column gives b / B_own for every operator.
//
// Not a test: the numbers depend on the machine and on its load. Threads: OMP_NUM_THREADS.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/perf_model.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"

using namespace topokpm;

namespace {

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
    int nx = 64, ny = 64, nz = 40;
    int reps = 7;
    int triad_mib = 256;
    std::vector<int> widths{1, 2, 4, 8, 16, 32};
    std::vector<std::string> ops{"naive", "sell-32", "sell-8", "free"};
    std::string json;
};

[[noreturn]] void usage(int code)
{
    std::printf(
        "usage: spmmv-bench [options]\n"
        "  --lattice NXxNYxNZ  ti lattice in sites (default 64x64x40: N = 655360 rows)\n"
        "  --reps N            timed sweeps per operator and width, median reported (default 7)\n"
        "  --widths LIST       block widths R, comma-separated (default 1,2,4,8,16,32)\n"
        "  --ops LIST          of naive,sell-32,sell-8,free (default all)\n"
        "  --triad-mib M       size of each of the 3 triad arrays in MiB (default 256)\n"
        "  --json FILE         also write the results as JSON\n"
        "threads: OMP_NUM_THREADS (default: all cores)\n");
    std::exit(code);
}

Args parse(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--help" || k == "-h") usage(0);
        if (i + 1 >= argc) usage(2);
        const std::string v = argv[++i];
        if (k == "--lattice") {
            if (std::sscanf(v.c_str(), "%dx%dx%d", &a.nx, &a.ny, &a.nz) != 3) usage(2);
        } else if (k == "--reps") {
            a.reps = std::max(1, std::atoi(v.c_str()));
        } else if (k == "--widths") {
            a.widths.clear();
            for (const std::string& w : split(v)) a.widths.push_back(std::max(1, std::atoi(w.c_str())));
        } else if (k == "--ops") {
            a.ops = split(v);
        } else if (k == "--triad-mib") {
            a.triad_mib = std::max(1, std::atoi(v.c_str()));
        } else if (k == "--json") {
            a.json = v;
        } else {
            usage(2);
        }
    }
    return a;
}

bool wanted(const Args& a, const std::string& op) { return std::find(a.ops.begin(), a.ops.end(), op) != a.ops.end(); }

}  // namespace

int main(int argc, char** argv)
{
    const Args args = parse(argc, argv);
    const int threads = omp_get_max_threads();
    const std::size_t triad_elements = static_cast<std::size_t>(args.triad_mib) << 17;  // MiB / 8 bytes
    const double bw = measure_triad_bandwidth_gbs(triad_elements, 10);
    std::printf("spmmv-bench: %d OpenMP thread(s)\n", threads);
    std::printf("STREAM-like triad (3 x %d MiB, 24 bytes/element, median of 10): b = %.2f GB/s\n", args.triad_mib, bw);

    hamiltonians::ModelParams mp;
    mp.name = "ti";
    mp.nx = args.nx;
    mp.ny = args.ny;
    mp.nz = args.nz;
    mp.disorder = 0.5;  // a generic diagonal, as in a disordered production run
    const auto model = hamiltonians::make_model(mp);
    const global_index n = model->num_rows();

    struct Op {
        std::string label;
        std::unique_ptr<Operator> op;
    };
    std::vector<Op> ops;
    double t0 = wall_seconds();
    if (wanted(args, "naive")) {
        auto crs = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {1, 1}));
        ops.push_back({"naive", numerics::make_naive_operator(crs)});
    }
    for (const int c : {32, 8}) {
        const std::string label = "sell-" + std::to_string(c);
        if (!wanted(args, label)) continue;
        auto m = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {c, 256}));
        std::printf("%s-256: fill efficiency beta = %.4f, %.1f MiB\n", label.c_str(), m->fill_efficiency(),
                    m->storage_bytes() / 1048576.0);
        ops.push_back({label, numerics::make_sell_operator(m)});
    }
    if (wanted(args, "free")) ops.push_back({"free", model->make_matrix_free()});
    const double nnz = static_cast<double>(model->num_nonzeros(0, n));
    std::printf("ti %dx%dx%d (disorder 0.5): N = %lld rows, N_nz = %.0f (%.2f per row); matrices built in %.2f s\n",
                args.nx, args.ny, args.nz, static_cast<long long>(n), nnz, nnz / double(n), wall_seconds() - t0);
    std::printf("flops/sweep = R (8 N_nz + 34 N); P* = b / B_min(R), B_min(R) = (260/R + 48)/138 bytes/flop;"
                " %d reps, median\n\n",
                args.reps);

    std::printf("%-8s %3s %11s %9s %9s %9s %9s %8s %9s %9s\n", "op", "R", "t [ms]", "Gflop/s", "GB/s", "B_min",
                "P*", "meas/P*", "own P*", "vs naive");
    std::printf("%-8s %3s %11s %9s %9s %9s %9s %8s %9s %9s\n", "", "", "per sweep", "", "(min)", "[B/flop]",
                "[Gflop/s]", "[%]", "[Gflop/s]", "[x]");
    std::ostringstream json;
    json << "{\n  \"threads\": " << threads << ",\n  \"stream_gb_s\": " << bw << ",\n  \"lattice\": [" << args.nx
         << ", " << args.ny << ", " << args.nz << "],\n  \"rows\": " << n << ",\n  \"nonzeros\": " << nnz
         << ",\n  \"results\": [";
    bool first = true;
    for (const int r : args.widths) {
        BlockVector x(n, r), y(n, r);
        numerics::fill_random_phase_vectors(x, 1, 0, n);
        numerics::fill_random_phase_vectors(y, 2, 0, n);
        double naive_seconds = 0.0;
        for (const Op& o : ops) {
            const OperatorCost cost = o.op->cost();
            const double flops = perf::sweep_flops(nnz, double(n), r);
            const double own_bytes = perf::sweep_bytes(cost.matrix_bytes, double(n), r);
            const AugmentedOps step{0.2, 0.0, -1.0, true};
            DotSums dots;
            o.op->apply(x, y, step, &dots);  // warm-up (page faults, caches, the PERFWARNING)
            std::vector<double> t;
            for (int k = 0; k < args.reps; ++k) {
                const double s = wall_seconds();
                o.op->apply(x, y, step, &dots);
                t.push_back(wall_seconds() - s);
                std::swap(x, y);  // the KPM access pattern: the last output is the next input
            }
            const double seconds = median(t);
            if (o.label == "naive") naive_seconds = seconds;
            const double gflops = flops / seconds * 1e-9;
            const double balance = perf::code_balance_13(r);
            const double pstar = perf::roofline_gflops(bw, balance);
            const double own_pstar = perf::roofline_gflops(bw, own_bytes / flops);
            char speedup[32] = "-";
            if (naive_seconds > 0.0) std::snprintf(speedup, sizeof speedup, "%.2f", naive_seconds / seconds);
            std::printf("%-8s %3d %11.3f %9.2f %9.2f %9.3f %9.2f %8.0f %9.2f %9s\n", o.label.c_str(), r,
                        seconds * 1e3, gflops, own_bytes / seconds * 1e-9, balance, pstar, 100.0 * gflops / pstar,
                        own_pstar, speedup);
            json << (first ? "\n" : ",\n") << "    {\"op\": \"" << o.label << "\", \"name\": \"" << o.op->name()
                 << "\", \"R\": " << r << ", \"seconds\": " << seconds << ", \"gflops\": " << gflops
                 << ", \"gb_s\": " << own_bytes / seconds * 1e-9 << ", \"b_min\": " << balance
                 << ", \"roofline_gflops\": " << pstar << ", \"own_roofline_gflops\": " << own_pstar << "}";
            first = false;
        }
    }
    json << "\n  ]\n}\n";
    if (!args.json.empty()) {
        std::ofstream out(args.json);
        out << json.str();
        out.flush();
        if (!out) {
            std::fprintf(stderr, "spmmv-bench: cannot write %s\n", args.json.c_str());
            return 1;
        }
        std::printf("\nJSON written to %s\n", args.json.c_str());
    }
    return 0;
}
