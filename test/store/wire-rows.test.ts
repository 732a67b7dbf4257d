import Database from "better-sqlite3";
import pg from "pg";
import { type DescMessage, equals, fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InfluencerSchema, ListingSchema, SaleSchema, TweetSchema } from "../../gen/marketdata/v1/resources_pb.js";
import {
  type Fragment,
  influencerFragment,
  listingFragment,
  saleFragment,
  tweetFragment,
  type WireForm,
} from "../../src/domain/wire/fragments.js";
import { openReadRepositories } from "../../src/store/open.js";
import type { Page, PageRequest } from "../../src/store/ports/paging.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import { backfillPgWireRows } from "../../src/store/postgres/wire-rows.js";
import { backfillWireRows } from "../../src/store/sqlite/wire-rows.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importRecords } from "../support/engine.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";
import { Random } from "../../src/demo/random.js";

// List rows keep their ready answers (domain/wire/fragments.ts), on both
// engines: a page read as fragments is the page read as columns
// and encoded whole, in both forms, after the writes that move a row's
// answer without its record (a sale ending a listing, a user's new
// profile); rows with no fragments (written before they were kept) are
// answered whole, and the migration's backfill gives them theirs.

const C = "0x7777777777777777777777777777777777777777";
const FORMS: WireForm[] = ["json", "binary"];

const user = (followers: number) => ({
  id: "3001",
  screenName: 'ape "x"',
  profileImageUrl: "https://pbs.twimg.com/a.png",
  description: 'gm\n"user":null 🦍',
  name: "Ape",
  location: "",
  followersCount: followers,
  verified: false,
  statusesCount: 5,
  favouritesCount: 1,
  protected: false,
});

const tweet = (n: number): Record<string, unknown> => ({
  contractAddress: C,
  id: String(1_600_000_000_000_000_000n + BigInt(n)),
  user: user(10),
  source: "<a>web</a>",
  text: `floor ${n} "status":"CREATED"}\n`,
  retweetCount: n,
  favoriteCount: 1,
  possiblySensitive: false,
  lang: "en",
  retweetedStatus: n === 2 ? { ...tweetBody(9), retweetedStatus: null } : null,
  createdAt: "Wed Oct 10 20:19:24 +0000 2018",
  date: "2018-10-10T20:19:24.000+00:00",
  originalId: "1",
  originalText: "",
  originalTweet: true,
  interaction: n + 1,
});
const tweetBody = (n: number): Record<string, unknown> => {
  const { contractAddress: _, ...rest } = tweet(n);
  return rest;
};

type EngineName = "SQLite" | "PostgreSQL";
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-wire-rows-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engines: [EngineName, () => Promise<{ target: string; drop(): Promise<void> }>, boolean][] = [
  ["SQLite", async () => ({ target: join(dir, `store-${Math.random()}.sqlite`), drop: async () => {} }), false],
  ["PostgreSQL", async () => {
    const db = await createTestDatabase();
    return { target: db.url, drop: db.drop };
  }, skipPg],
];

async function fill(target: string): Promise<void> {
  // Listings first: the sales after them end those of the tokens they sell (fillable.ts).
  await importRecords(target, "listings", [5, 6, 7, 8].flatMap((asset) => [0, 1].map((k) => ({
    marketplaceId: String(asset * 10 + k),
    marketplace: k === 0 ? "OPENSEA" : "BLUR",
    contractAddress: C,
    assetId: String(asset),
    createdAt: 1_699_000_000 + asset,
    lastUpdatedAt: 1_699_000_000 + asset,
    price: "1000",
    currency: "ETH",
    status: "CREATED",
  }))));
  await importRecords(target, "sales", Array.from({ length: 30 }, (_, i) => numberedSale(i + 1, C)));
  await importRecords(target, "influencers", [{ contractAddress: C, user: user(10), score: 1.5 }]);
  await importRecords(target, "tweets", [1, 2, 3].map(tweet));
  // The user's new profile, written by another record: every tweet and influencer naming them answers it.
  await importRecords(target, "influencers", [{ contractAddress: C, user: user(99), score: 1.5 }]);
}

