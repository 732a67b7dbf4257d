import pg from "pg";
import { APPLY_SERIES_MARKS, REPRICED_BEFORE, SERIES_MARKS_TABLE } from "../../src/store/postgres/sales-series.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Kind } from "../../src/domain/kinds/index.js";
import { LISTING_STATUSES } from "../../src/domain/rows.js";
import { openPool } from "../../src/store/postgres/database.js";
import { type PgRepositories, pgRepositories } from "../../src/store/postgres/read-repositories.js";
import type { ListingsFilter, SalesFilter } from "../../src/store/ports/reads.js";
import { exerciseAnalytics, exerciseCollectionList, exerciseTokens } from "../support/analytics-reads.js";
import { keepSql, WASH_MOVES_TABLE } from "../../src/store/postgres/collection-summaries.js";
import { CLEAN_SUMMARIES, WASH_SUMMARIES } from "../../src/store/shared/collection-summaries.js";
import { PG_SALES_SINCE_SQL, salesSinceValues } from "../../src/store/postgres/sales.js";
import { APPLY_HOUR_DELTAS, hourDeltasSql } from "../../src/store/postgres/sales-stats.js";
import { ALONE_SQL } from "../../src/store/postgres/wash.js";
import { LAPSE_DUE, movedFound } from "../../src/store/postgres/fillable.js";
import { importRecords } from "../support/engine.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { VALID } from "../ingest/records.js";

// The PostgreSQL side of the query-plan tests: every statement the read
// repositories prepare, run through every read path and filter combination
// on a store of 40 collections (ANALYZEd, so the planner has statistics),
// then EXPLAINed with the values of its run. Each must reach its rows by an
// index whose condition binds the columns of its most selective filters,
// sort nothing that grows with a collection, and never use OFFSET.

const COLLECTIONS = 40;
/** Collections with a name and a score only: the lookup tables as large as a real store's. */
const LISTED_ONLY = 3000;
const address = (i: number) => `0x${i.toString(16).padStart(40, "c")}`;
const TARGET = address(7);
const MARKETPLACES = ["OPENSEA", "BLUR", "LOOKSRARE", "X2Y2"];

function records(): Partial<Record<Kind, object[]>> {
  const out: Record<string, object[]> = {};
  const push = (kind: Kind, r: object) => (out[kind] ??= []).push(r);
  for (let c = 1; c <= LISTED_ONLY; c++) {
    const contractAddress = address(c);
    push("collections", { contractAddress, name: `Collection ${c}` });
    push("scores", { ...VALID.scores, contractAddress, name: `Collection ${c}` });
  }
  for (let c = 1; c <= COLLECTIONS; c++) {
    const contractAddress = address(c);
    for (let a = 0; a < 100; a++) {
      const assetId = String(a);
      push("tokens", { ...VALID.tokens, contractAddress, assetId });
      push("appraisals", { ...VALID.appraisals, contractAddress, assetId });
      push("rarity", { ...VALID.rarity, contractAddress, assetId, rarityRank: a + 1 });
    }
    // The collection the queries read is a large one: plan choices between
    // indexes (an asset's or a marketplace's) are the ones a real store gets.
    const n = contractAddress === TARGET ? 20_000 : 400;
    for (let i = 0; i < n; i++) {
      push("sales", {
        ...VALID.sales,
        contractAddress,
        hash: `0x${(c * 100_000 + i).toString(16).padStart(64, "0")}`,
        assetId: String(i % 1000),
        timestamp: 1_700_000_000 + i * 3600,
        block: 18_000_000 + i,
        // Buyers own what they bought (ownership follows sales): a collection
        // has many holders, as a real one does.
        to: `0x${(i % 500).toString(16).padStart(40, "b")}`,
        // Not tied to the asset id: every asset sells on every marketplace.
        marketplace: MARKETPLACES[(i + Math.floor(i / 1000)) % MARKETPLACES.length],
      });
      push("listings", {
        ...VALID.listings,
        contractAddress,
        marketplaceId: `0x${(c * 100_000 + i).toString(16)}`,
        assetId: String(i % 1000),
        createdAt: 1_700_000_000 + i * 3600,
        lastUpdatedAt: 1_700_000_000 + i * 3600,
        marketplace: MARKETPLACES[i % MARKETPLACES.length],
        status: LISTING_STATUSES[i % LISTING_STATUSES.length],
        // Each cheaper than the one before: the floor's history changes with every active one (floor-history.ts).
        price: String(30_000_000_000_000_000_000n - BigInt(i) * 1_000_000_000_000_000n),
      });
    }
    // Transfers of the collection's tokens (a listing's maker's ownership at its creation seeks them by token).
    for (let i = 0; i < (contractAddress === TARGET ? 2_000 : 40); i++) {
      push("transfers", {
        hash: `0x${(c * 100_000 + 50_000 + i).toString(16).padStart(64, "0")}`, logIndex: 0, from: `0x${"1".repeat(40)}`, to: `0x${(i % 300).toString(16).padStart(40, "e")}`,
        contractAddress, assetId: String(i % 1000), timestamp: 1_700_000_000 + i * 7200 + 1, block: 18_100_000 + i,
      });
    }
    // Bids: collection-wide, trait and token offers, most standing (the top bid is a seek of the standing ones by price).
    for (let i = 0; i < (contractAddress === TARGET ? 5_000 : 200); i++) {
      const scope = i % 3 === 0 ? {} : i % 3 === 1 ? { traitType: "Fur", traitValue: `v${i % 7}` } : { assetId: String(i % 100) };
      push("offers", {
        ...VALID.offers, contractAddress, marketplaceId: `0x${(c * 100_000 + i).toString(16)}`, assetId: "", traitType: "", traitValue: "", ...scope,
        price: String(1000 + (i * 7919) % 100_000), status: i % 5 === 0 ? "CANCELLED" : "CREATED", expiresAt: i % 4 === 0 ? 1_700_000_700 : 0,
      });
    }
    for (let u = 0; u < 30; u++) {
      const id = String(c * 1000 + u);
      const user = { ...(VALID.influencers!.user as object), id };
      push("influencers", { contractAddress, user, score: u });
      push("tweets", { ...VALID.tweets, contractAddress, id: String(c * 1_000_000 + u), user, retweetCount: u, favoriteCount: 1, interaction: u + 1 });
    }
  }
  return out as Partial<Record<Kind, object[]>>;
}

