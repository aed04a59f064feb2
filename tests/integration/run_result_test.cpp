// app::RunResult, the one writer of result files (app/run/run_result.hpp): /model and every
// group get their unit and description from one table, which is docs/format.md's table of
// groups; /provenance holds the common attributes, then the program's, then the phase times;
// nothing is published before commit().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "analysis/result_file.hpp"
#include "app/run/run_result.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/app_runner.hpp"

namespace fs = std::filesystem;
using namespace topokpm;

namespace {

/// The groups docs/format.md lists in its table of group units: "| `/name` | `unit` | ... |".
std::map<std::string, std::string> documented_group_units()
{
    std::ifstream doc(TOPOKPM_SOURCE_DIR "/docs/format.md");
    EXPECT_TRUE(doc.good()) << "docs/format.md not found";
    const std::regex row(R"(^\s*\| `(/[a-z_]+)` \| `([^`]+)` \| [^|]+\|\s*$)");
    std::map<std::string, std::string> units;
    std::smatch m;
    for (std::string line; std::getline(doc, line);)
        if (std::regex_match(line, m, row)) units[m[1]] = m[2];
    return units;
}

app::RunConfig config_for(const fs::path& out)
{
    return topokpm::testing::parse_kpm_dos({"--model", "graphene", "--lattice", "4x4", "--output", out.string()});
}

}  // namespace

TEST(RunResult, GroupMeaningsAreDocsFormatTable)
{
    const auto documented = documented_group_units();
    ASSERT_EQ(documented.size(), 11u) << "the table of groups in docs/format.md changed shape";
    for (const auto& [group, unit] : documented) {
        const analysis::Meaning& m = app::group_meaning(group);
        EXPECT_EQ(m.unit, unit) << group;
        EXPECT_FALSE(m.description.empty()) << group;
    }
}

TEST(RunResult, GroupWithoutMeaningIsRefused)
{
    EXPECT_THROW(app::group_meaning("/checkpoint"), DimensionMismatch);
    EXPECT_THROW(app::group_meaning("/dos/rho"), DimensionMismatch);  // a dataset, not a group
}

TEST(RunResult, WritesModelGroupsAndProvenance)
{
    const fs::path out = topokpm::testing::scratch_path("run_result", "result.h5");
    fs::remove(out);
    const app::RunConfig cfg = config_for(out);
    app::RunRecord record;
    record.threads = 3;
    record.timers.add("build", 0.25);
    record.timers.add("moments", 1.5);
    {
        app::RunResult result(cfg, {{"name", std::string("graphene")}, {"t", 1.0}});
        result.write_attributes("/dos", {{"kernel", std::string("jackson")}});
        result.write_doubles("/dos/rho", {"1/t", "A density."}, {1.0, 2.0}, {2});
        EXPECT_FALSE(fs::exists(out)) << "published before commit()";
        result.commit(record, "cpu", {{"operator", std::string("test-op")}, {"seconds_chebfd_filter", 0.125}}, nullptr);
    }
    ASSERT_TRUE(fs::exists(out));
    analysis::ResultReader r(out.string());
    EXPECT_EQ(r.read_string_attribute("/model", "name"), "graphene");
    EXPECT_EQ(r.read_string_attribute("/model", "unit"), app::group_meaning("/model").unit);
    EXPECT_EQ(r.read_string_attribute("/model", "description"), app::group_meaning("/model").description);
    EXPECT_EQ(r.read_string_attribute("/dos", "unit"), "1/t");
    EXPECT_EQ(r.read_string_attribute("/dos", "kernel"), "jackson");
    EXPECT_EQ(r.read_string_attribute("/dos/rho", "description"), "A density.");
    EXPECT_EQ(r.read_doubles("/dos/rho"), (std::vector<double>{1.0, 2.0}));

    EXPECT_EQ(r.read_string_attribute("/provenance", "unit"), "none");
    EXPECT_EQ(r.read_string_attribute("/provenance", "program"), "topokpm kpm-dos");
    EXPECT_EQ(r.read_int64_attribute("/provenance", "threads_per_rank"), 3);
    EXPECT_EQ(r.read_string_attribute("/provenance", "devices"), "cpu");
    EXPECT_EQ(r.read_string_attribute("/provenance", "start_time"), record.start_time);
    EXPECT_EQ(r.read_string_attribute("/provenance", "command_line"), cfg.provenance.command_line);
    EXPECT_EQ(r.read_string_attribute("/provenance", "operator"), "test-op");
    EXPECT_EQ(r.read_double_attribute("/provenance", "seconds_build"), 0.25);
    EXPECT_EQ(r.read_double_attribute("/provenance", "seconds_moments"), 1.5);
    EXPECT_EQ(r.read_double_attribute("/provenance", "seconds_chebfd_filter"), 0.125);
    const double total = r.read_double_attribute("/provenance", "seconds_total");
    EXPECT_GE(total, 0.0);  // wall time since the record's start, taken at commit()
    EXPECT_LT(total, 600.0);
    const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
    EXPECT_TRUE(std::regex_match(r.read_string_attribute("/provenance", "end_time"), iso));
    fs::remove(out);
}

TEST(RunResult, UncommittedLeavesNothing)
{
    const fs::path out = topokpm::testing::scratch_path("run_result", "uncommitted.h5");
    fs::remove(out);
    {
        app::RunResult result(config_for(out), {{"name", std::string("graphene")}});
        result.write_attributes("/kpm", {{"num_moments", std::int64_t(8)}});
    }
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(out.parent_path()))
        EXPECT_EQ(e.path().filename().string().rfind("uncommitted.h5", 0), std::string::npos) << e.path();
}