/** Two fragments say the same: JSON byte for byte, binary as the messages they decode to. */
function same(schema: DescMessage, form: WireForm, a: Fragment[], b: Fragment[]): void {
  if (form === "json") expect(a).toEqual(b);
  else {
    expect(a.length).toBe(b.length);
    a.forEach((x, i) => expect(equals(schema, fromBinary(schema, x as Uint8Array), fromBinary(schema, b[i] as Uint8Array))).toBe(true));
  }
}

/** Every page of a keyset list, walked with its keys. */
async function walk<T>(read: (page: PageRequest) => Promise<Page<T>> | Page<T>): Promise<Page<T>[]> {
  const pages: Page<T>[] = [];
  let after: PageRequest["after"] = null;
  do {
    const page = await read({ limit: 7, after });
    pages.push(page);
    after = page.nextKey;
  } while (after !== null);
  return pages;
}

async function expectReadsAgree(repos: ReadRepositories): Promise<void> {
  const id = (await repos.collections.collectionId(C))!;
  for (const form of FORMS) {
    for (const filter of [{}, { marketplace: "BLUR" }, { assetId: "5" }]) {
      const wire = await walk((p) => repos.sales.salesPage(id, filter, p, form));
      const whole = await walk((p) => repos.sales.salesPage(id, filter, p));
      expect(wire.map((p) => p.nextKey)).toEqual(whole.map((p) => p.nextKey));
      same(SaleSchema, form, wire.flatMap((p) => p.rows), whole.flatMap((p) => p.rows.map((r) => saleFragment(r, form))));
    }
    for (const filter of [{}, { status: "CREATED" as const }, { assetId: "6" }]) {
      const wire = await walk((p) => repos.listings.listingsPage(id, filter, p, form));
      const whole = await walk((p) => repos.listings.listingsPage(id, filter, p));
      expect(wire.map((p) => p.nextKey)).toEqual(whole.map((p) => p.nextKey));
      same(ListingSchema, form, wire.flatMap((p) => p.rows), whole.flatMap((p) => p.rows.map((r) => listingFragment(r, form))));
    }
    same(TweetSchema, form, await repos.social.topTweets(id, 10, form), (await repos.social.topTweets(id, 10)).map((r) => tweetFragment(r, form)));
    same(InfluencerSchema, form, await repos.social.topInfluencers(id, 10, form),
      (await repos.social.topInfluencers(id, 10)).map((r) => influencerFragment(r, form)));
  }
  // What the reads above compared includes the moved answers.
  const listings = await repos.listings.listingsPage(id, { assetId: "5" }, { limit: 10, after: null });
  expect(listings.rows.map((r) => r.status)).not.toContain("CREATED");
  const tweets = (await repos.social.topTweets(id, 10, "json")) as string[];
  expect(tweets.every((t) => t.includes('"followersCount":99'))).toBe(true);
}

/** Runs SQL on the store under test (its own engine's). */
async function onStore(engine: EngineName, target: string, sql: string): Promise<void> {
  if (engine === "SQLite") {
    const db = new Database(target);
    db.exec(sql);
    db.close();
  } else {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    await client.query(sql);
    await client.end();
  }
}

async function withRepos(target: string, use: (repos: ReadRepositories) => Promise<void>): Promise<void> {
  const repos = await openReadRepositories(target);
  try {
    await use(repos);
  } finally {
    await repos.close();
  }
}

