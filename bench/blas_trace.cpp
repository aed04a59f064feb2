// blas-trace: an LD_PRELOAD library that times every call of the dense kernels the
// eigensolvers make (cblas_z*, LAPACKE_z* of numerics/eigs and the tile engine's TSQR
// kernels) and prints, at exit, one line per (routine, shape, inside an OpenMP parallel
// region or not): calls, seconds, Gflop (the LAPACK Working Note 41 counts, complex = 4
// real multiplies + 4 adds per multiply-add) and the rate. A profiling aid for benchmarks
// (docs/eigs.md), not part of any program:
//     LD_PRELOAD=build/bench/libblas-trace.so BLAS_TRACE=trace.txt kpm-eigs ...
// Calls inside parallel regions are summed over the threads (thread-seconds).

#include <dlfcn.h>
#include <omp.h>

#include <chrono>
#include <complex>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace {

struct Entry {
    long calls = 0;
    double seconds = 0.0;
    double flops = 0.0;
};

struct Trace {
    std::mutex lock;
    std::map<std::string, Entry> entries;
    ~Trace()
    {
        const char* path = std::getenv("BLAS_TRACE");
        FILE* f = path ? std::fopen(path, "w") : stderr;
        if (!f) f = stderr;
        std::fprintf(f, "%-70s %8s %10s %10s %8s\n", "routine shape [par: inside omp parallel]", "calls", "seconds",
                     "Gflop", "Gflop/s");
        for (const auto& [key, e] : entries)
            std::fprintf(f, "%-70s %8ld %10.3f %10.2f %8.2f\n", key.c_str(), e.calls, e.seconds, e.flops * 1e-9,
                         e.seconds > 0 ? e.flops * 1e-9 / e.seconds : 0.0);
        if (f != stderr) std::fclose(f);
    }
};
Trace& trace()
{
    static Trace t;
    return t;
}

