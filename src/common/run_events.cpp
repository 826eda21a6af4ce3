// Run events: see run_events.hpp.
#include "common/run_events.hpp"

#include <cstring>
#include <new>

namespace run_events {

bool Who::known() const
{
    for (unsigned char b : caller)
        if (b != 0)
            return true;
    return false;
}

bool sees(const Who &watcher, bool whole_policy, const Who &made_by)
{
    if (!watcher.known() || !made_by.known())
        return false;
    return whole_policy ? std::memcmp(watcher.scope, made_by.scope, sizeof(made_by.scope)) == 0
                        : std::memcmp(watcher.caller, made_by.caller, sizeof(made_by.caller)) == 0;
}

namespace {

std::uint32_t power_of_two(std::uint32_t n)
{
    std::uint32_t p = 2;
    while (p < n && p < (1u << 30))
        p <<= 1;
    return p;
}

// A C string as a JSON string: the texts here are names, codes and ids, but a request id is the
// caller's, so every byte that JSON or the stream's line structure cannot hold is escaped.
void append_json_string(std::string &out, const char *s, std::size_t max)
{
    static const char hex[] = "0123456789abcdef";
    out.push_back('"');
    for (std::size_t i = 0; i < max && s[i] != '\0'; i++) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c >= 0x7f) {
            // Non-ASCII too: a cut may have split a UTF-8 sequence, and \u00XX is always valid.
            out.append("\\u00");
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    out.push_back('"');
}

} // namespace

std::size_t size_of(std::uint32_t capacity)
{
    return sizeof(Ring) + sizeof(Slot) * power_of_two(capacity);
}

Ring *init(void *memory, std::uint32_t capacity)
{
    Ring *ring = new (memory) Ring;
    ring->last.store(0, std::memory_order_relaxed);
    ring->capacity = power_of_two(capacity);
    Slot *slots = ring->slots();
    for (std::uint32_t i = 0; i < ring->capacity; i++) {
        Slot *slot = new (&slots[i]) Slot;
        slot->id.store(0, std::memory_order_relaxed);
    }
    return ring;
}

std::uint64_t put(Ring &ring, const Event &event)
{
    const std::uint64_t id = ring.last.load(std::memory_order_relaxed) + 1;
    Slot &slot = ring.slots()[id & (ring.capacity - 1)];
    // Readers that find 0, or another id, before or after their copy discard it.
    slot.id.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    slot.event = event;
    slot.event.id = id;
    slot.id.store(id, std::memory_order_release);
    ring.last.store(id, std::memory_order_release);
    return id;
}

void read_after(const Ring &ring, std::uint64_t last_seen, std::size_t max, Batch &out)
{
    out.events.clear();
    out.missed_from = out.missed_to = 0;
    const std::uint64_t last = ring.last.load(std::memory_order_acquire);
    if (last_seen > last)
        last_seen = last; // an id from before a restart: from now on
    std::uint64_t next = last_seen + 1;
    // Older than the ring holds: lost.
    if (last >= ring.capacity && next <= last - ring.capacity) {
        out.missed_from = next;
        out.missed_to = last - ring.capacity;
        next = last - ring.capacity + 1;
    }
    for (; next <= last && out.events.size() < max; next++) {
        const Slot &slot = ring.slots()[next & (ring.capacity - 1)];
        Event copy;
        const bool before = slot.id.load(std::memory_order_acquire) == next;
        if (before) {
            std::memcpy(static_cast<void *>(&copy), &slot.event, sizeof(Event));
            std::atomic_thread_fence(std::memory_order_acquire);
        }
        if (!before || slot.id.load(std::memory_order_relaxed) != next) {
            // Overwritten while this reader came to it. The events read so far go first; the next
            // read finds what was lost (the ring has moved past it).
            if (!out.events.empty())
                break;
            if (out.missed_from == 0)
                out.missed_from = next;
            out.missed_to = next;
            continue;
        }
        out.events.push_back(copy);
    }
}

void append_retry(std::string &out, unsigned milliseconds)
{
    out.append("retry: ").append(std::to_string(milliseconds)).append("\n\n");
}

void append_event(std::string &out, const Event &e)
{
    const std::string id = std::to_string(e.id);
    out.append("id: ").append(id).append("\nevent: run\ndata: {\"id\":").append(id);
    out.append(",\"query\":");
    // SQL the caller wrote has no name; its kind says what ran.
    if (e.adhoc)
        out.append("null");
    else
        append_json_string(out, e.query, sizeof(e.query));
    out.append(e.adhoc ? ",\"kind\":\"sql\"" : ",\"kind\":\"query\"");
    out.append(",\"status\":").append(std::to_string(e.status));
    out.append(",\"code\":");
    if (e.code[0] == '\0')
        out.append("null");
    else
        append_json_string(out, e.code, sizeof(e.code));
    out.append(",\"duration_us\":").append(std::to_string(e.duration_us));
    out.append(",\"rows\":").append(std::to_string(e.rows));
    out.append(",\"request_id\":");
    append_json_string(out, e.request_id, sizeof(e.request_id));
    out.append(",\"at_us\":").append(std::to_string(e.at_us));
    out.append("}\n\n");
}

void append_gap(std::string &out, std::uint64_t from, std::uint64_t to)
{
    const std::string last = std::to_string(to);
    out.append("id: ").append(last).append("\nevent: gap\ndata: {\"from\":");
    out.append(std::to_string(from)).append(",\"to\":").append(last).append("}\n\n");
}

void append_keepalive(std::string &out)
{
    out.append(": keep-alive\n\n");
}

bool parse_last_event_id(const std::string &text, std::uint64_t &id)
{
    if (text.empty() || text.size() > 19)
        return false;
    std::uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    id = v;
    return true;
}

} // namespace run_events
