// What calls of a query cost, summed: the arithmetic of querygate.stat_queries
// (shmem/stat_table.hpp keeps one of these per query and policy in shared memory, and an HTTP
// worker keeps its round's calls in one before adding it to the table's). Plain C++, plain data: no
// constructor, so that it lives in shared memory as it is (zero-filled is empty).
#pragma once

#include "common/metrics.hpp"

#include <algorithm>
#include <cstdint>

struct CallTotals {
    uint64_t calls;
    uint64_t by_code[metrics::code_slots]; // calls by how they ended (metrics::code_slot)
    uint64_t rows;
    uint64_t bytes;
    double total_s;
    double min_s;
    double max_s;
    double mean_s; // the running mean and sum of squared deviations, as pg_stat_statements
    double m2;
    uint64_t buckets[metrics::duration_buckets]; // calls by duration (bucket_of)

    // The histogram bucket of a duration.
    static int bucket_of(double seconds)
    {
        int i = 0;
        while (i < metrics::duration_buckets - 1 && seconds > metrics::duration_bounds[i])
            i++;
        return i;
    }

    // One call more (Welford's step for the mean and squared deviations).
    void add(int code_slot, double seconds, uint64_t call_rows, uint64_t call_bytes)
    {
        calls++;
        by_code[code_slot]++;
        rows += call_rows;
        bytes += call_bytes;
        total_s += seconds;
        min_s = calls == 1 ? seconds : std::min(min_s, seconds);
        max_s = std::max(max_s, seconds);
        const double delta = seconds - mean_s;
        mean_s += delta / static_cast<double>(calls);
        m2 += delta * (seconds - mean_s);
        buckets[bucket_of(seconds)]++;
    }

    // Both, as if every call of `o` had been added here: the means and squared deviations
    // combined as Chan, Golub and LeVeque do (for one call, the same as add's step).
    void merge(const CallTotals &o)
    {
        if (o.calls == 0)
            return;
        if (calls == 0) {
            *this = o;
            return;
        }
        const double n = static_cast<double>(calls + o.calls);
        const double delta = o.mean_s - mean_s;
        mean_s += delta * static_cast<double>(o.calls) / n;
        m2 += o.m2 + delta * delta * static_cast<double>(calls) * static_cast<double>(o.calls) / n;
        calls += o.calls;
        for (int i = 0; i < metrics::code_slots; i++)
            by_code[i] += o.by_code[i];
        rows += o.rows;
        bytes += o.bytes;
        total_s += o.total_s;
        min_s = std::min(min_s, o.min_s);
        max_s = std::max(max_s, o.max_s);
        for (int i = 0; i < metrics::duration_buckets; i++)
            buckets[i] += o.buckets[i];
    }
};
