// PostGraphile 5 (the amber preset, as its documentation starts a project) serving the benchmark
// database's public schema on 127.0.0.1. One Node process, PostGraphile's default pool.
//   DATABASE_URL=postgres://... PORT=5678 node server.mjs
import { createServer } from "node:http";
import { postgraphile } from "postgraphile";
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";
import { makePgService } from "postgraphile/adaptors/pg";
import { grafserv } from "postgraphile/grafserv/node";

const port = Number(process.env.PORT || 5678);
const preset = {
  extends: [PostGraphileAmberPreset],
  pgServices: [makePgService({ connectionString: process.env.DATABASE_URL, schemas: ["public"] })],
  grafserv: { port, host: "127.0.0.1", graphiql: false, watch: false },
  grafast: { explain: false },
};

const pgl = postgraphile(preset);
const serv = pgl.createServ(grafserv);
const server = createServer();
server.on("error", (e) => { console.error(e); process.exit(1); });
await serv.addTo(server);
server.listen(port, "127.0.0.1", () => console.log(`postgraphile listening on 127.0.0.1:${port}`));
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, async () => { server.close(); await pgl.release(); process.exit(0); });
