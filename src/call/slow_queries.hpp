// Which saved queries a worker hands to its helpers before running them: those it has seen run
// past querygate.slow_call_threshold. Plain C++; one per worker (QueryRunner's), never shared.
//
// A query is marked when a call of it spends the worker's budget (call/worker_budget.hpp): its
// next calls go straight to a helper, and none of them costs the worker anything but its checks.
// It stays marked while its calls in the helpers keep running at least half the threshold; the
// first that runs shorter unmarks it, and its next call is tried in the worker again (under the
// budget, so a query whose time depends on its parameters costs the worker at most the
// threshold each time it turns slow again). A new revision of a query starts unmarked.
#pragma once

#include <string>
#include <unordered_map>

class SlowQueries {
  public:
    bool slow(const std::string &query, long long revision) const
    {
        const auto it = marked_.find(query);
        return it != marked_.end() && it->second == revision;
    }
    // A call of it spent the worker's budget.
    void spent_budget(const std::string &query, long long revision)
    {
        // Bounded by the catalog's queries; a worker that somehow saw more starts again.
        if (marked_.size() >= most && marked_.count(query) == 0)
            marked_.clear();
        marked_[query] = revision;
    }
    // A call of it ran `ran_us` in a helper.
    void ran_in_helper(const std::string &query, long long revision, long long ran_us,
                       long long threshold_us)
    {
        if (2 * ran_us < threshold_us && slow(query, revision))
            marked_.erase(query);
    }

  private:
    static constexpr std::size_t most = 100000;
    std::unordered_map<std::string, long long> marked_; // name -> the revision marked
};
