import { DEFAULT_CHAIN } from "../src/domain/chains.js";
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import Fastify, { type FastifyInstance } from "fastify";
import { startServer } from "../src/server.js";
import { openReadOnly } from "../src/store/sqlite/database.js";
import type { ListingStatusName } from "../src/domain/rows.js";
import { intervalSeconds, intervalStart, type SeriesInterval } from "../src/domain/series.js";
import type { CollectionSort, TokenSort } from "../src/store/ports/market.js";
import type { KeyValue } from "../src/domain/rows.js";
import { ACTIVITY_TYPES, type ActivityType, resumeKey } from "../src/service/activity.js";
import { type SqliteRepositories, sqliteRepositories } from "../src/store/sqlite/read-repositories.js";

// The servers `npm run bench:serve` compares, each in its own process so the
// load generator never shares their event loop:
//   server       the service itself (startServer), reporting event-loop delay
//   bytes        a bare Fastify route per endpoint sending fixed bytes (the ceiling)
//   handwritten  a bare Fastify route per endpoint calling the same store
//                method and JSON.stringify-ing the rows (a hand-written service)
// Usage: serve-targets.ts KIND DB [CACHE_MB | BYTES_FILE]; prints {"url": ...}
// when listening; answers "eld-reset" / "eld-report" IPC messages.

const [kind, db, extra] = process.argv.slice(2);
if (!kind || !db) {
  process.stderr.write("usage: serve-targets.ts server|bytes|handwritten DB [CACHE_MB|BYTES_FILE]\n");
  process.exit(2);
}

const eld = monitorEventLoopDelay({ resolution: 1 });
eld.enable();
process.on("message", (m: string) => {
  if (m === "eld-reset") eld.reset();
  if (m === "eld-report") process.send?.({ eldP99Ms: eld.percentile(99) / 1e6, eldMaxMs: eld.max / 1e6 });
});

let url: string;
let close: () => Promise<void>;
if (kind === "server") {
  const server = await startServer({ db, port: 0, host: "127.0.0.1", cacheMb: Number(extra ?? "64"), logLevel: "warn" });
  url = server.url;
  close = server.close;
} else {
  const app = Fastify();
  if (kind === "bytes") bytesRoutes(app, JSON.parse(readFileSync(extra!, "utf8")) as Record<string, string>);
  else handwrittenRoutes(app, sqliteRepositories(openReadOnly(db)));
  url = await app.listen({ port: 0, host: "127.0.0.1" });
  close = () => app.close();
}
process.send?.({ url });
process.on("SIGTERM", () => void close().then(() => process.exit(0)));

function bytesRoutes(app: FastifyInstance, bodies: Record<string, string>): void {
  for (const [path, base64] of Object.entries(bodies)) {
    const body = Buffer.from(base64, "base64");
    app.get(path, (_req, reply) => {
      void reply.type("application/json; charset=utf-8").send(body);
    });
  }
}

type Q = Record<string, string | string[] | undefined>;
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const list = (v: string | string[] | undefined) => (v === undefined ? [] : (Array.isArray(v) ? v : [v]).flatMap((x) => x.split(",")));
const num = (v: string | string[] | undefined) => (one(v) === undefined ? undefined : Number(one(v)));

/** The keyset position inside one of the service's page tokens (not checked: a hand-written service's shortcut). */
function after(token: string | undefined): KeyValue[] | null {
  if (!token) return null;
  return (JSON.parse(Buffer.from(token, "base64url").toString()) as { k: KeyValue[] }).k;
}
const next = (k: KeyValue[] | null) => (k ? Buffer.from(JSON.stringify({ k })).toString("base64url") : "");

