import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withStoreKeys } from "../../src/store/sqlite/key-admin.js";
import { openWritable, refreshPlannerStats } from "../../src/store/sqlite/database.js";
import type { AppraisalRow, ListingRow, ListingStatusName, OfferRow, RarityRow, SaleRow, ScoreRow, TransferRow } from "../../src/domain/rows.js";
import { type TweetRecord, WriteStore, type SocialUserRecord } from "../../src/store/sqlite/record-writes.js";

// A small deterministic store with every kind of record, built through the
// store's own writer, and the records it holds, as the oracle for tests.

export const COLLECTION = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
export const EMPTY_COLLECTION = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
export const UNKNOWN_COLLECTION = "0xcccccccccccccccccccccccccccccccccccccccc";
/** An ERC-1155 collection: its token EDITION minted to EDITION_MINTS wallets, each passing one unit on to one more (transfers). */
export const EDITIONS_COLLECTION = "0xdddddddddddddddddddddddddddddddddddddddd";
export const EDITION = "1";
export const EDITION_MINTS = 7;

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const txHash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

export interface Fixture {
  dir: string;
  dbPath: string;
  key: string;
  revokedKey: string;
  appraisals: AppraisalRow[];
  rarity: RarityRow[];
  sales: SaleRow[];
  listings: ListingRow[];
  /** Records of the listed tokens (40-51), with attributes: the tokens and traits lists' own. */
  tokens: { contractAddress: string; assetId: string; currentOwner: string; attributes: { trait_type: string; value: string | number }[] }[];
  /** Collection, trait and token offers, none expiring (answers that do not move with the clock). */
  offers: OfferRow[];
  influencers: { contractAddress: string; user: SocialUserRecord; score: number }[];
  tweets: TweetRecord[];
  score: ScoreRow;
  collections: { contractAddress: string; name: string; tokenStandard?: string }[];
  /** EDITIONS_COLLECTION's transfers. */
  transfers: TransferRow[];
  cleanup(): void | Promise<void>;
}

export const MARKETPLACES = ["OPENSEA", "BLUR", "LOOKSRARE", "OTHER"];
export const STATUSES: ListingStatusName[] = ["CREATED", "FULFILLED", "CANCELLED", "EXPIRED"];

function user(i: number): SocialUserRecord {
  return {
    id: String(1000 + i),
    screenName: `user${i}`,
    profileImageUrl: `https://pbs.example.com/profile/${i}.jpg`,
    description: i % 3 === 0 ? "" : `collector #${i}`,
    name: `User ${i}`,
    location: i % 2 === 0 ? "" : "Lisbon",
    followersCount: 100 * i,
    verified: i % 5 === 0,
    statusesCount: 10 * i,
    favouritesCount: 7 * i,
    protected: false,
  };
}

