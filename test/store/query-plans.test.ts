import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WASH_SQL, WASHED, WASHED_FROM } from "../../src/store/sqlite/wash.js";
import { LATEST_POINT_SQL } from "../../src/store/sqlite/prices.js";
import { openReadOnly, openWritable, refreshPlannerStats, type Db } from "../../src/store/sqlite/database.js";
import { WriteStore } from "../../src/store/sqlite/record-writes.js";
import type { ListingsFilter, SalesFilter } from "../../src/store/ports/reads.js";
import { type SqliteRepositories, sqliteRepositories } from "../../src/store/sqlite/read-repositories.js";
import { SalesAggregates, WINDOW_SQL } from "../../src/store/sqlite/sales-stats.js";
import { exerciseAnalytics, exerciseCollectionList, exerciseTokens } from "../support/analytics-reads.js";
import { KEEPER_SQL } from "../../src/store/sqlite/collection-summaries.js";
import { WASH_SUMMARIES } from "../../src/store/shared/collection-summaries.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { kindWrites } from "../../src/store/sqlite/kind-writes.js";
import { LAPSE_DUE, movedFound, SALE_LISTINGS_MOVED, transferListingsJudged } from "../../src/store/sqlite/fillable.js";
import { FLOOR_SQL } from "../../src/store/sqlite/floor-history.js";

// Every query the service can run is served by an index: no table scan, no
// temporary sort, no OFFSET. The queries are collected by exercising every
// read path and filter combination, then explained.

let f: Fixture;
let db: Db;
let store: SqliteRepositories;
/** What keeping the stats aggregates runs (a rebuild runs all of it). */
let aggregateSql: string[];