/** A trait's tokens by latest move: sorted (docs/decisions.md, "Tokens"). */
const TRAIT_BY_MOVE = /FROM token_traits tt [\s\S]*ORDER BY coalesce\(t\.owner_block/;

let db: { url: string; drop(): Promise<void> };
let repos: PgRepositories;
let client: pg.Client;
/** Each index's key columns, in order. */
const indexColumns = new Map<string, string[]>();

describe.skipIf(skipPg)("PostgreSQL query plans", () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    const all = records();
    for (const kind of ["collections", "tokens", "appraisals", "rarity", "sales", "transfers", "listings", "offers", "influencers", "tweets", "scores"] as Kind[]) {
      await importRecords(db.url, kind, all[kind] ?? []);
    }
    // Records taken back (reorganisations: every tenth sale of each collection): the feeds read their removals beside their rows.
    await importRecords(db.url, "sales", (all.sales ?? []).filter((_, i) => i % 10 === 0).map((r) => ({ ...r, removed: true })));
    // Orders made on-chain and taken back whole (every tenth, under new ids): the feeds and includeRemoved read their removal tables.
    for (const kind of ["listings", "offers"] as const) {
      const onChain = (all[kind] ?? []).filter((_, i) => i % 10 === 0).map((r, i) => ({ ...r, marketplaceId: `0xfeed${(r as { marketplaceId: string }).marketplaceId.slice(2)}`, block: 18_000_000 + i }));
      await importRecords(db.url, kind, onChain);
      await importRecords(db.url, kind, onChain.map((r) => ({ ...r, removed: true })));
    }
    // ETH's USD price every hour around the sales (docs/money.md): a sale's point in force is a seek of their key.
    const hour = Math.floor(1_690_000_000 / 3_600) * 3_600;
    await importRecords(db.url, "prices", Array.from({ length: 6_000 }, (_, i) => ({ currency: "ETH", minute: hour + i * 3_600, usd: `${2_000 + (i % 500)}.25` })));
    // Flagged tokens (one in twenty of the listed ones, and 5,000 of a collection of their own) and spam collections (one in
    // four, and 3,000 of their own), marked and cleared: the floors and the list ask each row's mark, as a chain's store
    // (most of whose collections are spam) would; with a page of marks the planner would rightly scan it.
    const listed = (all.listings ?? []) as { contractAddress: string; assetId: string }[];
    const stolen = `0x${"5".repeat(40)}`;
    await importRecords(db.url, "flags", [
      ...listed.filter((_, i) => i % 20 === 0).map((l, i) => ({ contractAddress: l.contractAddress, assetId: l.assetId, isFlagged: i % 3 !== 0, reason: "stolen" })),
      ...Array.from({ length: 5_000 }, (_, i) => ({ contractAddress: stolen, assetId: String(i), isFlagged: true, reason: "stolen" })),
    ]);
    const addresses = [...new Set(listed.map((l) => l.contractAddress))];
    await importRecords(db.url, "spam", [
      ...addresses.filter((_, i) => i % 4 === 0).map((contractAddress, i) => ({ contractAddress, isSpam: i % 2 === 0 })),
      ...Array.from({ length: 3_000 }, (_, i) => ({ contractAddress: `0x${i.toString(16).padStart(40, "6")}`, isSpam: true })),
    ]);
    // Each with a token, as a spam collection has (its holdings and summary rows beside the others').
    await importRecords(db.url, "tokens", Array.from({ length: 3_000 }, (_, i) => ({ contractAddress: `0x${i.toString(16).padStart(40, "6")}`, assetId: "1", currentOwner: `0x${"8".repeat(40)}`, attributes: [] })));
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query("ANALYZE");
    const idx = await client.query<{ name: string; cols: string[] }>(
      `SELECT i.indexrelid::regclass::text AS name, array_agg(a.attname::text ORDER BY k.n) AS cols
         FROM pg_index i, unnest(i.indkey) WITH ORDINALITY k(attnum, n), pg_attribute a
        WHERE a.attrelid = i.indrelid AND a.attnum = k.attnum AND i.indrelid::regclass::text NOT LIKE 'pg_%'
        GROUP BY i.indexrelid`,
    );
    for (const r of idx.rows) indexColumns.set(r.name, r.cols);
    repos = pgRepositories(openPool(db.url, 2), db.url);
    const id = (await repos.collections.collectionId(TARGET))!;
    const first = { limit: 5, after: null };
    await repos.assetMetrics.appraisalsPage(id, first);
    await repos.assetMetrics.appraisalsPage(id, { limit: 5, after: ["7"] });
    await repos.assetMetrics.appraisalsByAsset(id, ["1", "7"]);
    await repos.assetMetrics.rarityPage(id, first);
    await repos.assetMetrics.rarityPage(id, { limit: 5, after: [3, "14"] });
    await repos.assetMetrics.rarityByAsset(id, ["1", "7"]);
    const saleFilters: SalesFilter[] = [];
    for (const assetId of [undefined, "7"])
      for (const marketplace of [undefined, "BLUR"])
        for (const since of [undefined, 1_700_100_000])
          for (const until of [undefined, 1_700_900_000]) saleFilters.push({ assetId, marketplace, since, until });
    // Window edges inside hours: stats add the raw sales at the edges.
    for (const assetId of [undefined, "7"]) saleFilters.push({ assetId, since: 1_700_100_001, until: 1_700_900_001 });
    // finality=final: the sales at or below the chain's finalized block (most of them: the newest few blocks are pending).
    saleFilters.push({ maxBlock: 18_019_990 }, { marketplace: "BLUR", maxBlock: 18_019_990 });
    for (const filter of saleFilters) {
      await repos.sales.salesPage(id, filter, first);
      await repos.sales.salesPage(id, filter, { limit: 5, after: [1_700_500_000, 18_000_100, "0x00", "1"] });
      for (const form of ["json", "binary"] as const) {
        await repos.sales.salesPage(id, filter, first, form);
        await repos.sales.salesPage(id, filter, { limit: 5, after: [1_700_500_000, 18_000_100, "0x00", "1"] }, form);
      }
      await repos.sales.salesSummary(id, filter);
      // In dollars: whole days and hours from the series' dollars, the edges' (and flagged) sales at their points (docs/money.md).
      for (const includeWash of [false, true]) await repos.sales.salesUsdSummary(id, { ...filter, includeWash }, 1_000_000);
    }
    for (const assetId of [undefined, "7"])
      for (const marketplace of [undefined, "BLUR"])
        for (const status of [undefined, "CREATED" as const]) {
          const filter: ListingsFilter = { assetId, marketplace, status };
          await repos.listings.listingsPage(id, filter, first);
          await repos.listings.listingsPage(id, filter, { limit: 5, after: [1_700_500_000, "BLUR", "0x901"] });
          for (const form of ["json", "binary"] as const) {
            await repos.listings.listingsPage(id, filter, first, form);
            await repos.listings.listingsPage(id, filter, { limit: 5, after: [1_700_500_000, "BLUR", "0x901"] }, form);
          }
        }
    await repos.social.topInfluencers(id, 5);
    await repos.social.topTweets(id, 5);
    for (const form of ["json", "binary"] as const) {
      await repos.social.topInfluencers(id, 5, form);
      await repos.social.topTweets(id, 5, form);
    }
    await repos.collections.score(id);
    // The live feeds: a collection's rows above a position, and its last position.
    for (const kind of ["sales", "listings"] as const) await repos.feed.head(kind, id);
    await repos.feed.sales(id, 3, 50);
    await repos.feed.listings(id, 3, 50);
    await repos.feed.tokens(id, 3, 50);
    await repos.feed.merged("tokens", [id, id + 1], 3, 50);
    // The records taken back by time (the activity list's includeRemoved), from the start and after a key.
    await repos.removals.removalsPage(id, ["sales", "listings", "offers"], { limit: 5, after: null });
    await repos.removals.removalsPage(id, ["sales", "listings", "offers"], { limit: 5, after: [1_700_500_000, 18_000_100, 1_000_000] });
    await exerciseAnalytics(repos, id);
    await exerciseTokens(repos, id);
    await exerciseCollectionList(repos, id);
  }, 300_000);
  afterAll(async () => {
    await repos?.close();
    await client?.end();
    await db?.drop();
  });

  interface PlanNode {
    "Node Type": string;
    "Relation Name"?: string;
    "Index Name"?: string;
    "Index Cond"?: string;
    "Sort Key"?: string[];
    "Subplan Name"?: string;
    Plans?: PlanNode[];
  }
  async function planOf(text: string, values: unknown[]): Promise<PlanNode[]> {
    const r = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>({ text: `EXPLAIN (FORMAT JSON) ${text}`, values });
    const nodes: PlanNode[] = [];
    const walk = (n: PlanNode) => {
      nodes.push(n);
      for (const c of n.Plans ?? []) walk(c);
    };
    walk(r.rows[0]!["QUERY PLAN"][0].Plan);
    return nodes;
  }
  const one = (sql: string) => sql.replace(/\s+/g, " ").trim();

  it("exercised every read path", () => {
    expect(repos.preparedRuns().length).toBeGreaterThan(50);
  });

  it("reads no table of the data by a sequential scan, sorts nothing a collection's size can grow, and uses no OFFSET", async () => {
    const problems: string[] = [];
    for (const { text, values } of repos.preparedRuns()) {
      if (/\bOFFSET\b/i.test(text)) problems.push(`OFFSET in ${one(text)}`);
      // One asset's rows (at most 20 ids, or one asset's sales) may be sorted.
      // So may a wallet's tokens of a collection, and a trait's tokens by
      // latest move (no index holds that order per trait: docs/decisions.md,
      // "Tokens").
      const boundedByAsset = /asset_id = \$\d|asset_id = ANY|current_owner = \$\d/.test(text) || TRAIT_BY_MOVE.test(text);
      // A series page reads at most 1,000 intervals (bucket between two bounds), whatever the collection's history.
      // So does a page of the floor's history (floor_buckets: at most one row per interval of the page).
      const boundedByPage = /FROM (sales_series|floor_buckets) WHERE .*bucket >= \$\d+ AND bucket <=? \$\d+/.test(one(text));
      for (const n of await planOf(text, values)) {
        // store_state is one row by design, finality one per chain (a record's finality: store/shared/finality.ts).
        if (n["Node Type"] === "Seq Scan" && n["Relation Name"] !== "store_state" && n["Relation Name"] !== "finality") problems.push(`Seq Scan on ${n["Relation Name"]} in ${one(text)}`);
        // A token's listings by price (the tokens and traits lists' cheapest listing): a token has few.
        const tokenListings = /l\.price/.test(n["Sort Key"]?.[0] ?? "") && /l\.asset_id = (t|f)\.asset_id/.test(text);
        // A feed's page merges its parts' pages (rows, removals; several collections'), each at most LIMIT rows.
        const feedPage = n["Sort Key"]?.every((k) => /feed_seq$/.test(k)) === true && /ORDER BY (x\.|t\.)?feed_seq LIMIT \$3$/.test(one(text));
        // The traits list answers every trait value of a collection at once (no page): sorting them costs what reading them does.
        // The planner weighs that against the index's order by a hair (two estimated rows here), so either may come.
        const allTraitValues = /FROM trait_values v .*WHERE v\.collection_id = \$1 ORDER BY v\.trait_type/.test(one(text));
        if (n["Node Type"] === "Sort" && !boundedByAsset && !boundedByPage && !tokenListings && !feedPage && !allTraitValues) problems.push(`Sort by ${n["Sort Key"]?.join(", ")} in ${one(text)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every statement seeks on the columns of its most selective filters, not just some index", async () => {
    const problems: string[] = [];
    for (const { text, values } of repos.preparedRuns()) {
      // The collections list (its own test below): a first page binds nothing.
      if (/FROM store_state/.test(text) || /FROM collection_summaries(_with_wash)? s/.test(text)) continue;
      const main = mainTable(text);
      // An index scan names its table, a bitmap index scan only its index (named after the table).
      const nodes = (await planOf(text, values)).filter(
        (n) =>
          n["Index Cond"] !== undefined &&
          (n["Relation Name"] === main || (n["Node Type"] === "Bitmap Index Scan" && n["Index Name"]!.startsWith(`${main}_`))),
      );
      const need = requiredBindings(text, main);
      const ok = nodes.some((n) => need.some((cols) => cols.every((c) => seekColumns(indexColumns.get(n["Index Name"]!) ?? [], n["Index Cond"]!).includes(c))));
      if (!ok) problems.push(`${main}: ${nodes.map((n) => `${n["Index Name"]} ${n["Index Cond"]}`).join("; ") || "no index seek"}; needs ${JSON.stringify(need)} in ${one(text)}`);
    }
    expect(problems).toEqual([]);
  });

  it("the collections list is one range of its order's index, seeking the page key; keeping a summary is seeks", async () => {
    const pages = repos.preparedRuns().filter(({ text }) => /FROM collection_summaries(_with_wash)? s/.test(text));
    expect(pages.length).toBe(54);
    for (const { text, values } of pages) {
      const column = /ORDER BY s\.(\w+_key), s\.address/.exec(text)![1]!;
      const table = /FROM (\w+) s/.exec(text)![1]!;
      const nodes = await planOf(text, values);
      const scan = nodes.find((n) => n["Relation Name"] === table);
      expect(scan?.["Index Name"], one(text)).toBe(`${table}_by_${column.replace(/_key$/, "")}`);
      if (/\) > \(\$/.test(text)) expect(scan?.["Index Cond"], one(text)).toMatch(new RegExp(`ROW\\(${column}, address\\) > ROW`));
      expect(nodes.filter((n) => n["Node Type"] === "Sort" && /s\./.test(n["Sort Key"]?.[0] ?? "")), one(text)).toEqual([]);
    }
    // What a write runs (collection-summaries.ts keepSummaries): one range of the hour series, one seek of the open listings by price, per collection.
    const keep = await planOf(keepSql("c.data_version = $2", "$1::bigint"), [500_000, 1]);
    const conds = keep.map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
    expect(conds).toMatch(/sales_series_pkey: \(\(collection_id = c\.id\) AND \(marketplace = ''::text\) AND \(span = 3600\) AND \(bucket >= /);
    expect(conds).toMatch(/listings_open_floor: \(collection_id = c\.id\)/);
    expect(keep.filter((n) => n["Node Type"] === "Sort" && n["Relation Name"] !== "store_state")).toEqual([]);
    // The summary with wash adds the flagged sales of the 30 days: the partial index's range.
    const keepWash = await planOf(keepSql("c.data_version = $2", "$1::bigint", WASH_SUMMARIES), [500_000, 1]);
    const washConds = keepWash.map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
    expect(washConds).toMatch(/sales_washed: \(\(collection_id = c\.id\) AND \("timestamp" >= /);
    expect(washConds).toMatch(/sales_series_pkey: \(\(collection_id = c\.id\) AND \(marketplace = ''::text\) AND \(span = 3600\) AND \(bucket >= /);
    // A commit's keep of it (the windows where they were): the two summaries kept before, a seek of each by the collection.
    await client.query(WASH_MOVES_TABLE);
    const byMoves = await planOf(keepSql("c.data_version = $2", "$1::bigint", WASH_SUMMARIES, true, true), [500_000, 1]);
    const movesConds = byMoves.map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
    expect(movesConds).toMatch(new RegExp(`${WASH_SUMMARIES}_pkey: \\(collection_id = c\\.id\\)`));
    expect(movesConds).toMatch(new RegExp(`${CLEAN_SUMMARIES}_pkey: \\(collection_id = (c|ow)\\.(id|collection_id)\\)`));
  });

  it("a batch's hour deltas seek their hour rows, and the derive's count of sales reads the running totals (issue 50: both grew with the store)", async () => {
    const id = (await repos.collections.collectionId(TARGET))!;
    const hour = (await client.query<{ h: string }>("SELECT max(hour) AS h FROM sales_hourly WHERE collection_id = $1", [id])).rows[0]!.h;
    await client.query("BEGIN");
    try {
      // What a merge of sales runs (postgres/sales-stats.ts): the deltas' table, filled, with its statistics.
      const [create, , analyze] = hourDeltasSql("SELECT 1");
      await client.query(create!);
      // A sale on each marketplace. (The plan that hashed every hour row needed a larger store than this one: postgres/sales-stats.ts.)
      for (const m of MARKETPLACES) await client.query("INSERT INTO hour_deltas VALUES ($1, $2, $3, 1, 100)", [id, m, hour]);
      await client.query(analyze!);
      const apply = await planOf(APPLY_HOUR_DELTAS[0]!, []);
      expect(apply.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "sales_hourly")).toEqual([]);
      const seeks = apply.filter((n) => n["Relation Name"] === "sales_hourly" && n["Index Cond"] !== undefined).map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`);
      expect(seeks.join(" | ")).toMatch(/sales_hourly_pkey: \(\(collection_id = \w+\.c\) AND \(marketplace = \w+\.m\) AND \(hour >= /);
    } finally {
      await client.query("ROLLBACK");
    }
    const since = await planOf(PG_SALES_SINCE_SQL, salesSinceValues(id, 1_700_000_000 + 19_000 * 3600, 1_700_000_000 + 19_990 * 3600 + 5));
    expect(since.filter((n) => n["Node Type"] === "Seq Scan")).toEqual([]);
    const conds = since.filter((n) => n["Index Cond"] !== undefined).map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
    // The running totals: the hour row before the instant's hour, per marketplace; the edge and the new rows: one time range.
    expect(conds).toMatch(/sales_hourly_pkey: \(\(collection_id = \d+\) AND \(marketplace = m\.marketplace\) AND \(hour < '\d+'::bigint\)\)/);
    expect(conds).toMatch(/sales_by_marketplace: \(\(collection_id = \d+\) AND \(marketplace = m\.marketplace\) AND \("timestamp" >= '\d+'::bigint\) AND \("timestamp" <= '\d+'::bigint\)\)/);
    expect(conds).toMatch(/sales_by_time: \(\(collection_id = \d+\) AND \("timestamp" > '\d+'::bigint\) AND \("timestamp" <= '\d+'::bigint\)\)/);
  });

  it("a price point finds the sales it reprices by the series' hours, then each collection's time range (docs/money.md)", async () => {
    const hour = Number((await client.query<{ h: string }>("SELECT max(bucket) AS h FROM sales_series WHERE span = 3600", [])).rows[0]!.h);
    await client.query("BEGIN");
    try {
      // What a merge of price points runs before its merge (postgres/sales-series.ts REPRICED_BEFORE): the changed points, a point of the last hour.
      await client.query(`CREATE TEMP TABLE point_changes ON COMMIT DROP AS SELECT 'ETH'::text AS currency, ${hour + 600}::bigint AS minute, '2000'::text AS usd; ANALYZE point_changes`);
      const repriced = await planOf(REPRICED_BEFORE.find((q) => q.startsWith("CREATE TEMP TABLE repriced"))!.replace(/^CREATE TEMP TABLE repriced ON COMMIT DROP AS/, ""), []);
      expect(repriced.filter((n) => n["Node Type"] === "Seq Scan" && ["sales", "sales_series", "price_points"].includes(n["Relation Name"] ?? "")), JSON.stringify(repriced)).toEqual([]);
      const conds = repriced.filter((n) => n["Index Cond"] !== undefined).map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
      expect(conds).toMatch(/sales_series_by_hour: \(\(span = 3600\) AND \(bucket >= /);
      expect(conds).toMatch(/sales_by_\w+: \(\(collection_id = h\.collection_id\)( AND \(marketplace = \S+\))? AND \("timestamp" >= /);
    } finally {
      await client.query("ROLLBACK");
    }
  });

  it("an interval summed again reads an hour of one marketplace's sales; every marketplace's hour and a day seek their hours' rows", async () => {
    const id = (await repos.collections.collectionId(TARGET))!;
    const hour = Number((await client.query<{ h: string }>("SELECT max(bucket) AS h FROM sales_series WHERE span = 3600 AND collection_id = $1", [id])).rows[0]!.h);
    await client.query("BEGIN");
    try {
      // What a merge runs after a sale changed (postgres/sales-series.ts APPLY_SERIES_MARKS): its marks, and the intervals to sum again.
      await client.query(SERIES_MARKS_TABLE);
      await client.query("INSERT INTO series_marks VALUES ($1, $2, $3, NULL, NULL, NULL, NULL, false, false, NULL)", [id, MARKETPLACES[0], hour + 60]);
      await client.query("ANALYZE series_marks");
      await client.query(APPLY_SERIES_MARKS[0]!);
      await client.query(APPLY_SERIES_MARKS[1]!);
      const [raw, everyMarketplace, days] = APPLY_SERIES_MARKS.slice(-3);
      const conds = async (q: string) => {
        const plan = await planOf(q!, []);
        expect(plan.filter((n) => n["Node Type"] === "Seq Scan" && ["sales", "sales_series"].includes(n["Relation Name"] ?? "")), one(q)).toEqual([]);
        return plan.filter((n) => n["Index Cond"] !== undefined).map((n) => `${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
      };
      // An hour of the marketplace: its sales by (collection, marketplace, time), not the day's, nor every marketplace's.
      expect(await conds(raw!)).toMatch(/sales_by_marketplace: \(\(collection_id = r\.collection_id\) AND \(marketplace = r\.marketplace\) AND \("timestamp" >= r\.bucket\) AND \("timestamp" < \(r\.bucket \+ r\.span\)\)\)/);
      // Every marketplace's hour: each marketplace's hour row; a day: its hours' rows of one marketplace.
      expect(await conds(everyMarketplace!)).toMatch(/sales_series_pkey: \(\(collection_id = \w+\.collection_id\) AND \(marketplace = \w+\.name\) AND \(span = 3600\) AND \(bucket = \w+\.bucket\)\)/);
      expect(await conds(days!)).toMatch(/sales_series_pkey: \(\(collection_id = r\.collection_id\) AND \(marketplace = r\.marketplace\) AND \(span = 3600\) AND \(bucket >= r\.bucket\) AND \(bucket < \(r\.bucket \+ 86400\)\)\)/);
    } finally {
      await client.query("ROLLBACK");
    }
  });

  it("a token whose marks are all new sales asks the asset index its sales from a time on, and a sale of the window its buyer sold (migration 35)", async () => {
    const id = (await repos.collections.collectionId(TARGET))!;
    const [a, t] = Object.values((await client.query("SELECT asset_id::text, timestamp::text FROM sales WHERE collection_id = $1 LIMIT 1", [id])).rows[0]!) as string[];
    const held = await planOf(ALONE_SQL.heldFrom, [id, [a], [t]]);
    const sold = await planOf(ALONE_SQL.soldBy, [id, [a], [Number(t) - 86_400], [t], ["00".repeat(20)], ["00".repeat(32)]]);
    for (const plan of [held, sold]) expect(plan.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "sales")).toEqual([]);
    const conds = (plan: PlanNode[]) => plan.filter((n) => n["Index Cond"] !== undefined).map((n) => `${n["Node Type"]} ${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
    expect(conds(held)).toMatch(/Index Only Scan sales_by_asset: \(\(collection_id = \d+\) AND \(asset_id = u\.a\) AND \("timestamp" >= u\.f\)\)/);
    // The seller in the index (INCLUDE), read off it: not a row of the table per sale of the window.
    expect(conds(sold)).toMatch(/Index Only Scan sales_by_asset: \(\(collection_id = \d+\) AND \(asset_id = u\.a\) AND \("timestamp" >= u\.f\) AND \("timestamp" <= u\.t\)\)/);
  });

  it("pages after a token seek to the token's position: the index condition bounds the sort key", async () => {
    const keyset = repos.preparedRuns().filter(({ text }) => /asset_id > \$\d|\) > \(\$\d|timestamp <= \$\d+ AND \(|created_at <= \$\d+ AND \(/.test(text));
    // appraisals and rarity, 16 sales filter combinations, 8 listings ones
    expect(keyset.length).toBeGreaterThanOrEqual(2 + 16 + 8);
    for (const { text, values } of keyset.filter(({ text: q }) => !TRAIT_BY_MOVE.test(q))) {
      const nodes = await planOf(text, values);
      // One asset's open listings (its ask's index) may be read whole and
      // sorted: the page of an asset and status CREATED, a few listings.
      if (/l\.asset_id = \$\d/.test(text) && nodes.some((n) => n["Index Name"] === "listings_open_by_asset")) continue;
      const conds = nodes.map((n) => n["Index Cond"] ?? "").join(" | ");
      expect(conds, one(text)).toMatch(/asset_id > |asset_id\) [<>] ROW\(|"timestamp" <= |created_at <= |ROW\(\w+_key, address\) > ROW\(/);
    }
  });

  it("a token's owners are one range of token_balances_by_balance (the token and, after a key, the balance bound), or its one owner by the token's key", async () => {
    const pages = repos.preparedRuns().filter(({ text }) => /FROM token_balances WHERE/.test(text));
    expect(pages).toHaveLength(2);
    for (const { text, values } of pages) {
      const nodes = await planOf(text, values);
      const conds = nodes.filter((n) => n["Index Cond"] !== undefined).map((n) => `${n["Relation Name"]} ${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
      // The values bound (a custom plan): the token, and after a key the balance it ends at.
      expect(conds, one(text)).toMatch(/token_balances token_balances_by_balance: \(\(collection_id = \d+\) AND \(asset_id = '41'::numeric\) AND \(balance > 0\)/);
      if (/balance <= \$4/.test(text)) expect(conds, one(text)).toMatch(/token_balances_by_balance: [^|]*\(balance <= '?\d+'?(::bigint)?\)/);
      expect(conds, one(text)).toMatch(/tokens tokens_pkey: \(\(collection_id = \d+\) AND \(asset_id = '41'::numeric\)\)/);
      expect(nodes.filter((n) => n["Node Type"] === "Seq Scan" && ["token_balances", "tokens"].includes(n["Relation Name"] ?? ""))).toEqual([]);
    }
  });

  it("listings coming due are one range of listings_due by expiry; a maker's ownership at creation seeks its token's transfers and sales", async () => {
    const lapse = await planOf(LAPSE_DUE, []);
    const due = lapse.find((n) => n["Relation Name"] === "listings" && n["Index Name"] === "listings_due");
    expect(due?.["Index Cond"], JSON.stringify(lapse)).toMatch(/\(expires_at <= \(floor\(EXTRACT\(epoch FROM statement_timestamp\(\)\)\)\)::bigint\)/);
    expect(lapse.filter((n) => n["Node Type"] === "Seq Scan")).toEqual([]);
    const moved = await planOf(movedFound("SELECT $1::bigint", undefined, true), [1]);
    const conds = moved.filter((n) => n["Index Cond"] !== undefined).map((n) => `${n["Relation Name"]} ${n["Index Name"]}: ${n["Index Cond"]}`).join(" | ");
    // The owner at creation: the token's latest transfer and sale at or before it (listing-orders.ts ownerAtCreation).
    expect(conds).toMatch(/transfers transfers_by_asset: \(\(collection_id = (l|l_1)\.collection_id\) AND \(asset_id = (l|l_1)\.asset_id\)\)/);
    expect(conds).toMatch(/sales sales_by_asset: \(\(collection_id = (l|l_1)\.collection_id\) AND \(asset_id = (l|l_1)\.asset_id\) AND \("timestamp" <= (l|l_1)\.created_at\)\)/);
    // Found once per listing (m is materialized), not once per mention of its end in the update: one owner's seek per
    // branch of the maker's test (listing-orders.ts endOfOwnership), of which each listing takes one; and an ERC-1155
    // listing's (endOfBalance): its maker's transfers of the token, the token's one seek, its collection's standard by its key.
    expect(moved.some((n) => n["Subplan Name"] === "CTE m")).toBe(true);
    expect(moved.filter((n) => n["Relation Name"] === "transfers" && n["Index Name"] === "transfers_by_asset" && n["Node Type"] === "Index Scan")).toHaveLength(3);
    expect(conds, conds).toMatch(/collections collections_pkey: \(id = (l|l_1)\.collection_id\)/);
    expect(moved.filter((n) => n["Node Type"] === "Seq Scan" && ["sales", "transfers", "listings"].includes(n["Relation Name"] ?? ""))).toEqual([]);
  });

  it("reads the binding rules right (the rule itself can fail)", () => {
    expect(boundColumns("((collection_id = $1) AND (marketplace = $2) AND (\"timestamp\" >= $3))")).toEqual(["collection_id", "marketplace", "timestamp"]);
    expect(boundColumns("((collection_id = $1) AND (ROW(\"timestamp\", block) < ROW($2, $3)))")).toEqual(["collection_id", "timestamp", "block"]);
    // Only a prefix seeks: asset_id after a range on timestamp filters.
    expect(
      seekColumns(["collection_id", "marketplace", "timestamp", "block", "hash", "asset_id"], "((collection_id = 32) AND (marketplace = 'BLUR'::text) AND (\"timestamp\" >= '1700100000'::bigint) AND (asset_id = '7'::numeric))"),
    ).toEqual(["collection_id", "marketplace", "timestamp"]);
    // Custom plans show the values themselves.
    expect(boundColumns("((collection_id = 32) AND (asset_id = '7'::numeric) AND (created_at <= '1700500000'::bigint))")).toEqual([
      "collection_id",
      "asset_id",
      "created_at",
    ]);
    expect(requiredBindings("SELECT 1 FROM sales s WHERE s.collection_id = $1 AND s.asset_id = $2 AND s.marketplace = $3", "sales")).toEqual([
      ["collection_id", "asset_id"],
    ]);
    expect(requiredBindings("SELECT 1 FROM listings l WHERE l.collection_id = $1 AND l.marketplace = $2 AND l.status = $3", "listings")).toEqual([
      ["collection_id", "marketplace"],
      ["collection_id", "status"],
    ]);
  });
});

/** The table the statement reads its rows from: the first one its FROM names. */
/** A page's finalized block, once per statement (store/shared/finality.ts finalizedOfCollection). */
const FINALITY_OF_COLLECTION = /\(SELECT coalesce\(max\(f\.block\), -1\) FROM collections x JOIN finality f ON f\.chain = x\.chain WHERE x\.id = \$1\)/g;

function mainTable(sql: string): string {
  // A floor: the loop over marketplaces drives one seek each into the table its lateral reads.
  const lateral = /CROSS JOIN LATERAL \(\s*SELECT \* FROM (\w+)/.exec(sql);
  if (lateral) return lateral[1]!;
  // A list of collections: the lateral seek of each reads the table.
  // Its select list's own seeks (a token's flag) are not its table.
  const eachOf = (text: string) => /FROM unnest\([\s\S]*?CROSS JOIN LATERAL \(\s*SELECT [\s\S]*? FROM (\w+)/.exec(text);
  const each = eachOf(sql.replace(/\(SELECT[^()]*\)/g, "")) ?? eachOf(sql);
  if (each) return each[1]!;
  // A record's finality (store/shared/finality.ts) is a seek of its own in the select list, not the statement's table.
  const own = sql.replace(FINALITY_OF_COLLECTION, "");
  return /\bFROM (\w+)/.exec(own.replace(/\(SELECT[^()]*\)/g, ""))?.[1] ?? /\bFROM (\w+)/.exec(own)![1]!;
}

/** Columns an index condition binds: `((collection_id = $1) AND (ROW(a, b) < ROW(...)))` → collection_id, a, b. */
function boundColumns(cond: string): string[] {
  const cols: string[] = [];
  for (const m of cond.matchAll(/ROW\(([^)]*)\)\s*[<>]=?\s*ROW|"?(\w+)"? (?:=|<=|>=|<|>) /g)) {
    if (m[1] !== undefined) cols.push(...m[1].split(",").map((c) => c.trim().replace(/"/g, "").replace(/^\w+\./, "")));
    else if (m[2] !== undefined) cols.push(m[2]);
  }
  return cols;
}

/**
 * The index columns a condition seeks on: its leading columns while each is
 * bound by equality, then one bounded by a range (a B-tree descends on these;
 * conditions on later columns only filter the entries read).
 */
function seekColumns(columns: string[], cond: string): string[] {
  const bound = boundColumns(cond);
  const out: string[] = [];
  for (const c of columns) {
    if (!bound.includes(c)) break;
    out.push(c);
    const eq = new RegExp(`"?\\b${c}"? = `).test(cond);
    if (!eq) break;
  }
  return out;
}

/**
 * What a statement must bind, as alternatives: the collection (or the
 * address), then its most selective filter: an asset over anything else; for
 * sales the marketplace, and a time bound when no asset or marketplace comes
 * before it; for listings any one of marketplace and status.
 */
function requiredBindings(sql: string, table: string): string[][] {
  if (/FROM collections WHERE chain = \S+ AND address/.test(sql)) return [["chain", "address"]];
  if (/FROM api_keys/.test(sql)) return [["hash"]];
  const has = (col: string) => new RegExp(`\\b${col} = (\\$\\d|ANY)`).test(sql);
  const base = ["collection_id"];
  // A feed's rows above a position: the seek starts at the position.
  if (/feed_seq > \$\d/.test(sql)) return [[...base, "feed_seq"]];
  if (has("asset_id")) return [[...base, "asset_id"]];
  // The tokens list: a trait's tokens, or a wallet's (in every collection, or one).
  if (table === "token_traits") return [[...base, "trait_type", "value"]];
  if (table === "tokens" && has("current_owner")) return [["current_owner"]];
  // The floor's history (floor-history.ts): a page's buckets of one span, the floor before it, its extent.
  if (table === "floor_buckets") return [[...base, "marketplace", "span", "bucket"]];
  if (table === "floor_points") return [[...base, "marketplace"]];
  // A series: one marketplace's (or every one's) intervals of one span.
  if (table === "sales_series") return [[...base, "marketplace", "span", "bucket"]];
  // A floor: each marketplace's price order.
  if (/marketplace = m\.marketplace/.test(sql)) return [[...base, "marketplace"]];
  if (table === "sales_hourly") return has("marketplace") ? [[...base, "marketplace"]] : [base];
  if (table === "sales") {
    if (has("marketplace")) return [[...base, "marketplace"]];
    if (/timestamp [<>]=? \$\d/.test(sql)) return [[...base, "timestamp"]];
    return [base];
  }
  if (table === "listings") {
    const eq = ["marketplace", "status"].filter(has);
    return eq.length === 0 ? [base] : eq.map((c) => [...base, c]);
  }
  return [base];
}
