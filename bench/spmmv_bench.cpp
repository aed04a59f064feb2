// spmmv-bench: the augmented SpMMV on this machine against its memory-bandwidth roofline.
//
// 1. STREAM-like triad a = b + s c (3 x 256 MiB, same thread count): the bandwidth b.
// 2. For R = 1, 2, 4, 8, 16, 32 and the operators sell (C = 32, sigma = 256), free (the
//    matrix-free stencil) and naive (SpMV + BLAS-1, seed 004 Fig. 3, the baseline): the
//    median time of one augmented sweep (beta = -1, dots on, as in KPM), Gflop/s, GB/s of
//    minimum traffic, the roofline P* = b / B(R) with B from the operator's own bytes and
//    flops, the ratio measured / P*, and the speed-up over naive at the same R.
// Not a test: numbers depend on the machine and its load. Medians of --reps repetitions.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
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

struct Args {
    int nx = 64, ny = 64, nz = 40;
    int reps = 7;
    int max_width = 32;
    std::string json;
};

Args parse(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (k == "--lattice" && v && std::sscanf(v, "%dx%dx%d", &a.nx, &a.ny, &a.nz) == 3) ++i;
        else if (k == "--reps" && v) a.reps = std::max(1, std::atoi(argv[++i]));
        else if (k == "--max-width" && v) a.max_width = std::max(1, std::atoi(argv[++i]));
        else if (k == "--json" && v) a.json = argv[++i];
        else {
            std::printf("usage: spmmv-bench [--lattice NxxNyxNz (ti, default 64x64x40)] [--reps N (7)]\n"
                        "                   [--max-width R (32)] [--json FILE]\n"
                        "threads: OMP_NUM_THREADS (default all cores)\n");
            std::exit(k == "--help" || k == "-h" ? 0 : 2);
        }
    }
    return a;
}

}  // namespace

int main(int argc, char** argv)
{
    const Args args = parse(argc, argv);
    const int threads = omp_get_max_threads();
    const double bw = measure_triad_bandwidth_gbs(std::size_t(1) << 25, 10);
    std::printf("spmmv-bench: %d OpenMP thread(s); STREAM triad (3 x 256 MiB, median of 10): %.2f GB/s\n", threads, bw);

    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = args.nx;
    p.ny = args.ny;
    p.nz = args.nz;
    p.disorder = 0.5;  // a generic diagonal, like a disordered production run
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    const double t0 = wall_seconds();
    auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {32, 256}));
    auto crs = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {1, 1}));
    std::printf("ti %dx%dx%d: N = %lld rows, nnz = %lld (%.2f per row), SELL-32-256 beta = %.4f, built in %.2f s\n",
                args.nx, args.ny, args.nz, static_cast<long long>(n), static_cast<long long>(sell->num_nonzeros()),
                double(sell->num_nonzeros()) / n, sell->fill_efficiency(), wall_seconds() - t0);
    std::printf("model: B_min(R) = (260/R + 48)/138 bytes/flop (13 nnz/row); P* = b / B(R) with each operator's own bytes\n\n");

    struct Op {
        std::string label;
        std::unique_ptr<Operator> op;
    };
    std::vector<Op> ops;
    ops.push_back({"naive", numerics::make_naive_operator(crs)});
    ops.push_back({"sell", numerics::make_sell_operator(sell)});
    ops.push_back({"free", model->make_matrix_free()});

    std::printf("%-6s %3s %12s %10s %10s %12s %12s %8s %9s\n", "op", "R", "time/sweep", "Gflop/s", "GB/s",
                "B(R) B/flop", "P* Gflop/s", "of P*", "vs naive");
    std::string json = "[\n";
    for (int r = 1; r <= args.max_width; r *= 2) {
        BlockVector x(n, r), y(n, r);
        numerics::fill_random_phase_vectors(x, 1, 0, n);
        numerics::fill_random_phase_vectors(y, 2, 0, n);
        double naive_time = 0.0;
        for (const Op& o : ops) {
            const OperatorCost cost = o.op->cost();
            const double flops = perf::sweep_flops(cost.nonzeros, double(n), r);
            const double bytes = perf::sweep_bytes(cost.matrix_bytes, double(n), r);
            DotSums dots;
            const AugmentedOps step{0.2, 0.0, -1.0, true};
            o.op->apply(x, y, step, &dots);  // warm-up
            std::vector<double> t;
            for (int k = 0; k < args.reps; ++k) {
                const double s = wall_seconds();
                o.op->apply(x, y, step, &dots);
                t.push_back(wall_seconds() - s);
                std::swap(x, y);  // the KPM access pattern: last output is next input
            }
            const double tm = median(t);
            if (o.label == "naive") naive_time = tm;
            const double balance = bytes / flops;
            const double pstar = perf::roofline_gflops(bw, balance);
            const double gflops = flops / tm * 1e-9;
            std::printf("%-6s %3d %10.3f ms %10.2f %10.2f %12.3f %12.2f %7.0f%% %8.2fx\n", o.label.c_str(), r, tm * 1e3,
                        gflops, bytes / tm * 1e-9, balance, pstar, 100.0 * gflops / pstar, naive_time / tm);
            char line[512];
            std::snprintf(line, sizeof line,
                          "  {\"op\": \"%s\", \"R\": %d, \"seconds\": %.6e, \"gflops\": %.4f, \"gbytes_per_s\": %.4f, "
                          "\"balance\": %.5f, \"roofline_gflops\": %.4f, \"stream_gb_s\": %.3f},\n",
                          o.label.c_str(), r, tm, gflops, bytes / tm * 1e-9, balance, pstar, bw);
            json += line;
        }
    }
    if (!args.json.empty()) {
        if (json.size() > 2) json.erase(json.size() - 2, 1);  // trailing comma
        json += "]\n";
        std::ofstream(args.json) << json;
        std::printf("\nJSON written to %s\n", args.json.c_str());
    }
    return 0;
}
