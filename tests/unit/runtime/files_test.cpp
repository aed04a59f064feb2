// File identity and stale temporaries (runtime/base/files.hpp), on a fresh directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
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
    const auto marked = [&](const std::string& name) { std::ofstream(file(name)) << kTemporaryMarker; };
    marked("r.h5.tmp-999999999-" + host);  // no such process: stale
    marked("r.h5.tmp-999999998");          // older name, no host: stale
    marked("r.h5.probe-999999997-3");      // a probe of a dead process
    marked("r.h5.tmp-" + std::to_string(::getpid()) + "-" + host);  // this process: live
    marked("r.h5.tmp-999999996-elsewhere.example");                // another host: unknown
    touch("r.h5.tmp-999999994-" + host);                            // stale by name, but not marked
    marked("r.h5.tmpx-1");                                           // not ours
    marked("other.h5.tmp-999999995");                                // another target
    const Temporaries t = clean_stale_temporaries(target);
    EXPECT_EQ(t.removed.size(), 3u);
    EXPECT_EQ(t.kept.size(), 2u);
    ASSERT_EQ(t.unmarked.size(), 1u);
    EXPECT_EQ(t.unmarked[0], file("r.h5.tmp-999999994-" + host));
    EXPECT_TRUE(fs::exists(file("r.h5.tmp-999999994-" + host)));
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

TEST_F(Files, GuardedPublishNeverReplacesAnotherFile)
{
    const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(file(name)) << text; };
    const auto read = [&](const std::string& name) {
        std::ifstream in(file(name));
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const auto any = [](const std::string&) { return true; };
    // The path was free at the start, and still is: published.
    Guard free_path{std::nullopt, any};
    write("t1", "new");
    EXPECT_EQ(publish(file("t1"), file("a"), &free_path).error, 0);
    EXPECT_EQ(read("a"), "new");
    // A file appeared there meanwhile: it stays, the new file is kept under another name.
    write("t2", "newer");
    const Published p = publish(file("t2"), file("a"), &free_path);
    EXPECT_EQ(p.error, EEXIST);
    EXPECT_EQ(read("a"), "new");
    ASSERT_FALSE(p.kept.empty());
    EXPECT_EQ(p.kept, file("a") + ".new-" + std::to_string(::getpid()));
    EXPECT_EQ(read("a.new-" + std::to_string(::getpid())), "newer");
    EXPECT_FALSE(fs::exists(file("t2")));
    // The file verified at the start is still there: replaced.
    Guard verified{FileId{}, any};
    ASSERT_TRUE(identify(file("a"), *verified.existing));
    write("t3", "third");
    EXPECT_EQ(publish(file("t3"), file("a"), &verified).error, 0);
    EXPECT_EQ(read("a"), "third");
    EXPECT_FALSE(fs::exists(file("t3")));
    // Another file (another inode) took its place: swapped back, untouched.
    ASSERT_TRUE(identify(file("a"), *verified.existing));
    write("user", "notes");
    fs::rename(file("user"), file("a"));
    write("t4", "fourth");
    EXPECT_EQ(publish(file("t4"), file("a"), &verified).error, EEXIST);
    EXPECT_EQ(read("a"), "notes");
    // The very file, but no longer replaceable by its content: kept as well.
    ASSERT_TRUE(identify(file("a"), *verified.existing));
    verified.still_replaceable = [](const std::string&) { return false; };
    write("t5", "fifth");
    EXPECT_EQ(publish(file("t5"), file("a"), &verified).error, EEXIST);
    EXPECT_EQ(read("a"), "notes");
    // The verified file was removed meanwhile: the path is free, the result goes there.
    fs::remove(file("a"));
    write("t6", "sixth");
    EXPECT_EQ(publish(file("t6"), file("a"), &verified).error, 0);
    EXPECT_EQ(read("a"), "sixth");
}

TEST_F(Files, ShellWordsPasteBack)
{
    EXPECT_EQ(shell_word("/scratch/run-1/out.h5"), "/scratch/run-1/out.h5");
    EXPECT_EQ(shell_word("--energy-range=-6:6"), "--energy-range=-6:6");
    EXPECT_EQ(shell_word("my dir/x.h5"), "'my dir/x.h5'");
    EXPECT_EQ(shell_word("it's $HOME"), "'it'\\''s $HOME'");
    EXPECT_EQ(shell_word(""), "''");
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

// A text temporary whose first line is fixed by its format (the Matrix Market banner of
// --export-matrix) carries the marker as its second line, a comment.
TEST_F(Files, CommentLineMarkerIsRecognisedAndClearedToABlankComment)
{
    const std::string target = file("m.mtx");
    const std::string host_tail = temporary_name(target).substr(target.size() + 5);
    const std::string host = host_tail.substr(host_tail.find('-') + 1);
    const std::string banner = "%%MatrixMarket matrix coordinate complex general\n";
    const auto read = [&](const std::string& name) {
        std::ifstream in(file(name));
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    std::ofstream(file("m.mtx.tmp-999999999-" + host)) << banner << '%' << kTemporaryMarker << "1 1 0\n";
    std::ofstream(file("m.mtx.tmp-999999998-" + host)) << banner << "% my comment\n1 1 0\n";   // a look-alike
    std::ofstream(file("m.mtx.tmp-999999997-" + host)) << banner << kTemporaryMarker << "1 1 0\n";  // no '%'
    const Temporaries t = clean_stale_temporaries(target);
    ASSERT_EQ(t.removed.size(), 1u);
    EXPECT_EQ(t.removed[0], file("m.mtx.tmp-999999999-" + host));
    EXPECT_EQ(t.unmarked.size(), 2u);
    EXPECT_TRUE(fs::exists(file("m.mtx.tmp-999999998-" + host)));

    // Marked, then cleared: the comment line stays, blank, and the rest is untouched.
    std::ofstream(file("c.mtx")) << banner << '%' << std::string(sizeof kTemporaryMarker - 2, 'x') << "\n1 1 0\n";
    EXPECT_EQ(mark_temporary(file("c.mtx"), true, MarkerAt::comment_line), 0);
    EXPECT_EQ(read("c.mtx"), banner + "%" + kTemporaryMarker + "1 1 0\n");
    EXPECT_EQ(mark_temporary(file("c.mtx"), false, MarkerAt::comment_line), 0);
    EXPECT_EQ(read("c.mtx"), banner + "%" + std::string(sizeof kTemporaryMarker - 2, ' ') + "\n1 1 0\n");
    std::ofstream(file("n.mtx")) << banner << "1 1 0\n";
    EXPECT_EQ(mark_temporary(file("n.mtx"), true, MarkerAt::comment_line), EINVAL) << "no comment line to mark";
    EXPECT_EQ(read("n.mtx"), banner + "1 1 0\n");
}

}  // namespace
}  // namespace topokpm::files