template <class F>
F next(const char* name)
{
    void* p = dlsym(RTLD_NEXT, name);
    if (!p) {
        std::fprintf(stderr, "blas-trace: %s not found\n", name);
        std::abort();
    }
    return reinterpret_cast<F>(p);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void record(const std::string& shape, double seconds, double flops)
{
    const std::string key = shape + (omp_in_parallel() ? " par" : "");
    std::lock_guard<std::mutex> g(trace().lock);
    Entry& e = trace().entries[key];
    ++e.calls;
    e.seconds += seconds;
    e.flops += flops;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

char tr(int t) { return t == 111 ? 'N' : t == 112 ? 'T' : 'C'; }

}  // namespace

extern "C" {

void cblas_zgemm(int layout, int ta, int tb, int m, int n, int k, const void* alpha, const void* a, int lda,
                 const void* b, int ldb, const void* beta, void* c, int ldc)
{
    using F = void (*)(int, int, int, int, int, int, const void*, const void*, int, const void*, int, const void*,
                       void*, int);
    static F f = next<F>("cblas_zgemm");
    const double t = now();
    f(layout, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    record(fmt("zgemm %c%c m=%d n=%d k=%d", tr(ta), tr(tb), m, n, k), now() - t, 8.0 * m * n * k);
}

void cblas_zherk(int layout, int uplo, int trans, int n, int k, double alpha, const void* a, int lda, double beta,
                 void* c, int ldc)
{
    using F = void (*)(int, int, int, int, int, double, const void*, int, double, void*, int);
    static F f = next<F>("cblas_zherk");
    const double t = now();
    f(layout, uplo, trans, n, k, alpha, a, lda, beta, c, ldc);
    record(fmt("zherk %c n=%d k=%d", tr(trans), n, k), now() - t, 4.0 * n * double(n + 1) * k);
}

void cblas_ztrsm(int layout, int side, int uplo, int ta, int diag, int m, int n, const void* alpha, const void* a,
                 int lda, void* b, int ldb)
{
    using F = void (*)(int, int, int, int, int, int, int, const void*, const void*, int, void*, int);
    static F f = next<F>("cblas_ztrsm");
    const double t = now();
    f(layout, side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb);
    const double tri = side == 141 ? double(m) : double(n);  // CblasLeft = 141
    record(fmt("ztrsm %s m=%d n=%d", side == 141 ? "L" : "R", m, n), now() - t, 4.0 * tri * tri * (side == 141 ? n : m));
}

void cblas_ztrmm(int layout, int side, int uplo, int ta, int diag, int m, int n, const void* alpha, const void* a,
                 int lda, void* b, int ldb)
{
    using F = void (*)(int, int, int, int, int, int, int, const void*, const void*, int, void*, int);
    static F f = next<F>("cblas_ztrmm");
    const double t = now();
    f(layout, side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb);
    const double tri = side == 141 ? double(m) : double(n);
    record(fmt("ztrmm %s m=%d n=%d", side == 141 ? "L" : "R", m, n), now() - t, 4.0 * tri * tri * (side == 141 ? n : m));
}

void cblas_zgemv(int layout, int ta, int m, int n, const void* alpha, const void* a, int lda, const void* x, int incx,
                 const void* beta, void* y, int incy)
{
    using F = void (*)(int, int, int, int, const void*, const void*, int, const void*, int, const void*, void*, int);
    static F f = next<F>("cblas_zgemv");
    const double t = now();
    f(layout, ta, m, n, alpha, a, lda, x, incx, beta, y, incy);
    record(fmt("zgemv %c m=%d n=%d", tr(ta), m, n), now() - t, 8.0 * m * n);
}

int LAPACKE_zpotrf(int layout, char uplo, int n, void* a, int lda)
{
    using F = int (*)(int, char, int, void*, int);
    static F f = next<F>("LAPACKE_zpotrf");
    const double t = now();
    const int info = f(layout, uplo, n, a, lda);
    record(fmt("zpotrf n=%d", n), now() - t, 4.0 / 3.0 * n * double(n) * n);
    return info;
}

int LAPACKE_zpocon(int layout, char uplo, int n, const void* a, int lda, double anorm, double* rcond)
{
    using F = int (*)(int, char, int, const void*, int, double, double*);
    static F f = next<F>("LAPACKE_zpocon");
    const double t = now();
    const int info = f(layout, uplo, n, a, lda, anorm, rcond);
    record(fmt("zpocon n=%d", n), now() - t, 0.0);
    return info;
}

int LAPACKE_zheevd_work(int layout, char jobz, char uplo, int n, void* a, int lda, double* w, void* work, int lwork,
                        double* rwork, int lrwork, int* iwork, int liwork)
{
    using F = int (*)(int, char, char, int, void*, int, double*, void*, int, double*, int, int*, int);
    static F f = next<F>("LAPACKE_zheevd_work");
    const double t = now();
    const int info = f(layout, jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, liwork);
    if (lwork != -1) record(fmt("zheevd %c n=%d", jobz, n), now() - t, (jobz == 'V' ? 8.0 : 16.0 / 3.0) * n * double(n) * n);
    return info;
}

int LAPACKE_zgeqrt_work(int layout, int m, int n, int nb, void* a, int lda, void* t_, int ldt, void* work)
{
    using F = int (*)(int, int, int, int, void*, int, void*, int, void*);
    static F f = next<F>("LAPACKE_zgeqrt_work");
    const double t = now();
    const int info = f(layout, m, n, nb, a, lda, t_, ldt, work);
    record(fmt("zgeqrt m=%d n=%d nb=%d", m, n, nb), now() - t, 8.0 * m * double(n) * n - 8.0 / 3.0 * n * double(n) * n);
    return info;
}

int LAPACKE_ztpqrt_work(int layout, int m, int n, int l, int nb, void* a, int lda, void* b, int ldb, void* t_, int ldt,
                        void* work)
{
    using F = int (*)(int, int, int, int, int, void*, int, void*, int, void*, int, void*);
    static F f = next<F>("LAPACKE_ztpqrt_work");
    const double t = now();
    const int info = f(layout, m, n, l, nb, a, lda, b, ldb, t_, ldt, work);
    record(fmt("ztpqrt m=%d n=%d", m, n), now() - t, 8.0 * m * double(n) * n);
    return info;
}

int LAPACKE_ztpmqrt_work(int layout, char side, char trans, int m, int n, int k, int l, int nb, const void* v, int ldv,
                         const void* t_, int ldt, void* a, int lda, void* b, int ldb, void* work)
{
    using F = int (*)(int, char, char, int, int, int, int, int, const void*, int, const void*, int, void*, int, void*,
                      int, void*);
    static F f = next<F>("LAPACKE_ztpmqrt_work");
    const double t = now();
    const int info = f(layout, side, trans, m, n, k, l, nb, v, ldv, t_, ldt, a, lda, b, ldb, work);
    record(fmt("ztpmqrt m=%d n=%d k=%d", m, n, k), now() - t, 16.0 * m * double(n) * k);
    return info;
}

}  // extern "C"
