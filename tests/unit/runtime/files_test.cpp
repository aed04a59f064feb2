// File identity and stale temporaries (runtime/base/files.hpp), on a fresh directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/base/files.hpp"

namespace topokpm::files {
namespace {

namespace fs = std::filesystem;

class Files : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string pattern = (fs::temp_directory_path() / "topokpm_files_XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    void touch(const std::string& name) const { std::ofstream(file(name)) << "x"; }
    fs::path dir_;
};

TEST_F(Files, SameFileByInodeOrResolvedPath)
{
    touch("a.h5");
    fs::create_directory(dir_ / "sub");
    fs::create_symlink(file("a.h5"), file("link.h5"));
    EXPECT_TRUE(same_file(file("a.h5"), file("sub/../a.h5")));
    EXPECT_TRUE(same_file(file("a.h5"), file("link.h5")));
    EXPECT_TRUE(same_file(file("new.h5"), file("sub/../new.h5"))) << "neither exists: compared by resolved path";
    EXPECT_FALSE(same_file(file("a.h5"), file("b.h5")));
    EXPECT_FALSE(same_file(file("sub/a.h5"), file("a.h5")));
}

TEST_F(Files, StaleTemporariesAreRemovedLiveOnesKept)
{
    const std::string target = file("r.h5");
    const std::string host_tail = temporary_name(target).substr(target.size() + 5);  // "<pid>-<host>"
    const std::string host = host_tail.substr(host_tail.find('-') + 1);
    touch("r.h5.tmp-999999999-" + host);  // no such process: stale
    touch("r.h5.tmp-999999998");          // older name, no host: stale
    touch("r.h5.probe-999999997-3");      // a probe of a dead process
    touch("r.h5.tmp-" + std::to_string(::getpid()) + "-" + host);  // this process: live
    touch("r.h5.tmp-999999996-elsewhere.example");                // another host: unknown
    touch("r.h5.tmpx-1");                                            // not ours
    touch("other.h5.tmp-999999995");                                 // another target
    const Temporaries t = clean_stale_temporaries(target);
    EXPECT_EQ(t.removed.size(), 3u);
    EXPECT_EQ(t.kept.size(), 2u);
    EXPECT_FALSE(fs::exists(file("r.h5.tmp-999999998")));
    EXPECT_TRUE(fs::exists(file("r.h5.tmp-999999996-elsewhere.example")));
    EXPECT_TRUE(fs::exists(file("r.h5.tmpx-1")));
    EXPECT_TRUE(fs::exists(file("other.h5.tmp-999999995")));
}

TEST_F(Files, RemoveIfSameRemovesOnlyTheIdentifiedFile)
{
    touch("c.h5");
    FileId id;
    ASSERT_TRUE(identify(file("c.h5"), id));
    // Someone replaces the file: it is not ours any more.
    touch("c.new");
    fs::rename(file("c.new"), file("c.h5"));
    EXPECT_FALSE(remove_if_same(file("c.h5"), id));
    EXPECT_TRUE(fs::exists(file("c.h5")));
    ASSERT_TRUE(identify(file("c.h5"), id));
    EXPECT_TRUE(remove_if_same(file("c.h5"), id));
    EXPECT_FALSE(fs::exists(file("c.h5")));
    EXPECT_FALSE(identify(file("c.h5"), id));
}

TEST_F(Files, RemoveIfSameThroughALinkRemovesTheTargetAndKeepsTheLink)
{
    fs::create_directory(dir_ / "store");
    touch("store/c.h5");
    fs::create_symlink(file("store/c.h5"), file("link.h5"));
    FileId id;
    ASSERT_TRUE(identify(file("link.h5"), id));  // the target's identity
    EXPECT_TRUE(remove_if_same(file("link.h5"), id));
    EXPECT_FALSE(fs::exists(file("store/c.h5")));
    EXPECT_TRUE(fs::is_symlink(file("link.h5")));
    // Nothing left aside, nothing else touched.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "store"), fs::directory_iterator{}), 0);
}

TEST_F(Files, KindsAndWriteProtection)
{
    touch("f");
    EXPECT_EQ(kind_of(file("f")), Kind::regular);
    EXPECT_EQ(kind_of(dir_.string()), Kind::directory);
    EXPECT_EQ(kind_of(file("none")), Kind::missing);
    EXPECT_EQ(kind_of("/dev/null"), Kind::other);
    EXPECT_FALSE(write_protected(file("f")));
    fs::permissions(file("f"), fs::perms::owner_read | fs::perms::group_read);
    EXPECT_TRUE(write_protected(file("f")));
    EXPECT_GT(free_bytes(file("f")), 0);
}

}  // namespace
}  // namespace topokpm::files
