// The values a history record keeps: see history_values.hpp.
#include "call/history_values.hpp"
#include "shmem/history_ring.hpp"
#include "call/row_output.hpp"
#include "common/json_text.hpp"

#include <algorithm>
#include <cstring>

namespace history_values {

std::string masked_list(TupleDesc desc, const int *actions, int nactions)
{
    std::string list = "[";
    std::string name;
    const int n = std::min(nactions, desc->natts);
    for (int i = 0; i < n; i++) {
        if (actions[i] == 0)
            continue;
        name.clear();
        json_text::append_string(name, NameStr(TupleDescAttr(desc, i)->attname));
        // Room for this name, a comma, and a final ,"..."] should more follow.
        if (list.size() + name.size() + 8 > history_ring::masked_room - 1) {
            list.append(list.size() > 1 ? ",\"...\"" : "\"...\"");
            break;
        }
        if (list.size() > 1)
            list.push_back(',');
        list.append(name);
    }
    list.push_back(']');
    return list;
}

void append_params(StringInfo out, const std::vector<std::string> &names,
                   const std::vector<Oid> &types, const std::vector<masking::Action> &actions,
                   const Datum *values, const char *nulls, const char *hash_key, int hash_key_len)
{
    static const char more[] = "\"...\":true";
    // Every member kept leaves room for a comma, the marker and the closing brace after it.
    const int room = static_cast<int>(history_ring::params_room) - 1 - (1 + sizeof(more) - 1 + 1);
    const int start = out->len;
    appendStringInfoChar(out, '{');
    const size_t n = std::min({names.size(), types.size(), actions.size()});
    for (size_t i = 0; i < n; i++) {
        const int before = out->len;
        if (before > start + 1)
            appendStringInfoChar(out, ',');
        const int at = out->len;
        append_member(out, names[i].c_str(), types[i], values[i], nulls[i] == 'n',
                      static_cast<int>(actions[i]), hash_key, hash_key_len);
        const bool dropped = out->len == at;
        const bool too_long = out->len - start > room;
        if (dropped || too_long) {
            out->len = before;
            out->data[before] = '\0';
        }
        if (too_long) {
            if (before > start + 1)
                appendStringInfoChar(out, ',');
            appendStringInfoString(out, more);
            break;
        }
    }
    appendStringInfoChar(out, '}');
}

} // namespace history_values
