// The HDF5 result file (analysis/result_file.hpp, models.md §5): every kind of value
// written, committed atomically and read back exactly, by ResultReader and independently
// by h5py; no file (or temporary) left by a failed or abandoned run; unwritable outputs
// reported before a run.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <complex>
#include <cstdint>
#include <future>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "analysis/result_file.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/files.hpp"

namespace topokpm::analysis {
namespace {

namespace fs = std::filesystem;

/// A fresh directory per test, removed afterwards.
class ResultFile : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string pattern = (fs::temp_directory_path() / "topokpm_result_file_XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    std::vector<std::string> listing() const
    {
        std::vector<std::string> names;
        for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
        return names;
    }

    fs::path dir_;
};

std::string temporary_of(const std::string& path) { return files::temporary_name(path); }

/// Expects `f()` to throw IoError whose message contains every string in `mentions`.
template <typename F>
void expect_io_error(F f, const std::vector<std::string>& mentions)
{
    try {
        f();
        ADD_FAILURE() << "no IoError thrown";
    } catch (const IoError& e) {
        for (const std::string& m : mentions)
            EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << "'" << e.what() << "' lacks '" << m << "'";
    }
}

const std::string kLabel = "\xcf\x81(E) \xc3\x85\xc2\xb2";  // "ρ(E) Å²" in UTF-8
const std::vector<double> kMoments = {1.0, -0.5, 0.25, 1e-300, -3.0};
const Meaning kMeaning{"1", "A value of the test."};

std::vector<double> per_vector()
{
    std::vector<double> v(12);
    for (int i = 0; i < 12; ++i) v[i] = 0.5 * i;
    return v;
}

/// Writes every kind the schema uses, in an order that creates groups implicitly (by a
/// dataset) and explicitly (by attributes), then adds attributes to existing groups.
void write_everything(const std::string& path)
{
    ResultWriter w(path);
    EXPECT_EQ(w.path(), path);
    w.write_attributes("/model", kMeaning, {{"name", std::string("ti")},
                                  {"label", kLabel},
                                  {"empty", std::string()},
                                  {"t", 1.25},
                                  {"Nx", std::int64_t(-7)},
                                  {"disorder_seed", std::numeric_limits<std::uint64_t>::max()}});
    w.write_attributes("/model", kMeaning, {{"t", 1.25}});  // rewriting an attribute replaces it
    w.write_attributes("/", kMeaning, {{"root_note", std::string("on the root")}});
    w.write_attributes("/a/b/c", kMeaning, {{"depth", std::int64_t(3)}});
    w.write_doubles("/kpm/moments", kMeaning, kMoments, {5});
    w.write_doubles("/kpm/moments_per_vector", kMeaning, per_vector(), {3, 4});
    w.write_attributes("/kpm", kMeaning, {{"num_moments", std::int64_t(5)},
                                {"extreme", std::numeric_limits<double>::max()},
                                {"tiny", std::numeric_limits<double>::denorm_min()},
                                {"int_min", std::numeric_limits<std::int64_t>::min()},
                                {"big_seed", std::uint64_t(1) << 63}});
    w.write_int64("/ldos/rows", kMeaning, {0, 5, std::int64_t(1) << 62, -1}, {4});
    w.commit();
}

TEST_F(ResultFile, EveryKindReadsBackExactly)
{
    const std::string path = file("result.h5");
    write_everything(path);
    EXPECT_EQ(listing(), std::vector<std::string>{"result.h5"});  // renamed, no temporary

    const ResultReader r(path);
    EXPECT_EQ(r.read_string_attribute("/model", "name"), "ti");
    EXPECT_EQ(r.read_string_attribute("/model", "label"), kLabel);
    EXPECT_EQ(r.read_string_attribute("/model", "empty"), "");
    EXPECT_EQ(r.read_double_attribute("/model", "t"), 1.25);
    EXPECT_EQ(r.read_int64_attribute("/model", "Nx"), -7);
    EXPECT_EQ(r.read_uint64_attribute("/model", "disorder_seed"), std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(r.read_string_attribute("/", "root_note"), "on the root");
    EXPECT_EQ(r.read_int64_attribute("/a/b/c", "depth"), 3);
    EXPECT_EQ(r.read_int64_attribute("/kpm", "num_moments"), 5);
    EXPECT_EQ(r.read_double_attribute("/kpm", "extreme"), std::numeric_limits<double>::max());
    EXPECT_EQ(r.read_double_attribute("/kpm", "tiny"), std::numeric_limits<double>::denorm_min());
    EXPECT_EQ(r.read_int64_attribute("/kpm", "int_min"), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(r.read_uint64_attribute("/kpm", "big_seed"), std::uint64_t(1) << 63);

    std::vector<std::uint64_t> dims;
    EXPECT_EQ(r.read_doubles("/kpm/moments", &dims), kMoments);
    EXPECT_EQ(dims, std::vector<std::uint64_t>{5});
    EXPECT_EQ(r.read_doubles("/kpm/moments_per_vector", &dims), per_vector());
    EXPECT_EQ(dims, (std::vector<std::uint64_t>{3, 4}));
    EXPECT_EQ(r.read_int64("/ldos/rows"), (std::vector<std::int64_t>{0, 5, std::int64_t(1) << 62, -1}));

    for (const std::string object : {"/", "/model", "/kpm", "/kpm/moments", "/a", "/a/b/c", "/ldos/rows"})
        EXPECT_TRUE(r.exists(object)) << object;
    for (const std::string object : {"/dos", "/kpm/none", "/x/y/z", "/a/b/c/d"})
        EXPECT_FALSE(r.exists(object)) << object;
}

TEST_F(ResultFile, EveryGroupAndDatasetCarriesItsUnitAndDescription)
{
    const std::string path = file("described.h5");
    {
        ResultWriter w(path);
        w.write_attributes("/dos", {"1/t", "The density of states."}, {{"kernel", std::string("jackson")}});
        w.write_doubles("/dos/energy", {"t", "Energies."}, {-1.0, 1.0}, {2});
        w.write_int64("/dos/rows", {"1", "Rows."}, {3}, {1});
        w.write_uint64("/dos/seeds", {"1", "Seeds."}, {7}, {1});
        const std::vector<std::complex<double>> v = {{1.0, 0.0}};
        w.write_complex("/dos/vectors", {"1", "Vectors."}, v.data(), v.size(), {1, 1});
        w.write_rows("/dos/rho", {"1/t", "Densities."}, kMoments.data(), kMoments.size(), {{0, 1}}, {1, 5});
        // A later call replaces a group's unit and description.
        w.write_attributes("/dos", {"1/t", "The density of states, again."}, {{"grid", std::string("user")}});
        // No dataset or group without both: a programming error, nothing written.
        EXPECT_THROW(w.write_doubles("/dos/bare", {"", "No unit."}, {1.0}, {1}), DimensionMismatch);
        EXPECT_THROW(w.write_rows("/dos/bare", {"1", ""}, kMoments.data(), 5, {{0, 1}}, {1, 5}), DimensionMismatch);
        EXPECT_THROW(w.write_attributes("/bare", {"", ""}, {{"x", 1.0}}), DimensionMismatch);
        w.commit();
    }
    const ResultReader r(path);
    EXPECT_EQ(r.read_string_attribute("/dos", "unit"), "1/t");
    EXPECT_EQ(r.read_string_attribute("/dos", "description"), "The density of states, again.");
    EXPECT_EQ(r.read_string_attribute("/dos", "kernel"), "jackson");
    const std::vector<std::pair<std::string, std::string>> units = {
        {"/dos/energy", "t"}, {"/dos/rows", "1"}, {"/dos/seeds", "1"}, {"/dos/vectors", "1"}, {"/dos/rho", "1/t"}};
    for (const auto& [name, unit] : units) {
        EXPECT_EQ(r.read_string_attribute(name, "unit"), unit) << name;
        EXPECT_FALSE(r.read_string_attribute(name, "description").empty()) << name;
    }
    EXPECT_FALSE(r.exists("/dos/bare"));
    EXPECT_FALSE(r.exists("/bare"));
}

TEST_F(ResultFile, H5pyReadsTheSameValues)
{
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "/usr/bin/python3 not found: h5py cross-check not run";
    if (std::system("/usr/bin/python3 -c 'import h5py' > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 has no h5py: h5py cross-check not run";
    const std::string path = file("for_h5py.h5");
    write_everything(path);
    const std::string command = "/usr/bin/python3 '" TOPOKPM_ANALYSIS_TEST_DIR "/read_with_h5py.py' '" + path + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST_F(ResultFile, ReaderRejectsMissingObjectsAndWrongTypes)
{
    const std::string path = file("types.h5");
    write_everything(path);
    const ResultReader r(path);
    expect_io_error([&] { r.read_doubles("/dos/rho"); }, {path, "/dos/rho"});
    expect_io_error([&] { r.read_double_attribute("/model", "nope"); }, {path, "nope", "/model"});
    expect_io_error([&] { r.read_double_attribute("/nowhere", "t"); }, {path, "/nowhere"});
    expect_io_error([&] { r.read_int64_attribute("/model", "disorder_seed"); }, {"disorder_seed", "signed"});
    expect_io_error([&] { r.read_uint64_attribute("/model", "Nx"); }, {"Nx", "unsigned"});
    expect_io_error([&] { r.read_double_attribute("/model", "Nx"); }, {"Nx"});
    expect_io_error([&] { r.read_string_attribute("/model", "t"); }, {"'t'", "string"});
    expect_io_error([&] { r.read_int64("/kpm/moments"); }, {"/kpm/moments"});
    expect_io_error([&] { r.read_doubles("/ldos/rows"); }, {"/ldos/rows"});
    expect_io_error([&] { ResultReader(file("missing.h5")); }, {file("missing.h5")});
}

TEST_F(ResultFile, ShapesAreKnownBeforeReadingAndOtherShapesAreRefused)
{
    const std::string path = file("shapes.h5");
    write_everything(path);
    const ResultReader r(path);
    EXPECT_EQ(r.shape("/kpm/moments_per_vector"), (std::vector<std::uint64_t>{3, 4}));
    EXPECT_EQ(r.shape("/kpm/moments"), std::vector<std::uint64_t>{5});
    expect_io_error([&] { r.shape("/kpm/none"); }, {path, "/kpm/none"});
    EXPECT_EQ(r.read_doubles("/kpm/moments_per_vector", std::vector<std::uint64_t>{3, 4}), per_vector());
    std::vector<double> out(12);
    r.read_doubles("/kpm/moments_per_vector", {3, 4}, out.data(), out.size());
    EXPECT_EQ(out, per_vector());
    // Another shape (even with the same count) is refused before anything is read.
    expect_io_error([&] { r.read_doubles("/kpm/moments_per_vector", std::vector<std::uint64_t>{4, 3}); },
                    {path, "/kpm/moments_per_vector", "has shape [3, 4], expected [4, 3]"});
    expect_io_error([&] { r.read_doubles("/kpm/moments", std::vector<std::uint64_t>{1000000000, 1000000000}); },
                    {"has shape [5], expected [1000000000, 1000000000]"});
    expect_io_error([&] { r.read_doubles("/kpm/moments", {5, 1}, out.data(), 5); }, {"expected [5, 1]"});
    EXPECT_THROW(r.read_doubles("/kpm/moments", {5}, out.data(), 4), DimensionMismatch);
    expect_io_error([&] { r.read_doubles("/ldos/rows", std::vector<std::uint64_t>{4}); }, {"/ldos/rows", "floating"});
}

TEST_F(ResultFile, ReaderOpensOnlyRegularFilesAndNeverBlocks)
{
    // A directory, a FIFO (opening it would wait for a writer), a device, a missing file:
    // one IoError naming the path, at once.
    ASSERT_TRUE(fs::create_directory(file("dir.h5")));
    ASSERT_EQ(::mkfifo(file("fifo.h5").c_str(), 0600), 0);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {file("dir.h5"), "Is a directory"},
        {file("fifo.h5"), "not a regular file"},
        {"/dev/zero", "not a regular file"},
        {file("missing.h5"), "No such file"},
        {"", "No such file"}};
    for (const auto& [path, why] : cases) {
        auto opened = std::async(std::launch::async, [path = path] { ResultReader reader(path); });
        if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
            ADD_FAILURE() << "opening '" << path << "' blocks";
            const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);  // release the reader
            opened.wait();
            if (fd >= 0) ::close(fd);
            continue;
        }
        expect_io_error([&] { opened.get(); }, {"cannot read result file '" + path + "'", why});
    }
    std::ofstream(file("text.h5")) << "\x1b[2J not HDF5";
    try {
        ResultReader reader(file("text.h5"));
        ADD_FAILURE() << "a text file was opened";
    } catch (const IoError& e) {
        EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << "the file's text is quoted";
    }
}

TEST_F(ResultFile, WritesGoToATemporaryUntilCommit)
{
    const std::string path = file("run.h5");
    {
        std::ofstream(path) << "previous result";
        ResultWriter w(path);
        w.write_doubles("/kpm/moments", kMeaning, kMoments, {5});
        EXPECT_TRUE(fs::exists(temporary_of(path)));
        std::string old;
        std::getline(std::ifstream(path), old);
        EXPECT_EQ(old, "previous result");  // untouched until commit
        w.commit();
        EXPECT_FALSE(fs::exists(temporary_of(path)));
    }
    EXPECT_EQ(ResultReader(path).read_doubles("/kpm/moments"), kMoments);  // replaced
    EXPECT_EQ(listing(), std::vector<std::string>{"run.h5"});
}

TEST_F(ResultFile, UncommittedWriterLeavesNothing)
{
    const std::string path = file("abandoned.h5");
    {
        ResultWriter w(path);
        w.write_attributes("/model", kMeaning, {{"name", std::string("graphene")}});
        w.write_doubles("/dos/rho", kMeaning, {1.0, 2.0}, {2});
    }
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(fs::exists(temporary_of(path)));
    EXPECT_TRUE(listing().empty());
    // Also when the run fails by an exception between construction and commit.
    try {
        ResultWriter w(path);
        throw std::runtime_error("run failed");
    } catch (const std::runtime_error&) {
    }
    EXPECT_TRUE(listing().empty());
}

TEST_F(ResultFile, TemporaryIsCreatedExclusivelyAndMarkedUntilCommit)
{
    const std::string path = file("marked.h5");
    const auto head = [](const std::string& name) {
        std::ifstream in(name, std::ios::binary);
        std::string bytes(sizeof files::kTemporaryMarker - 1, '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        return bytes;
    };
    {
        ResultWriter w(path);
        w.write_doubles("/dos/rho", {"1/t", "test data"}, {1.0, 2.0}, {2});
        EXPECT_EQ(head(temporary_of(path)), std::string(files::kTemporaryMarker));
        w.commit();
    }
    EXPECT_EQ(head(path), std::string(sizeof files::kTemporaryMarker - 1, '\0')) << "a result is not a temporary";
    EXPECT_EQ(ResultReader(path).read_doubles("/dos/rho"), (std::vector<double>{1.0, 2.0}));
    // A file that already has this process's temporary name is not ours: never truncated.
    std::ofstream(temporary_of(path)) << "notes";
    expect_io_error([&] { ResultWriter w(path); }, {path, "File exists"});
    std::ifstream in(temporary_of(path));
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "notes");
}

TEST_F(ResultFile, MissingDirectoryIsAnIoErrorNamingThePath)
{
    const std::string path = file("no/such/dir/result.h5");
    expect_io_error([&] { ResultWriter w(path); }, {path});
    EXPECT_TRUE(listing().empty());
}

TEST_F(ResultFile, BadShapesAndLayoutsAreRejected)
{
    ResultWriter w(file("dims.h5"));
    EXPECT_THROW(w.write_doubles("/x", kMeaning, {1.0, 2.0, 3.0}, {2, 2}), DimensionMismatch);
    EXPECT_THROW(w.write_doubles("/x", kMeaning, {1.0}, {}), DimensionMismatch);
    EXPECT_THROW(w.write_int64("/y", kMeaning, {1, 2}, {3}), DimensionMismatch);
    // A dataset cannot be the parent of a group or another dataset.
    w.write_doubles("/dos/rho", kMeaning, {1.0}, {1});
    expect_io_error([&] { w.write_attributes("/dos/rho/sub", kMeaning, {{"x", 1.0}}); }, {"/dos/rho", "not a group"});
    expect_io_error([&] { w.write_doubles("/dos/rho/sub", kMeaning, {1.0}, {1}); }, {"/dos/rho", "not a group"});
    w.write_attributes("/kpm", kMeaning, {{"x", 1.0}});
    expect_io_error([&] { w.write_doubles("/kpm", kMeaning, {1.0}, {1}); }, {"/kpm", "group"});
    // Writing a dataset name twice replaces it.
    w.write_doubles("/dos/rho", kMeaning, {2.0, 3.0}, {2});
    w.commit();
    EXPECT_EQ(ResultReader(file("dims.h5")).read_doubles("/dos/rho"), (std::vector<double>{2.0, 3.0}));
}

TEST_F(ResultFile, CheckOutputWritable)
{
    // A writable directory: no error, nothing left behind.
    EXPECT_NO_THROW(check_output_writable(file("out.h5")));
    EXPECT_TRUE(listing().empty());
    // A missing directory, /proc (no regular files can be created there, not even by root),
    // and a directory given as the output file.
    const std::string missing = file("missing/out.h5");
    expect_io_error([&] { check_output_writable(missing); }, {"{output}", missing, "No such file or directory"});
    expect_io_error([] { check_output_writable("/proc/x"); }, {"{output}", "/proc/x"});
    expect_io_error([] { check_output_writable("/proc/x/out.h5"); }, {"/proc/x/out.h5"});
    expect_io_error([&] { check_output_writable(dir_.string()); }, {dir_.string(), "Is a directory"});
    expect_io_error([&] { check_output_writable(missing, "--export-matrix"); }, {"--export-matrix", missing});
    EXPECT_TRUE(listing().empty());
}

TEST(ResultFileTmp, CheckOutputWritableInTmpLeavesNothing)
{
    const std::string name = "topokpm_probe_test_" + std::to_string(::getpid()) + ".h5";
    EXPECT_NO_THROW(check_output_writable((fs::temp_directory_path() / name).string()));
    // /tmp is shared: look only for names derived from ours (the file, its probes).
    for (const auto& entry : fs::directory_iterator(fs::temp_directory_path()))
        EXPECT_NE(entry.path().filename().string().rfind(name, 0), 0u) << entry.path() << " left behind";
}

}  // namespace
}  // namespace topokpm::analysis