describe.each(engines)("ready answers of list rows on %s", (engine, open, skip) => {
  let target: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    if (skip) return;
    ({ target, drop } = await open());
    await fill(target);
  });
  afterAll(async () => {
    if (!skip) await drop();
  });

  it.skipIf(skip)("a page of ready answers is the page read as columns and encoded whole, after sales end listings and a user's profile changes", async () => {
    await withRepos(target, expectReadsAgree);
  });

  it.skipIf(skip)("a sale's ready JSON is the answer of its columns byte for byte, for ids, amounts, times and hashes of every length and case", async () => {
    const D = "0x5a1e5a1e5a1e5a1e5a1e5a1e5a1e5a1e5a1e5a1e";
    const rnd = new Random(50);
    const digits = (n: number) => (n === 1 ? String(rnd.int(0, 9)) : `${rnd.int(1, 9)}${Array.from({ length: n - 1 }, () => rnd.int(0, 9)).join("")}`);
    const hex = (n: number) => Array.from({ length: n }, () => "0123456789abcdefABCDEF"[rnd.int(0, 21)]).join("");
    const max = 2n ** 256n - 1n;
    const sales = Array.from({ length: 120 }, (_, i) => {
      const price = i === 0 ? max : BigInt(digits(rnd.int(1, 77)));
      return {
        hash: `0x${hex(64)}`, from: `0x${hex(40)}`, to: `0x${hex(40)}`, contractAddress: i % 2 === 0 ? D : D.toUpperCase().replace("0X", "0x"),
        assetId: i === 1 ? max.toString() : digits(rnd.int(1, 77)), timestamp: rnd.int(1, 1_780_000_000), block: rnd.int(0, 2 ** 40),
        price: price.toString(), amountReceived: (price / BigInt(rnd.int(1, 1000))).toString(), currency: "ETH",
        marketplace: ["OPENSEA", "X2Y2", "A_1", "SUDOSWAP"][i % 4],
      };
    });
    expect(await importRecords(target, "sales", sales)).toMatchObject({ inserted: 120 });
    await withRepos(target, async (repos) => {
      const id = (await repos.collections.collectionId(D))!;
      const wire = await walk((p) => repos.sales.salesPage(id, {}, p, "json"));
      const whole = await walk((p) => repos.sales.salesPage(id, {}, p));
      expect(wire.flatMap((p) => p.rows)).toEqual(whole.flatMap((p) => p.rows.map((r) => saleFragment(r, "json"))));
      expect(wire.flatMap((p) => p.rows)).toHaveLength(120);
      expect(wire.map((p) => p.nextKey)).toEqual(whole.map((p) => p.nextKey));
    });
  });

  it.skipIf(skip)("a record written again unchanged is counted unchanged (its ready answers are not compared); a changed one rewrites them", async () => {
    const sales = Array.from({ length: 30 }, (_, i) => numberedSale(i + 1, C));
    expect(await importRecords(target, "sales", sales)).toMatchObject({ inserted: 0, updated: 0, unchanged: 30 });
    expect(await importRecords(target, "sales", [{ ...sales[4]!, price: "2000000000000123" }])).toMatchObject({ updated: 1, unchanged: 0 });
    await withRepos(target, async (repos) => {
      await expectReadsAgree(repos);
      const id = (await repos.collections.collectionId(C))!;
      const page = (await repos.sales.salesPage(id, { assetId: "5" }, { limit: 10, after: null }, "json")).rows as string[];
      expect(page.some((json) => json.includes('"price":"2000000000000123"'))).toBe(true);
    });
  });

  it.skipIf(skip)("rows without them are answered whole; the migration's backfill gives them theirs", async () => {
    await onStore(engine, target, `UPDATE sales SET wire_json = NULL WHERE block % 3 = 0;
      UPDATE listings SET wire_json_head = NULL, wire_pb = NULL WHERE ${engine === "SQLite" ? "asset_key = '016'" : "asset_id = 6"};
      UPDATE social_users SET wire_json = NULL, wire_pb = NULL;`);
    await withRepos(target, expectReadsAgree);
    if (engine === "SQLite") {
      const db = new Database(target);
      db.transaction(() => backfillWireRows(db))();
      const missing = db.prepare("SELECT (SELECT count(*) FROM sales WHERE wire_json IS NULL) + (SELECT count(*) FROM social_users WHERE wire_pb IS NULL)").pluck().get();
      db.close();
      expect(missing).toBe(0);
    } else {
      const pool = new pg.Pool({ connectionString: target, max: 1 });
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await backfillPgWireRows(client);
        await client.query("COMMIT");
        const { rows } = await client.query("SELECT (SELECT count(*) FROM sales WHERE wire_json IS NULL) + (SELECT count(*) FROM social_users WHERE wire_pb IS NULL) AS n");
        expect(Number(rows[0].n)).toBe(0);
      } finally {
        client.release();
        await pool.end();
      }
    }
    await withRepos(target, expectReadsAgree);
  });
});