/** A sale taken back (a reorganisation): the feeds read their removals beside their rows. */
const taken = {
  hash: `0x${"9".repeat(64)}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: `0x${(1).toString(16).padStart(40, "d")}`,
  assetId: "7", timestamp: 1_700_000_000, block: 1, price: "1000", amountReceived: "0", marketplace: "BLUR",
};

beforeAll(async () => {
  f = buildFixture();
  // Several scored collections: with one row a table is cheaper to scan than
  // to search, and the planner (rightly) says so; stores have many.
  const w = openWritable(f.dbPath);
  const ws = new WriteStore(w);
  for (let i = 1; i <= 30; i++) {
    const contractAddress = `0x${i.toString(16).padStart(40, "d")}`;
    ws.upsertCollection({ contractAddress, name: `Other ${i}` });
    ws.upsertScore({ contractAddress, name: `Other ${i}`, hype: 1, gains: 2, community: 3, total: 4 });
  }
  // A collection whose amounts are past 2^95 wei: stats take the exact BigInt path.
  const huge = `0x${"e".repeat(40)}`;
  for (let i = 0; i < 3; i++) {
    ws.upsertSale({
      hash: `0x${String(i).repeat(64)}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: huge,
      assetId: "7", timestamp: 1_700_000_000 + i * 5000, block: 1, price: (2n ** 100n).toString(), amountReceived: "0",
      marketplace: "BLUR",
    });
  }
  ws.upsertSale(taken);
  ws.removeSale(taken);
  // Flagged tokens (one in five listed) and spam collections (one in three of the others), marked and cleared: the floors and the list ask each row's.
  ws.transaction(() => {
    f.listings.filter((_, i) => i % 5 === 0).forEach((l, i) => kindWrites("flags").write(ws, { contractAddress: l.contractAddress, assetId: l.assetId, isFlagged: i % 3 !== 0, reason: "stolen" }));
    for (let i = 1; i <= 30; i += 3) kindWrites("spam").write(ws, { contractAddress: `0x${i.toString(16).padStart(40, "d")}`, isSpam: i % 2 === 1, reason: "" });
  });
  refreshPlannerStats(w);
  const aggregates = new SalesAggregates(w);
  w.exec("BEGIN");
  aggregates.rebuild();
  // A price point written: the sales it prices are found by the series' hours, then each collection's time range.
  aggregates.repriced("ETH", 1_700_000_000 - 60, null, "2000");
  w.exec("ROLLBACK");
  aggregateSql = aggregates.preparedSql();
  w.close();
  db = openReadOnly(f.dbPath);
  store = sqliteRepositories(db);
  const id = store.collections.collectionId(COLLECTION)!;
  const pages = [
    { limit: 5, after: null },
    { limit: 5, after: null },
  ];
  store.assetMetrics.appraisalsPage(id, pages[0]!);
  store.assetMetrics.appraisalsPage(id, { limit: 5, after: ["7"] });
  store.assetMetrics.appraisalsByAsset(id, ["1", "7"]);
  store.assetMetrics.rarityPage(id, pages[0]!);
  store.assetMetrics.rarityPage(id, { limit: 5, after: [3, "14"] });
  store.assetMetrics.rarityByAsset(id, ["1", "7"]);
  const saleFilters: SalesFilter[] = [];
  for (const assetId of [undefined, "7"])
    for (const marketplace of [undefined, "BLUR"])
      for (const since of [undefined, 1])
        for (const until of [undefined, 2]) saleFilters.push({ assetId, marketplace, since, until });
  // Windows whose edges fall inside hours: stats add the raw sales at the edges.
  for (const assetId of [undefined, "7"]) saleFilters.push({ assetId, since: 1_700_000_001, until: 1_700_100_001 });
  // finality=final: the sales at or below the chain's finalized block.
  saleFilters.push({ maxBlock: 100_000_000 }, { marketplace: "BLUR", maxBlock: 100_000_000 });
  store.transfers.transfersPage(id, pages[0]!, 100_000_000);
  for (const filter of saleFilters) {
    store.sales.salesPage(id, filter, pages[0]!);
    store.sales.salesPage(id, filter, { limit: 5, after: [1_700_000_000, 18_000_000, "0x00", "1"] });
    // The same pages as ready rows (domain/wire/fragments.ts), in both forms.
    for (const form of ["json", "binary"] as const) {
      store.sales.salesPage(id, filter, { limit: 2, after: null }, form);
      store.sales.salesPage(id, filter, { limit: 5, after: [1_700_000_000, 18_000_000, "0x00", "1"] }, form);
    }
    store.sales.salesSummary(id, filter);
    store.sales.salesSummary(store.collections.collectionId(`0x${"e".repeat(40)}`)!, filter);
    // In dollars: whole days and hours from the series' dollars, the edges' (and flagged) sales at their points (docs/money.md).
    for (const includeWash of [false, true]) store.sales.salesUsdSummary(id, { ...filter, includeWash }, 1_000_000);
  }
  for (const assetId of [undefined, "7"])
    for (const marketplace of [undefined, "BLUR"])
      for (const status of [undefined, "CREATED" as const]) {
        const filter: ListingsFilter = { assetId, marketplace, status };
        store.listings.listingsPage(id, filter, pages[0]!);
        store.listings.listingsPage(id, filter, { limit: 5, after: [1_700_000_000, "BLUR", "901"] });
        for (const form of ["json", "binary"] as const) {
          store.listings.listingsPage(id, filter, { limit: 2, after: null }, form);
          store.listings.listingsPage(id, filter, { limit: 5, after: [1_700_000_000, "BLUR", "901"] }, form);
        }
      }
  store.social.topInfluencers(id, 5);
  store.social.topTweets(id, 5);
  for (const form of ["json", "binary"] as const) {
    store.social.topInfluencers(id, 5, form);
    store.social.topTweets(id, 5, form);
  }
  store.collections.score(id);
  // The live feeds: a collection's rows above a position, and its last position.
  store.feed.epoch();
  for (const kind of ["sales", "listings"] as const) store.feed.head(kind, id);
  store.feed.sales(id, 3, 50);
  store.feed.transfers(id, 3, 50);
  store.feed.merged("sales", [id, store.collections.collectionId(taken.contractAddress)!], 3, 50);
  // The records taken back by time (the activity list's includeRemoved), from the start and after a key.
  const takenId = store.collections.collectionId(taken.contractAddress)!;
  store.removals.removalsPage(takenId, ["sales", "transfers", "listings", "offers"], { limit: 5, after: null });
  store.removals.removalsPage(takenId, ["sales", "transfers", "listings", "offers"], { limit: 5, after: [1_700_000_000, 1, 9] });
  store.feed.listings(id, 3, 50);
  store.feed.tokens(id, 3, 50);
  store.feed.merged("tokens", [id, id + 1], 3, 50);
  await exerciseAnalytics(store, id);
  await exerciseTokens(store, id);
  await exerciseCollectionList(store, id);
});
afterAll(() => {
  db.close();
  f.cleanup();
});

