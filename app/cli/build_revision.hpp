#pragma once
// The commit the binaries were built from: `git rev-parse --short=12 HEAD` taken at build
// time (cmake/git_revision.cmake), with "-dirty" when tracked files had uncommitted changes,
// "unknown" outside a git checkout. Written to /provenance/git_revision and printed by
// --version and the run header.

namespace topokpm::app {
const char* git_revision();
}  // namespace topokpm::app
