// Checks the administration functions make with the parameter rules (governance_functions.cpp).
// PostgreSQL-style: they ereport, or return a palloc'd problem where the name says so.
#pragma once

#include "policy/saved_query_analysis.hpp"

// The parameters of a rules object that have a pattern, with their defaults (nullptr: none).
struct ParamPatterns {
    int n;
    char **names;
    char **patterns;
    char **defaults;
    char **examples;
};

// Validates save_query's params (JSON text) against the analyzed query: nullptr when fine, else a
// palloc'd problem. Fills patterns, which the caller compiles with PostgreSQL's regex engine.
char *validate_param_rules(const char *json, const AnalyzedQuery *query, ParamPatterns *patterns);

// True when value matches pattern as a whole (PostgreSQL's ~, anchored). ERROR for a bad pattern.
bool pattern_matches_whole(const char *pattern, const char *value);
