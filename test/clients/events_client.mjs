// The npm package eventsource's EventSource (a WhatWG EventSource for Node) against querygate's
// GET /events, for test/t/records_063_events.pl:
//   node events_client.mjs URL KEY COUNT TIMEOUT_SECONDS [--hold-reconnect]
// connects to URL, with KEY in X-API-Key through the constructor's fetch option (KEY "" sends no
// header: a URL with ?access_token= is how a browser's EventSource authenticates), listens for the
// named events run, gap and end, and prints one JSON object a line on stdout:
//   {"type":"request","n":1,"last_event_id":null}   each request EventSource makes (n counts
//                                                    them; last_event_id: the Last-Event-ID header
//                                                    EventSource sent, null when none)
//   {"type":"open","n":1}                            the stream opened (200, text/event-stream)
//   {"type":"run","last_event_id":"42","data":{...}} an event (data parsed as JSON; last_event_id:
//                                                    EventSource's lastEventId for it)
//   {"type":"error","code":401,"message":"..."}      EventSource's error event
//   {"type":"done","reason":"count","events":2}      last: COUNT events came, or TIMEOUT_SECONDS
//                                                    passed ("timeout"), or stdin said "quit"
// and exits 0. EventSource reconnects by itself when the server ends the body, sending the last id
// it saw as Last-Event-ID. With --hold-reconnect, each request after the first is printed and then
// held until a line "go" on stdin, so that the test decides what the server holds when the
// reconnection arrives; a line "quit" ends the client.
import { EventSource } from "eventsource";
import readline from "node:readline";

const [url, key, countArg, timeoutArg, ...flags] = process.argv.slice(2);
const want = Number(countArg);
const timeoutMs = Number(timeoutArg) * 1000;
const hold = flags.includes("--hold-reconnect");

const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");

let events = 0;
let es = null;
const timer = setTimeout(() => finish("timeout"), timeoutMs);
function finish(reason) {
  clearTimeout(timer);
  if (es) es.close();
  print({ type: "done", reason, events });
  process.exit(0);
}

// stdin: "go" releases one held reconnection, "quit" ends.
const released = [];
const waiting = [];
if (hold) {
  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    line = line.trim();
    if (line === "quit") finish("quit");
    if (line !== "go") return;
    const w = waiting.shift();
    if (w) w();
    else released.push(line);
  });
}
function release() {
  if (released.length) {
    released.shift();
    return Promise.resolve();
  }
  return new Promise((resolve) => waiting.push(resolve));
}

let requests = 0;
es = new EventSource(url, {
  fetch: async (input, init) => {
    const n = ++requests;
    const headers = { ...init.headers };
    if (key) headers["X-API-Key"] = key;
    const lastEventId = Object.entries(headers).find(([k]) => k.toLowerCase() === "last-event-id");
    print({ type: "request", n, last_event_id: lastEventId ? lastEventId[1] : null });
    if (hold && n > 1) await release();
    return fetch(input, { ...init, headers });
  },
});

es.addEventListener("open", () => print({ type: "open", n: requests }));
es.addEventListener("error", (e) =>
  print({ type: "error", code: e.code ?? null, message: e.message ?? null, ready_state: es.readyState }),
);
for (const type of ["run", "gap", "end"]) {
  es.addEventListener(type, (e) => {
    let data;
    try {
      data = JSON.parse(e.data);
    } catch {
      data = { unparsed: e.data };
    }
    print({ type, last_event_id: e.lastEventId, data });
    if (++events >= want) finish("count");
  });
}
