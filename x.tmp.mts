import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildDemo } from "./src/demo/build.js";
import { generateDemo } from "./src/demo/generate.js";
import { openWritableStore } from "./src/store/open.js";
import { startServer } from "./src/server.js";
import { openKeyAdmin } from "./src/store/open.js";
const END = 1_790_000_000;
const target = join(mkdtempSync(join(tmpdir(), "x-")), "s.sqlite");
const store = await openWritableStore(target, { migrateEmpty: true });
await buildDemo(store, 3, "small", undefined, END);
await store.close();
const admin = await openKeyAdmin(target);
const key = (await admin.create("r")).key;
await admin.close();
const server = await startServer({ db: target, port: 0, host: "127.0.0.1", drainMs: 50, deriveRefresh: false, listingClockMs: 0, rateLimit: 0 } as never);
for (const c of generateDemo(3, "small", END).collections as { contractAddress: string }[]) {
  for (const [path, q] of [["/v1/collection/candles", { interval: "1h", since: END - 3 * 86400, until: END, limit: 50 }], ["/v1/collection/floor", {}], ["/v1/collection/stats/series", { interval: "day", since: END - 30 * 86400, until: END, limit: 50 }]] as const) {
    const url = new URL(path, server.url);
    url.searchParams.set("contractAddress", c.contractAddress.toLowerCase());
    for (const [k, v] of Object.entries(q)) url.searchParams.set(k, String(v));
    try {
      const r = await fetch(url, { headers: { "x-api-key": key } });
      console.log(path, r.status, (await r.text()).slice(0, 150));
    } catch (e) { console.log(path, "FAILED", String(e), (e as any).cause); }
  }
}
await server.close();