function handwrittenRoutes(app: FastifyInstance, store: SqliteRepositories): void {
  const route = (path: string, handle: (q: Q, id: number) => unknown) =>
    app.get(path, (req, reply) => {
      const q = req.query as Q;
      // Scores take a list of addresses; its handler looks each one up.
      const id = path.endsWith("/scores") ? 0 : store.collections.collectionId(String(one(q.contractAddress)).toLowerCase());
      if (id === undefined) return reply.code(404).send({ code: "not_found" });
      void reply.type("application/json; charset=utf-8").send(JSON.stringify(handle(q, id)));
      return reply;
    });
  const page = (q: Q) => ({ limit: num(q.limit) ?? 20, after: after(one(q.cursor)) });
  route("/v1/asset/appraisals", (q, id) => {
    if (q.assetId) return { successful: 1, nextPage: "", data: store.assetMetrics.appraisalsByAsset(id, list(q.assetId)) };
    const p = store.assetMetrics.appraisalsPage(id, page(q));
    return { successful: 1, nextPage: next(p.nextKey), data: p.rows };
  });
  route("/v1/asset/rarity", (q, id) => {
    if (q.assetId) return { successful: 1, nextPage: "", data: store.assetMetrics.rarityByAsset(id, list(q.assetId)) };
    const p = store.assetMetrics.rarityPage(id, page(q));
    return { successful: 1, nextPage: next(p.nextKey), data: p.rows };
  });
  route("/v1/asset/sales", (q, id) => {
    const f = { assetId: one(q.assetId), marketplace: one(q.marketplace), since: num(q.since), until: num(q.until) };
    const p = store.sales.salesPage(id, f, page(q));
    return { success: 1, cursor: next(p.nextKey), data: p.rows.map((r) => ({ ...r, currency: "ETH" })) };
  });
  route("/v1/asset/listings", (q, id) => {
    const f = { assetId: one(q.assetId), marketplace: one(q.marketplace), status: one(q.status) as ListingStatusName | undefined };
    const p = store.listings.listingsPage(id, f, page(q));
    return { success: 1, cursor: next(p.nextKey), data: p.rows.map((r) => ({ ...r, currency: "ETH" })) };
  });
  route("/v1/collection/stats", (q, id) => {
    const s = store.sales.salesSummary(id, { assetId: one(q.assetId), since: num(q.since), until: num(q.until) });
    return { successful: 1, data: { contractAddress: one(q.contractAddress), ...s, currency: "ETH" } };
  });
  route("/v1/collection/floor", (q, id) => {
    const groups = store.analytics.floors(id, { marketplace: one(q.marketplace), at: num(q.at) });
    const floor = groups.reduce<(typeof groups)[number] | undefined>((a, g) => (a === undefined || BigInt(g.price) < BigInt(a.price) ? g : a), undefined);
    return { successful: 1, data: { contractAddress: one(q.contractAddress), at: num(q.at) ?? 0, floor: floor ?? null, groups, currency: "ETH" } };
  });
  route("/v1/collection/holders", (q, id) => {
    const h = store.analytics.holders(id, page(q));
    return { successful: 1, nextPage: next(h.page.nextKey), data: { totalTokens: h.totalTokens, numHolders: h.numHolders, holders: h.page.rows } };
  });
  route("/v1/collection/stats/series", (q, id) => {
    // The window as given, no gap filling: the store's rows as they come.
    const interval = (one(q.interval) ?? "day") as SeriesInterval;
    const from = intervalStart(interval, num(q.since) ?? 0);
    const to = Math.min(intervalStart(interval, num(q.until) ?? 0), from + 999 * intervalSeconds(interval));
    const rows = store.analytics.series(id, { interval, from, to, marketplace: one(q.marketplace), assetId: one(q.assetId) });
    return {
      successful: 1,
      nextPage: "",
      data: rows.map((b) => ({
        start: b.start, end: b.start + intervalSeconds(interval) - 1, totalNumSales: b.n, totalVolume: b.volume, minPrice: b.min,
        maxPrice: b.max, firstPrice: b.firstPrice, lastPrice: b.lastPrice, currency: "ETH",
      })),
    };
  });
  route("/v1/asset/tokens", (q, id) => {
    const trait = one(q.trait)?.split(":");
    const f = {
      collectionId: id, assetId: one(q.assetId), owner: one(q.owner), sort: (one(q.sort) ?? "id") as TokenSort,
      trait: trait === undefined ? undefined : { type: trait[0]!, value: trait.slice(1).join(":") },
    };
    const p = store.tokens.tokensPage(f, page(q));
    return { successful: 1, nextPage: next(p.nextKey), data: p.rows.map(({ key: _key, ...t }) => t) };
  });
  route("/v1/collection/traits", (_q, id) => ({ successful: 1, data: store.tokens.traits(id) }));
  // The activity feed: each kind's page from the cursor, merged by time then kind (service/activity.ts's rule).
  route("/v1/collection/activity", (q, id) => {
    const now = Math.floor(Date.now() / 1000);
    const limit = num(q.limit) ?? 20;
    const key = after(one(q.cursor));
    const types = (list(q.types).length > 0 ? list(q.types) : ACTIVITY_TYPES) as ActivityType[];
    const pageOf = (t: ActivityType) => {
      const p = { limit, after: key === null ? null : resumeKey(t, key) };
      const rows: { type: ActivityType; time: number; row: object }[] =
        t === "sale" ? store.sales.salesPage(id, {}, p).rows.map((row) => ({ type: t, time: row.timestamp, row }))
        : t === "transfer" ? store.transfers.transfersPage(id, p).rows.map((row) => ({ type: t, time: row.timestamp, row }))
        : t === "listing" ? store.listings.listingsPage(id, {}, p).rows.map((row) => ({ type: t, time: row.createdAt, row }))
        : store.offers.offersPage(id, {}, p, now).rows.map((row) => ({ type: t, time: row.createdAt, row }));
      return rows;
    };
    const rows = types.flatMap(pageOf).sort((a, b) => b.time - a.time || ACTIVITY_TYPES.indexOf(a.type) - ACTIVITY_TYPES.indexOf(b.type)).slice(0, limit);
    return { successful: 1, nextPage: "", data: rows.map((r) => ({ type: r.type, timestamp: r.time, [r.type]: r.row })) };
  });
  // The collections list: the summaries' page, then each row's top bid and floor a day ago, as the service reads them.
  app.get("/v1/collections", (req, reply) => {
    const q = req.query as Q;
    const now = Math.floor(Date.now() / 1000);
    const query = one(q.query)?.toLowerCase();
    const { windowsEnd, page: p } = store.collectionList.collectionsPage({ chain: DEFAULT_CHAIN, sort: (one(q.sort) ?? "volume1d") as CollectionSort, query }, page(q));
    const ids = p.rows.map((r) => r.collectionId);
    const bids = store.offers.topBids(ids, now);
    const then = store.analytics.lowestFloorsAt(ids, now - 86_400);
    const data = p.rows.map(({ key: _key, collectionId: _id, ...c }, i) => ({ ...c, topBid: bids[i] ?? null, floorThen: then[i] ?? null, currency: "ETH" }));
    void reply.type("application/json; charset=utf-8").send(JSON.stringify({ successful: 1, nextPage: next(p.nextKey), windowsEnd, data }));
    return reply;
  });
  route("/v1/collection/influencers", (q, id) => ({ success: 1, data: store.social.topInfluencers(id, num(q.limit) ?? 20) }));
  route("/v1/collection/tweets", (q, id) => ({ success: 1, data: store.social.topTweets(id, num(q.limit) ?? 20) }));
  route("/v1/collection/scores", (q) => ({
    successful: 1,
    data: list(q.contractAddress).flatMap((a) => {
      const id = store.collections.collectionId(a.toLowerCase());
      return id === undefined ? [] : (store.collections.score(id) ?? []);
    }),
  }));
}