export function buildFixture(): Fixture {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-test-"));
  const dbPath = join(dir, "store.sqlite");
  const db = openWritable(dbPath);
  const w = new WriteStore(db);
  const { key, revoked } = withStoreKeys(dbPath, (admin) => {
    const made = { key: admin.create("tests").key, revoked: admin.create("revoked") };
    admin.revoke(made.revoked.id);
    return made;
  });

  const f: Omit<Fixture, "cleanup"> = {
    dir,
    dbPath,
    key,
    revokedKey: revoked.key,
    appraisals: [],
    rarity: [],
    sales: [],
    listings: [],
    tokens: [],
    offers: [],
    influencers: [],
    tweets: [],
    score: { contractAddress: COLLECTION, name: "Test Apes", hype: 71.5, gains: -3.25, community: 88, total: 52.1 },
    collections: [
      { contractAddress: COLLECTION, name: "Test Apes" },
      { contractAddress: EMPTY_COLLECTION, name: "Empty" },
      { contractAddress: EDITIONS_COLLECTION, name: "Editions", tokenStandard: "ERC1155" },
    ],
    transfers: [],
  };

  // Wallet n (1 to EDITION_MINTS) is minted n + 2 units and passes one on to wallet 100: it holds n + 1, wallet 100 EDITION_MINTS.
  for (let n = 1; n <= EDITION_MINTS; n++) {
    const moved = { contractAddress: EDITIONS_COLLECTION, assetId: EDITION, timestamp: 1_650_000_000 + n, block: 14_000_000 + n };
    f.transfers.push({ ...moved, hash: txHash(0xed00 + n), logIndex: 0, from: addr(0), to: addr(0xed0 + n), amount: String(n + 2) });
    f.transfers.push({ ...moved, hash: txHash(0xed00 + n), logIndex: 1, from: addr(0xed0 + n), to: addr(0xed0 + 100), amount: "1" });
  }

  for (let i = 0; i < 45; i++) {
    f.appraisals.push({
      contractAddress: COLLECTION,
      assetId: String(i * 7),
      fairMarketValue: (10n ** 19n * BigInt(i + 1) + 123n).toString(),
      confidence: (0.5 + i / 100).toFixed(4),
    });
    f.rarity.push({
      contractAddress: COLLECTION,
      assetId: String(i * 7),
      currentOwner: i % 4 === 0 ? "" : addr(5000 + i),
      rarityScore: 2 - Math.floor(i / 2) / 50,
      statisticalRarity: -10 - i / 3,
      // Pairs share a rank, as tied tokens do: 1, 1, 3, 3, 5, ...
      rarityRank: i - (i % 2) + 1,
    });
  }

  for (let i = 0; i < 130; i++) {
    const price = i % 17 === 0 ? 2n ** 70n + BigInt(i) : 10n ** 18n * BigInt(1 + (i % 9)) + BigInt(i);
    f.sales.push({
      // Some transactions sell two assets: sale i shares sale i-1's hash.
      hash: txHash(i % 5 === 1 ? i - 1 : i),
      from: addr(100 + (i % 11)),
      to: addr(200 + (i % 13)),
      contractAddress: COLLECTION,
      assetId: String((i * 13) % 40),
      // Repeated timestamps and blocks exercise the tie-breakers.
      timestamp: 1_700_000_000 + Math.floor(i / 3) * 3600,
      block: 18_000_000 + Math.floor(i / 2),
      price: price.toString(),
      amountReceived: ((price * 975n) / 1000n).toString(),
      marketplace: MARKETPLACES[i % MARKETPLACES.length]!,
    });
  }

  for (let i = 40; i < 52; i++) {
    f.tokens.push({
      contractAddress: COLLECTION,
      assetId: String(i),
      currentOwner: addr(7000 + (i % 5)),
      attributes: [
        { trait_type: "Background", value: ["Blue", "Red", "Gold"][i % 3]! },
        { trait_type: "Eyes", value: i % 2 === 0 ? "Bored" : "Sleepy" },
        { trait_type: "Level", value: i % 4 },
      ],
    });
  }

  for (let i = 0; i < 24; i++) {
    const scope = i % 3 === 0 ? {} : i % 3 === 1 ? { assetId: String(40 + (i % 12)) } : { traitType: "Background", traitValue: ["Blue", "Red", "Gold"][i % 3]! };
    f.offers.push({
      marketplaceId: String(5000 + i), marketplace: MARKETPLACES[i % 2]!, contractAddress: COLLECTION, assetId: "", traitType: "", traitValue: "",
      ...scope, maker: addr(8000 + (i % 7)), price: (10n ** 17n * BigInt(1 + ((i * 7) % 11))).toString(),
      createdAt: 1_700_000_000 + i * 600, lastUpdatedAt: 1_700_000_000 + i * 600, expiresAt: 0, status: STATUSES[i % 5 === 4 ? 2 : 0]!,
    });
  }

  for (let i = 0; i < 70; i++) {
    const marketplace = MARKETPLACES[i % 3]!;
    f.listings.push({
      marketplaceId: marketplace === "OPENSEA" ? `0x${(i * 977).toString(16).padStart(8, "0")}` : String(900 + i),
      marketplace,
      contractAddress: COLLECTION,
      // Tokens no sale names (sales sell 0..39): a token sold after its
      // listing was created ends the listing (decisions.md), which the
      // tests of fillable listings cover on their own.
      assetId: String(40 + (i % 12)),
      createdAt: 1_700_000_000 + Math.floor(i / 4) * 60,
      lastUpdatedAt: 1_700_000_000 + Math.floor(i / 4) * 60 + 30,
      price: (10n ** 18n * BigInt(2 + (i % 5))).toString(),
      status: STATUSES[i % 4]!,
    });
  }

  for (let i = 0; i < 30; i++) {
    f.influencers.push({ contractAddress: COLLECTION, user: user(i), score: Math.round((100 - (i % 25) * 3.5) * 100) / 100 });
  }

  for (let i = 0; i < 30; i++) {
    const retweets = (i * 7) % 23;
    const favorites = (i * 11) % 31;
    f.tweets.push({
      contractAddress: COLLECTION,
      id: String(1_600_000_000_000_000_000n + BigInt(i)),
      user: user(i % 10),
      source: '<a href="https://mobile.twitter.com" rel="nofollow">Twitter Web App</a>',
      text: i % 4 === 0 ? `gm apes ${i}… https://t.co/abc${i}` : `floor is rising ${i}`,
      retweetCount: retweets,
      favoriteCount: favorites,
      possiblySensitive: i % 9 === 0,
      lang: "en",
      retweetedStatusJson: null,
      createdAt: "Wed Oct 10 20:19:24 +0000 2018",
      date: "2018-10-10T20:19:24.000+00:00",
      originalId: String(1_600_000_000_000_000_000n + BigInt(i)),
      originalText: `floor is rising ${i}`,
      originalTweet: i % 2 === 0,
      interaction: retweets + favorites,
    });
  }

  w.transaction(() => {
    for (const c of f.collections) w.upsertCollection(c);
    for (const r of f.appraisals) w.upsertAppraisal(r);
    for (const r of f.rarity) w.upsertRarity(r);
    for (const r of f.sales) w.upsertSale(r);
    for (const r of f.listings) w.upsertListing(r);
    for (const r of f.tokens) w.upsertToken(r);
    for (const r of f.transfers) w.upsertTransfer(r);
    for (const r of f.offers) w.upsertOffer(r);
    for (const r of f.influencers) w.upsertInfluencer(r);
    for (const r of f.tweets) w.upsertTweet(r);
    w.upsertScore(f.score);
  });
  // As import and derive do: the planner works from statistics.
  refreshPlannerStats(db);
  db.close();
  return { ...f, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