/** A trait's tokens by latest move: sorted, no index holds that order per trait (docs/decisions.md, "Tokens"). */
const TRAIT_BY_MOVE = /FROM token_traits tt [\s\S]*ORDER BY coalesce\(t\.owner_block/;

function plan(sql: string): string[] {
  const named = [...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!);
  const params = named.length > 0 ? [Object.fromEntries(named.map((n) => [n, 1]))] : Array((sql.match(/\?/g) ?? []).length).fill(1);
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
}

describe("query plans", () => {
  it("wash flags are evaluated by seeks of the time and asset indexes, in index order, and includeWash reads the flagged sales alone", () => {
    // The RUN_MARGIN-th sale in wei before and after the marks: a seek of the time index, each sale's currency read from its row.
    expect(plan(WASH_SQL.before)).toEqual(["SEARCH sales USING INDEX sales_by_time (collection_id=? AND timestamp<?)"]);
    expect(plan(WASH_SQL.after)).toEqual(["SEARCH sales USING INDEX sales_by_time (collection_id=? AND timestamp>?)"]);
    // The run and a token's sales in the rules' order: the list indexes read backwards, no sort.
    expect(plan(WASH_SQL.span)).toEqual(["SEARCH sales USING INDEX sales_by_time (collection_id=? AND timestamp>? AND timestamp<?)"]);
    expect(plan(WASH_SQL.token)).toEqual(["SEARCH sales USING INDEX sales_by_asset (collection_id=? AND asset_key=? AND timestamp>? AND timestamp<?)"]);
    // A token whose marks are all new sales: its sales from a time on, and a sale of the window its buyer sold, from the index alone (migration 35).
    expect(plan(WASH_SQL.heldFrom)).toEqual(["SEARCH sales USING COVERING INDEX sales_by_asset (collection_id=? AND asset_key=? AND timestamp>?)"]);
    expect(plan(WASH_SQL.soldBy)).toEqual(["SEARCH sales USING COVERING INDEX sales_by_asset (collection_id=? AND asset_key=? AND timestamp>? AND timestamp<?)"]);
    // Both questions of a token with one new sale: one range of the index from its window on.
    expect(plan(WASH_SQL.notAlone)).toEqual(["SEARCH sales USING COVERING INDEX sales_by_asset (collection_id=? AND asset_key=? AND timestamp>?)"]);
    // What includeWash adds: the window's flagged sales, from the partial index of them.
    expect(plan(`SELECT marketplace, price FROM ${WASHED_FROM} WHERE ${WASHED}`)).toEqual(["SEARCH sales USING INDEX sales_washed (collection_id=? AND timestamp>? AND timestamp<?)"]);
  });

  it("exercised every read path", () => {
    expect(store.preparedSql().length).toBeGreaterThan(60);
  });

  it("no query scans a table, sorts in a temporary b-tree, or uses OFFSET", () => {
    const problems: string[] = [];
    for (const sql of store.preparedSql()) {
      // A stats window's one statement is tested on its own below.
      if (sql === WINDOW_SQL) continue;
      // The slow exact-sum path reads the same index range as the fast one.
      const details = plan(sql);
      // Rows of one asset (at most 20 ids, or one asset's listings) may be
      // sorted: their number does not grow with the collection.
      // So may a wallet's tokens of a collection (current_owner = ?), and
      // a trait's tokens by latest move (no index holds that order per
      // trait: docs/decisions.md, "Tokens").
      // So may a stats bound's edge, grouped by marketplace: the shorter part of one hour of one collection's sales.
      const boundedByAsset = /asset_key = \?|json_each|current_owner = \?/.test(sql) || TRAIT_BY_MOVE.test(sql) || STATS_EDGE.test(sql);
      for (const d of details) {
        // A subquery's rows and a constant row are no table.
        const tableScan = /^SCAN /.test(d) && !/USING (COVERING )?INDEX|VIRTUAL TABLE|CONSTANT ROW|^SCAN \(subquery-\d+\)$/.test(d);
        // A feed's page merges its parts' pages (rows, removals; several collections'), each at most LIMIT rows.
        const feedPage = /^SELECT \* FROM \(SELECT (a|t)\.feed_seq/.test(sql) && /ORDER BY feed_seq LIMIT \?$/.test(sql);
        const sort = /TEMP B-TREE/.test(d) && !boundedByAsset && !feedPage;
        if (tableScan || sort) problems.push(`${d}\n  in: ${sql.replace(/\s+/g, " ")}`);
      }
      if (/\bOFFSET\b/i.test(sql)) problems.push(`OFFSET in ${sql}`);
    }
    expect(problems).toEqual([]);
  });

  it("stats read only index seeks: running totals by hour, raw edges and one asset's range, never the sales of the window", () => {
    const statsSql = store.preparedSql().filter((sql) => sql !== WINDOW_SQL && /stats_hours|sales_hourly|count\(price_hi\)|SELECT (marketplace, )?price FROM/.test(sql));
    // every marketplace's running totals, edge sums and their exact fallback, asset sums (4 window shapes) and theirs
    expect(statsSql.length).toBeGreaterThanOrEqual(1 + 2 + 2 * 3);
    const problems: string[] = [];
    for (const sql of statsSql) {
      for (const d of plan(sql)) {
        // Grouping one asset's sales, or a bound's edge, by marketplace sorts those rows only.
        if (/^SEARCH /.test(d) || (/USE TEMP B-TREE FOR GROUP BY/.test(d) && (/asset_key = \?/.test(sql) || STATS_EDGE.test(sql)))) continue;
        problems.push(`${d}\n  in: ${sql.replace(/\s+/g, " ")}`);
      }
    }
    expect(problems).toEqual([]);
    // A bound is one seek of every marketplace's running totals by hour, and its edge one range of the collection's sales by time.
    const running = statsSql.find((sql) => /FROM stats_hours WHERE collection_id = \? AND hour <= \?/.test(sql))!;
    expect(plan(running)).toEqual(["SEARCH stats_hours USING PRIMARY KEY (collection_id=? AND hour<?)"]);
    const edge = statsSql.find((sql) => STATS_EDGE.test(sql) && /count\(price_hi\)/.test(sql))!;
    expect(plan(edge).join(" | ")).toMatch(/^SEARCH sales USING INDEX sales_by_time \(collection_id=\? AND timestamp>\? AND timestamp<\?\)/);
  });

  it("a window's stats are one statement: three seeks of every marketplace's running totals and two ranges of the collection's sales by time", () => {
    expect(store.preparedSql()).toContain(WINDOW_SQL);
    const details = plan(WINDOW_SQL);
    // Nothing is scanned but constant rows (the running totals' parts); only an edge's rows are grouped.
    expect(details.filter((d) => /^SCAN /.test(d))).toEqual(Array(3).fill("SCAN CONSTANT ROW"));
    expect(details.filter((d) => /TEMP B-TREE/.test(d))).toEqual(Array(2).fill("USE TEMP B-TREE FOR GROUP BY"));
    expect(details.filter((d) => /^SEARCH /.test(d))).toEqual([
      "SEARCH stats_hours USING PRIMARY KEY (collection_id=? AND hour<?)",
      "SEARCH stats_hours USING PRIMARY KEY (collection_id=? AND hour<?)",
      "SEARCH sales USING INDEX sales_by_time (collection_id=? AND timestamp>? AND timestamp<?)",
      "SEARCH stats_hours USING PRIMARY KEY (collection_id=? AND hour<?)",
      "SEARCH sales USING INDEX sales_by_time (collection_id=? AND timestamp>? AND timestamp<?)",
    ]);
  });

  it("keeping the aggregates seeks too: a write costs its hours, not the collection's sales", () => {
    const problems: string[] = [];
    for (const sql of aggregateSql) {
      // A rebuild of every collection reads all of them, by design.
      // An insert by primary key searches nothing.
      if (/^INSERT /.test(sql.trim())) continue;
      if (/^SELECT (DISTINCT collection_id, marketplace FROM sales_hourly|id FROM collections|collection_id, marketplace, span, bucket FROM sales_series)\s*$/.test(sql.trim())) continue;
      // So does a rebuild of every collection's running totals, and the check that the store has them.
      if (/^SELECT collection_id FROM stats_hours UNION SELECT collection_id FROM sales_hourly$|FROM sqlite_master|FROM pragma_table_info/.test(sql.trim())) continue;
      const bound = boundColumns(mainSearch(sql));
      const need = requiredBindings(sql);
      if (!need.some((cols) => cols.every((c) => bound.includes(c)))) problems.push(`binds [${bound}] needs ${JSON.stringify(need)} in ${sql.replace(/\s+/g, " ")}`);
      for (const d of plan(sql)) if (/^SCAN |TEMP B-TREE/.test(d)) problems.push(`${d}\n  in: ${sql.replace(/\s+/g, " ")}`);
    }
    expect(aggregateSql.length).toBeGreaterThanOrEqual(6);
    expect(problems).toEqual([]);
  });

  it("a sale's price point in force is one seek of the points' key, bound on its token and the day before the sale (docs/money.md)", () => {
    const reads = store.preparedSql().filter((sql) => sql.includes("FROM price_points p"));
    // The feeds' sales and removals, a token's last sale.
    expect(reads.length).toBeGreaterThanOrEqual(3);
    // The sales list (rows and kept JSON) seeks a token's latest point per point its page meets (sqlite/prices.ts PointsInForce).
    expect(store.preparedSql()).toContain(LATEST_POINT_SQL);
    expect(plan(LATEST_POINT_SQL)).toEqual(["SEARCH price_points USING PRIMARY KEY (currency=? AND minute<?)"]);
    for (const sql of reads) {
      // One per table the statement reads sales from (a feed reads its sales and their removals).
      const seeks = plan(sql).filter((d) => /^SEARCH p /.test(d));
      expect(seeks.length, sql).toBeGreaterThan(0);
      for (const s of seeks) expect(s, sql).toBe("SEARCH p USING PRIMARY KEY (currency=? AND minute>? AND minute<?)");
      expect(plan(sql).filter((d) => /^SCAN p\b/.test(d)), sql).toEqual([]);
    }
  });

  it("pages after a token seek to the token's position in the index", () => {
    const keyset = store.preparedSql().filter((sql) => /asset_key > \?|asset_key\) > \(|timestamp <= \? AND \(|created_at <= \? AND \(/.test(sql));
    expect(keyset.length).toBeGreaterThanOrEqual(2 + 16 + 8);
    for (const sql of keyset.filter((q) => !TRAIT_BY_MOVE.test(q))) {
      expect(plan(sql).join(" | "), sql).toMatch(/SEARCH \w+ USING .*(asset_key>|\((rarity_rank|ask_key|collection_id),asset_key\)>|timestamp<|created_at<|<expr><)/);
    }
  });

  it("every query seeks on the columns of its most selective filters, not just some index", () => {
    const problems: string[] = [];
    for (const sql of store.preparedSql()) {
      if (sql === WINDOW_SQL) continue; // each of its parts is checked on its own below
      const search = mainSearch(sql);
      const bound = boundColumns(search);
      const ok = requiredBindings(sql).some((need) => need.every((c) => bound.includes(c)));
      if (!ok) problems.push(`${search}\n  binds [${bound.join(", ")}], needs one of ${JSON.stringify(requiredBindings(sql))}\n  in: ${sql.replace(/\s+/g, " ")}`);
    }
    expect(problems).toEqual([]);
  });

  it("a trait value's floor is one seek of its asks, and its tokens by price or rarity one range of its own index", () => {
    const traits = store.preparedSql().find((sql) => /FROM trait_values/.test(sql))!;
    expect(plan(traits).join(" | ")).toMatch(/SEARCH tt USING COVERING INDEX token_traits_by_ask \(collection_id=\? AND trait_type=\? AND value=\? AND ask_key<\?\)/);
    for (const [order, index] of [["tt.ask_key", "token_traits_by_ask"], ["tt.rarity_rank", "token_traits_by_rank"]]) {
      const pages = store.preparedSql().filter((sql) => /FROM token_traits tt/.test(sql) && !/FROM trait_values/.test(sql) && sql.includes(`ORDER BY ${order}`));
      expect(pages.length).toBe(2);
      for (const sql of pages) {
        const detail = plan(sql).join(" | ");
        expect(detail).toMatch(new RegExp(`SEARCH tt USING COVERING INDEX ${index} \\(collection_id=\\? AND trait_type=\\? AND value=\\?`));
        expect(detail).not.toMatch(/TEMP B-TREE/);
      }
    }
  });

  it("the collections list is one range of its order's index, seeking the page key; keeping a summary is seeks", () => {
    const pages = store.preparedSql().filter((sql) => /FROM collection_summaries(_with_wash)? s/.test(sql));
    expect(pages.length).toBe(54);
    for (const sql of pages) {
      const column = /ORDER BY s\.(\w+)_key, s\.address/.exec(sql)![1]!;
      const detail = plan(sql).join(" | ");
      const index = `${/FROM (\w+) s/.exec(sql)![1]}_by_${column}`;
      expect(detail, sql).toMatch(/\(s\.\w+_key, s\.address\) > / .test(sql) ? new RegExp(`SEARCH s USING INDEX ${index} \\(\\(${column}_key,address\\)>\\(\\?,\\?\\)\\)`) : new RegExp(`SCAN s USING INDEX ${index}`));
      expect(detail).not.toMatch(/TEMP B-TREE/);
    }
    // The writer's statements (collection-summaries.ts SummaryKeeper).
    expect(plan(KEEPER_SQL.hours).join(" | ")).toMatch(/SEARCH sales_series USING PRIMARY KEY \(collection_id=\? AND marketplace=\? AND span=\? AND bucket>\?\)/);
    expect(plan(KEEPER_SQL.floor(true)).join(" | ")).toMatch(/SEARCH listings USING INDEX listings_open_floor \(collection_id=\?\)/);
    expect(plan(KEEPER_SQL.floor(true)).join(" | ")).not.toMatch(/TEMP B-TREE/);
    // A listing's token's flag (flags.ts): one seek of its key, both columns bound.
    expect(plan(KEEPER_SQL.floor(true)).join(" | ")).toMatch(/SEARCH x USING PRIMARY KEY \(collection_id=\? AND asset_key=\?\)/);
    expect(plan(KEEPER_SQL.rolling(WASH_SUMMARIES)).join(" | ")).toMatch(/SEARCH collection_summaries_with_wash USING COVERING INDEX collection_summaries_with_wash_rolling \(sales_30d>\?\)/);
    // The flagged sales of a collection's 30 days, for its summary with wash: the partial index's range.
    expect(plan(KEEPER_SQL.flaggedSums).join(" | ")).toMatch(/SEARCH sales USING COVERING INDEX sales_washed \(collection_id=\? AND timestamp>\?\)/);
    expect(plan(KEEPER_SQL.flagged).join(" | ")).toMatch(/SEARCH sales USING INDEX sales_washed \(collection_id=\? AND timestamp>\?\)/);
  });

  it("a token's owners are one range of token_balances_by_balance (token and page key bound), or its one owner by the token's key", () => {
    const pages = store.preparedSql().filter((sql) => /FROM token_balances INDEXED BY token_balances_by_balance/.test(sql));
    expect(pages).toHaveLength(2);
    for (const sql of pages) {
      const detail = plan(sql).join(" | ");
      const range = /balance <= \?/.test(sql) ? "\\(collection_id=\\? AND asset_key=\\? AND balance>\\? AND balance<\\?\\)" : "\\(collection_id=\\? AND asset_key=\\? AND balance>\\?\\)";
      expect(detail, sql).toMatch(new RegExp(`SEARCH token_balances USING COVERING INDEX token_balances_by_balance (${range})`));
      expect(detail, sql).toMatch(/SEARCH tokens USING (PRIMARY KEY|INDEX \w+) \(collection_id=\? AND asset_key=\?\)/);
      // The balances' branch reads in the index's order: only the at most 2 x limit rows of the branches are sorted.
      expect(detail.split(" | ").filter((d) => /TEMP B-TREE/.test(d))).toEqual(["USE TEMP B-TREE FOR ORDER BY"]);
    }
  });

  it("listings coming due are one range of listings_due by expiry; a listing's end by ownership seeks its token's transfers and sales", () => {
    expect(plan(LAPSE_DUE)).toEqual(["SEARCH listings USING INDEX listings_due (expires_at>? AND expires_at<?)"]);
    // The owner at creation (listing-orders.ts ownerAtCreation): the token's latest transfer by its key, its sales up to the second by the asset index.
    for (const sql of [movedFound("id = ?", true), SALE_LISTINGS_MOVED[1]!]) {
      const detail = plan(sql);
      expect(detail, sql).toContain("SEARCH t USING PRIMARY KEY (collection_id=? AND asset_key=?)");
      expect(detail, sql).toContain("SEARCH s USING INDEX sales_by_asset (collection_id=? AND asset_key=? AND timestamp<?)");
      expect(detail.filter((d) => /^SCAN (t|s|x|listings|sales|transfers)\b/.test(d)), sql).toEqual([]);
      // The first move after the creation: the token's sales from then on, and its transfers by its key (not the collection's by time).
      expect(detail, sql).toContain("SEARCH sales USING COVERING INDEX sales_by_asset (collection_id=? AND asset_key=? AND timestamp>?)");
      expect(detail, sql).toContain("SEARCH transfers USING PRIMARY KEY (collection_id=? AND asset_key=?)");
      expect(detail.filter((d) => /transfers_by_time/.test(d)), sql).toEqual([]);
    }
    // A sale's listings made at or after it by a maker: the token's listings from that second on.
    expect(plan(SALE_LISTINGS_MOVED[1]!)[0]).toBe("SEARCH listings USING INDEX listings_by_asset (collection_id=? AND asset_key=? AND created_at>?)");
    // An ERC-1155 listing's end (listing-orders.ts endOfBalance): its collection's standard by its key, its maker's transfers
    // of the token from the token's range of the transfers' key (each twice: the update's SET and WHERE read the end).
    const balance = plan(movedFound("id = ?", true, true));
    expect(balance.filter((d) => d.startsWith("SEARCH collections")), balance.join("\n")).toEqual(Array(2).fill("SEARCH collections USING INTEGER PRIMARY KEY (rowid=?)"));
    expect(balance.filter((d) => d === "SEARCH x USING PRIMARY KEY (collection_id=? AND asset_key=?)"), balance.join("\n")).toHaveLength(2);
    expect(balance.filter((d) => /^SCAN (t|s|x|listings|sales|transfers|collections)\b/.test(d)), balance.join("\n")).toEqual([]);
    // A transfer's: the same, from the second of its transaction's sale when that came first (the sale by its natural key).
    const judged = plan(transferListingsJudged(() => "?", true));
    expect(judged[0]).toBe("SEARCH listings USING INDEX listings_by_asset (collection_id=? AND asset_key=? AND created_at>?)");
    expect(judged).toContain("SEARCH sales USING INDEX sales_natural_key (hash=? AND collection_id=? AND asset_key=?)");
  });

  it("keeping the floor's history seeks: the spans over a range by their end, a span by its key, a flagged token's spans by its listings", () => {
    for (const m of ["", "BLUR"]) {
      const detail = plan(FLOOR_SQL.spans(m));
      expect(detail[0], m).toBe("SEARCH s USING INDEX listing_spans_by_end (collection_id=? AND active_until>?)");
      expect(detail, m).toContain("SEARCH l USING INTEGER PRIMARY KEY (rowid=?)");
    }
    expect(plan(FLOOR_SQL.present)[0]).toBe("SEARCH s USING PRIMARY KEY (listing_id=? AND active_from=?)");
    const flagged = plan(FLOOR_SQL.flagSpans("-1", "?"));
    expect(flagged[0]).toBe("SEARCH l USING COVERING INDEX listings_by_asset (collection_id=? AND asset_key=?)");
    expect(flagged[1]).toBe("SEARCH s USING PRIMARY KEY (listing_id=?)");
  });

  it("reads the binding rules right (the rule itself can fail)", () => {
    const stats = "SELECT count(*) FROM sales WHERE collection_id = ? AND asset_key = ? AND marketplace = ?";
    expect(requiredBindings(stats)).toEqual([["collection_id", "asset_key"]]);
    // The plan this test exists to catch: stats for an asset seeking the marketplace only.
    expect(boundColumns("SEARCH sales USING COVERING INDEX sales_by_marketplace (collection_id=? AND marketplace=?)")).toEqual([
      "collection_id",
      "marketplace",
    ]);
    // A marketplace's listings of one status: both bound (migration 16's index), not the marketplace alone.
    expect(requiredBindings("SELECT x FROM listings l WHERE l.collection_id = ? AND l.marketplace = ? AND l.status = ?")).toEqual([
      ["collection_id", "marketplace", "status"],
    ]);
    expect(requiredBindings("SELECT x FROM listings l WHERE l.collection_id = ? AND l.asset_key = ? AND l.status = ?")).toEqual([
      ["collection_id", "asset_key"],
    ]);
  });
});

/** A stats bound's edge: every marketplace's sales in the shorter part of one hour (sales-stats.ts). */
const STATS_EDGE = /FROM sales INDEXED BY sales_by_time WHERE collection_id = \? AND timestamp >= \? AND timestamp <= \? AND wash_flags = 0( GROUP BY marketplace)?$/;

/** The plan line of the query's main table (the one the FROM names first). */
/** A row's finality's seek of its chain's finalized block (store/shared/finality.ts). */
const FINALITY_OF_ROW = /\(SELECT f\.block FROM finality f WHERE f\.chain = [\w.]+\)|\(SELECT coalesce\(max\(f\.block\), -1\) FROM collections x JOIN finality f ON f\.chain = x\.chain WHERE x\.id = \?\)/g;

/** A sale's price point in force, sought beside it (store/shared/prices.ts usdPointSql). */
const USD_POINT = /\(SELECT p\.usd FROM price_points p WHERE [\s\S]*? LIMIT 1\)/g;

function mainSearch(sql: string): string {
  // A list of ids drives the loop (json_each CROSS JOIN table): the table is the one joined.
  // The tokens list: its table comes after the latest sale's and listing's subqueries.
  // A record's finality (store/shared/finality.ts) is a seek of its own in the select list, not the statement's table.
  // So is a sale's price point in force (store/shared/prices.ts), checked on its own below.
  const stripped = sql.replace(FINALITY_OF_ROW, "").replace(USD_POINT, "");
  // A page's finalized block read on its own (sqlite/sales.ts): its collection by key.
  const main = /\bFROM\b/.test(stripped) ? stripped : sql;
  const m =
    /FROM json_each\(\?\) \w+ CROSS JOIN (\w+) (\w)\b/.exec(main) ??
    /AS l_status\s+FROM (\w+) (\w+)\b/.exec(main) ??
    /(?:FROM|INTO|UPDATE) (\w+)(?: (\w)\b)?/.exec(main)!;
  const alias = m[2] && m[2] !== "W" && m[2] !== "INDEXED" ? m[2] : m[1]!;
  return plan(sql).find((d) => new RegExp(`^SEARCH ${alias} `).test(d)) ?? `(no SEARCH of ${alias})`;
}

/** Columns the index seek binds: `(collection_id=? AND asset_key>?)` → collection_id, asset_key. */
function boundColumns(detail: string): string[] {
  const inner = /\((.*)\)\s*$/.exec(detail)?.[1];
  if (!inner) return [];
  // scores.collection_id and collection_holdings.collection_id are the rowid (INTEGER PRIMARY KEY).
  const rowidOf = /^SEARCH (s|collection_holdings) USING INTEGER PRIMARY KEY/.test(detail) ? "collection_id" : "rowid";
  return inner.split(" AND ").map((t) => t.replace(/^\(/, "").replace(/[=<>].*$/, "").split(",")[0]!.replace(/^rowid$/, rowidOf));
}

/**
 * What a query must bind, as alternatives: the collection (or the
 * collection address), then the most selective filter it has: an asset (by
 * id or list) over anything else; for sales the marketplace, and a time
 * window's bound when no asset or marketplace is bound before it; for
 * listings any one of marketplace and status.
 */
function requiredBindings(sql: string): string[][] {
  if (/FROM collections WHERE chain = \S+ AND address/.test(sql)) return [["chain", "address"]];
  // The collections list: every collection in an order; a page after a key seeks it (tested on its own above).
  if (/FROM collection_summaries(_with_wash)? s/.test(sql)) return /\(s\.\w+, s\.address\) > \(/.test(sql) ? [[/ORDER BY s\.(\w+),/.exec(sql)![1]!]] : [[]];
  if (/FROM store_state WHERE id = 1/.test(sql)) return [["rowid"]];
  // A collection's chain's finalized block: the collection by its key (sqlite/sales.ts).
  if (/^SELECT \(SELECT coalesce\(max\(f\.block\), -1\) FROM collections x/.test(sql)) return [["rowid"]];
  // A ready page's key, read for its last row alone: that row by its rowid (sqlite/sales.ts, a ready page).
  if (/FROM (sales|listings) WHERE id = \?$/.test(sql)) return [["rowid"]];
  // A page's price points, found as its sales are read newest first (sqlite/prices.ts PointsInForce): a token's latest at or before a time.
  if (sql === LATEST_POINT_SQL) return [["currency", "minute"]];
  // A price point's neighbours (sqlite/sales-series.ts repriced): the next and the previous of its token.
  if (/^SELECT (minute|minute, usd) FROM price_points WHERE currency = \? AND minute [<>] \?/.test(sql)) return [["currency", "minute"]];
  // A collection's marketplaces in its series (stats in dollars): a loose index scan, one seek per marketplace.
  if (/^SELECT marketplace FROM sales_series WHERE collection_id = \? AND marketplace > \?/.test(sql)) return [["collection_id", "marketplace"]];
  // The collections with sales in a point's hours: the every-marketplace hours by time.
  if (/sales_series INDEXED BY sales_series_by_hour/.test(sql)) return [["span", "bucket"]];
  // A feed's rows above a position: the seek starts at the position, whatever the collection holds below it.
  if (/feed_seq > \?/.test(sql)) return [["collection_id", "feed_seq"]];
  const has = (col: string) => new RegExp(`\\b${col} = \\?`).test(sql);
  const base = ["collection_id"];
  const window = /timestamp >= \?|timestamp <= \?|timestamp < \?/.test(sql);
  if (has("asset_key") || /json_each/.test(sql)) return [[...base, "asset_key"]];
  // The tokens list: a trait's tokens, or a wallet's (in every collection, or one).
  // The traits: a collection's values, each one's floor a seek (tested on its own above).
  if (/FROM trait_values/.test(sql)) return [base];
  if (/FROM token_traits tt (INDEXED|JOIN)/.test(sql)) return [[...base, "trait_type", "value"]];
  if (has("current_owner")) return [["current_owner"]];
  // The floor's history (floor-history.ts): a page's buckets of one span, the floor before it, its extent.
  if (/FROM floor_buckets/.test(sql)) return [[...base, "marketplace", "span", "bucket"]];
  if (/FROM floor_points/.test(sql)) return /\bt < \?/.test(sql) ? [[...base, "marketplace", "t"]] : [[...base, "marketplace"]];
  // A series: one marketplace's (or every one's) intervals of one span.
  if (/FROM sales_series/.test(sql)) return [[...base, "marketplace", "span", "bucket"]];
  // A floor: one marketplace's price order; the marketplaces, one seek each.
  if (/FROM (listings f INDEXED BY listings_open_by_price|listing_spans)/.test(sql)) return [[...base, "marketplace"]];
  if (/FROM sales_hourly/.test(sql)) {
    if (/hour <= \?|hour >= \?|hour = \?/.test(sql)) return [[...base, "marketplace", "hour"]];
    if (has("marketplace") || /marketplace > \?/.test(sql)) return [[...base, "marketplace"]];
    return [base];
  }
  if (/FROM sales/.test(sql)) {
    // Stats edges and hours: one marketplace's time range.
    if (has("marketplace") && window && /count\(|SELECT (timestamp|price) FROM/.test(sql)) return [[...base, "marketplace", "timestamp"]];
    if (has("marketplace") || /marketplace > \?/.test(sql)) return [[...base, "marketplace"]];
    if (window) return [[...base, "timestamp"]];
    return [base];
  }
  if (/FROM listings/.test(sql)) {
    const eq = ["marketplace", "status"].filter(has);
    // A marketplace and a status (no asset): one index binds both.
    if (eq.length === 2 && !has("asset_key")) return [[...base, ...eq]];
    return eq.length === 0 ? [base] : eq.map((c) => [...base, c]);
  }
  return [base];
}
