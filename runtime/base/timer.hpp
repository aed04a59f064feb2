#pragma once
/// @file timer.hpp
/// Wall-clock phase timers: each named phase accumulates seconds; the report and
/// /provenance list them in first-use order.

#include <chrono>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace topokpm {

/// Seconds since an arbitrary fixed point (steady clock).
inline double wall_seconds()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

/// The current time as ISO 8601 UTC, "2026-11-24T12:00:00Z" (result and checkpoint files).
inline std::string utc_now()
{
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return buf;
}

class PhaseTimers {
public:
    /// Adds `seconds` to phase `name` (created on first use).
    void add(const std::string& name, double seconds)
    {
        for (auto& p : phases_)
            if (p.first == name) {
                p.second += seconds;
                return;
            }
        phases_.emplace_back(name, seconds);
    }
    /// Moves `seconds` measured inside phase `from` to phase `part`, created right before
    /// `from` if new (a part timed within a phase; the phases stay disjoint).
    void split(const std::string& from, const std::string& part, double seconds)
    {
        add(from, -seconds);
        for (auto& p : phases_)
            if (p.first == part) {
                p.second += seconds;
                return;
            }
        for (auto it = phases_.begin(); it != phases_.end(); ++it)
            if (it->first == from) {
                phases_.emplace(it, part, seconds);
                return;
            }
    }
    double get(const std::string& name) const
    {
        for (const auto& p : phases_)
            if (p.first == name) return p.second;
        return 0.0;
    }
    const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }

    /// Times a callable into phase `name` and returns its result.
    template <typename F>
    auto time(const std::string& name, F&& f)
    {
        struct Guard {
            PhaseTimers* self;
            const std::string* name;
            double start;
            ~Guard() { self->add(*name, wall_seconds() - start); }
        } guard{this, &name, wall_seconds()};
        return f();
    }

private:
    std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace topokpm
