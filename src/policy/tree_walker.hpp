// PostgreSQL 15's tree walkers (expression_tree_walker, query_tree_walker, range_table_walker) take
// bool (*)(); C++ needs the cast from a typed walker spelled out, through void (*)(void), which
// -Wcast-function-type accepts as "any function".
#pragma once

typedef bool (*walker_fn)();
#define WALKER(f) reinterpret_cast<walker_fn>(reinterpret_cast<void (*)(void)>(f))
