import { createHash } from "node:crypto";
import { create, type DescMessage, equals, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { ListListingsResponseSchema, ListSalesResponseSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListTweetsResponseSchema } from "../../gen/marketdata/v1/collection_service_pb.js";
import {
  InfluencerSchema,
  ListingSchema,
  SaleSchema,
  SocialUserSchema,
  TweetSchema,
} from "../../gen/marketdata/v1/resources_pb.js";
import { LISTING_STATUSES, type ListingRow, type SaleRow, type SocialUserRow, type TweetRow } from "../../src/domain/rows.js";
import {
  INFLUENCER_USER_TAG,
  influencerFragments,
  LISTING_STATUS_JSON,
  listingBinary,
  listingFragments,
  listingJson,
  saleBinary,
  saleFragment,
  saleJson,
  saleJsonWithFinality,
  socialUserBinary,
  socialUserJson,
  spliceBinary,
  spliceJson,
  TWEET_USER_TAG,
  tweetFragments,
  withWireRows,
} from "../../src/domain/wire/fragments.js";
import { compileJsonWriter } from "../../src/domain/wire/json-writer.js";
import { toInfluencer, toListing, toSale, toSocialUser, toTweet } from "../../src/domain/wire/messages.js";
import { compileBinaryWriter } from "../../src/domain/wire/binary-writer.js";

// A row's ready answer (domain/wire/fragments.ts), put together as the
// stores' reads put it together, is the answer the writer makes of the
// whole message, byte for byte in /v1 JSON and field for field in binary;
// and a page spliced into its envelope is the envelope written whole.

const user = (over: Partial<SocialUserRow> = {}): SocialUserRow => ({
  id: "42",
  screenName: 'ape "one"',
  profileImageUrl: "https://pbs.twimg.com/a.png",
  description: "line one\nline two\t\\ \u2028 emoji 🦍 \"user\":null",
  name: "Ape",
  location: "",
  followersCount: 12_345,
  verified: true,
  statusesCount: 7,
  favouritesCount: 0,
  protected: false,
  ...over,
});

const tweet = (over: Partial<TweetRow> = {}): TweetRow => ({
  id: "1600000000000000001",
  user: user(),
  source: '<a href="https://mobile.twitter.com" rel="nofollow">Twitter Web App</a>',
  text: 'gm "user":null\n,"status":"CREATED"} 🦍',
  retweetCount: 3,
  favoriteCount: 4,
  possiblySensitive: false,
  lang: "en",
  retweetedStatusJson: null,
  createdAt: "Wed Oct 10 20:19:24 +0000 2018",
  date: "2018-10-10T20:19:24.000+00:00",
  originalId: "1",
  originalText: "",
  originalTweet: true,
  interaction: 7,
  ...over,
});

const sale: SaleRow = {
  hash: `0x${"ab".repeat(32)}`,
  from: `0x${"1".repeat(40)}`,
  to: `0x${"2".repeat(40)}`,
  contractAddress: `0x${"a".repeat(40)}`,
  assetId: "115792089237316195423570985008687907853269984665640564039457584007913129639935",
  timestamp: 1_700_000_000,
  block: 18_000_000,
  price: "1000000000000000000",
  amountReceived: "975000000000000000",
  marketplace: "OPENSEA",
};

const listing = (over: Partial<ListingRow> = {}): ListingRow => ({
  marketplaceId: "0x00ff",
  marketplace: "BLUR",
  contractAddress: `0x${"a".repeat(40)}`,
  assetId: "7",
  createdAt: 1_700_000_000,
  lastUpdatedAt: 1_700_000_100,
  price: "2000000000000000000",
  status: "CREATED",
  ...over,
});

const concat = (...parts: Uint8Array[]) => Buffer.concat(parts);

describe("the compiled binary writer", () => {
  it("writes toBinary's bytes: short and long text, ASCII and not, nested messages past 127 bytes, 64-bit values, doubles, enums, defaults left out", () => {
    const long = user({ description: "é🦍".repeat(200), followersCount: 2 ** 40, statusesCount: 0 });
    const retweet = JSON.stringify({ ...tweet({ id: "9" }), retweetedStatusJson: undefined, retweetedStatus: null, user: long });
    const cases: [DescMessage, Message][] = [
      [SaleSchema, toSale(sale)],
      [SaleSchema, toSale({ ...sale, price: "", timestamp: 0, marketplace: "x".repeat(300) })],
      [ListingSchema, toListing(listing({ status: "EXPIRED" }))],
      [SocialUserSchema, toSocialUser(long)],
      [TweetSchema, toTweet(tweet({ user: long, retweetedStatusJson: retweet }))],
      [InfluencerSchema, toInfluencer({ user: long, score: -0.1 })],
      [InfluencerSchema, toInfluencer({ user: user(), score: 0 })],
    ];
    for (const [schema, message] of cases) {
      expect(Buffer.from(compileBinaryWriter(schema)(message)).equals(Buffer.from(toBinary(schema, message)))).toBe(true);
    }
  });

  it("writes lists of messages and of strings as toBinary does, and refuses, when compiled, the field kinds it does not write", () => {
    const page = create(ListSalesResponseSchema, { success: 1, cursor: "c", data: [toSale({ ...sale, washMask: 6 }), toSale(sale), toSale({ ...sale, washMask: 15 })] });
    expect(Buffer.from(compileBinaryWriter(ListSalesResponseSchema)(page)).equals(Buffer.from(toBinary(ListSalesResponseSchema, page)))).toBe(true);
    // A descriptor's public_dependency: a list of numbers (packed), not written.
    expect(() => compileBinaryWriter(FileDescriptorProtoSchema)).toThrow(/are not written by the binary writer/);
  });
});

describe("ready answers of rows", () => {
  it("a sale's are its message's", () => {
    // The kept JSON holds no finality and no wash fields: the reads add the finality (store/shared/finality.ts) and the wash fields as the
    // writer places them, after blockHash and before the fees.
    expect(saleJson(sale).replace(',"marketplaceFee":', ',"finality":"pending","washFlags":[],"washScore":0,"marketplaceFee":').replace(/}$/, ',"priceUsd":"","quantity":"1"}'))
      .toBe(compileJsonWriter(SaleSchema)(toSale(sale)));
    // A sale paid in WETH with its fees told, and one kept before fees were (migration 31): its fees answer "".
    const told = { ...sale, currency: "WETH", marketplaceFee: "25000000000000000", royaltyFee: "50000000000000000" };
    for (const washMask of [0, 6]) {
      expect(saleJsonWithFinality(saleJson(told), false, washMask)).toBe(compileJsonWriter(SaleSchema)(toSale({ ...told, washMask })));
      // Its USD price, put in at read (the price points move it, not the sale).
      expect(saleJsonWithFinality(saleJson({ ...told, priceUsd: "9.99" }), false, washMask, "3421.57")).toBe(compileJsonWriter(SaleSchema)(toSale({ ...told, washMask, priceUsd: "3421.57" })));
      // Its quantity (an ERC-1155 sale's units), put in at read from its column, last.
      const units = { ...told, washMask, priceUsd: "3421.57", quantity: "12" };
      expect(saleJsonWithFinality(saleJson(units), false, washMask, "3421.57", "12")).toBe(compileJsonWriter(SaleSchema)(toSale(units)));
      expect(saleFragment(units, "json")).toBe(compileJsonWriter(SaleSchema)(toSale(units)));
      expect(fromBinary(SaleSchema, saleBinary(units)).quantity).toBe("12");
      const before31 = saleJson(sale).replace(',"marketplaceFee":"","royaltyFee":""}', "}");
      expect(saleJsonWithFinality(before31, true, washMask)).toBe(compileJsonWriter(SaleSchema)(toSale({ ...sale, finality: "final", washMask })));
    }
    expect(saleFragment(sale, "json")).toBe(compileJsonWriter(SaleSchema)(toSale(sale)));
    // And as the reads put it back (store/*/sales.ts), final or not.
    expect(saleJsonWithFinality(saleJson(sale), false)).toBe(compileJsonWriter(SaleSchema)(toSale(sale)));
    expect(saleJsonWithFinality(saleJson(sale), true)).toBe(compileJsonWriter(SaleSchema)(toSale({ ...sale, finality: "final" })));
    for (const washMask of [1, 2, 6, 8, 15]) {
      expect(saleJsonWithFinality(saleJson(sale), true, washMask)).toBe(compileJsonWriter(SaleSchema)(toSale({ ...sale, finality: "final", washMask })));
      expect(saleFragment({ ...sale, washMask }, "json")).toBe(compileJsonWriter(SaleSchema)(toSale({ ...sale, washMask })));
    }
    expect(equals(SaleSchema, fromBinary(SaleSchema, saleBinary(sale)), toSale(sale))).toBe(true);
  });

  it("a listing's, with status, lastUpdatedAt, block and block hash put in as the read puts them, in every status", () => {
    const write = compileJsonWriter(ListingSchema);
    const onChain = [{ block: 0, blockHash: "" }, { block: 19_000_001, blockHash: `0x${"b1".repeat(32)}` }];
    for (const status of LISTING_STATUSES) {
      for (const lastUpdatedAt of [0, 1, 1_700_000_100, 2 ** 40]) {
        for (const { block, blockHash } of onChain) {
          const row = listing({ status, lastUpdatedAt, block, blockHash });
          const f = listingFragments(row);
          // The fragments do not hold the block: the same as an off-chain listing's.
          expect(f).toEqual(listingFragments({ ...row, block: 0, blockHash: "" }));
          expect(listingJson(f, lastUpdatedAt, status, block, blockHash)).toBe(write(toListing(row)));
          expect(equals(ListingSchema, fromBinary(ListingSchema, listingBinary(f.binary, lastUpdatedAt, status, block, blockHash)), toListing(row))).toBe(true);
        }
      }
    }
    // The migrations before 26 made a listing's JSON without a block (wire-rows.ts listingJsonSqlBefore26).
    const f = listingFragments(listing({}));
    expect(`${f.jsonHead}1${f.jsonMiddle}${LISTING_STATUS_JSON.CREATED}`).toBe(write(toListing(listing({ lastUpdatedAt: 1, status: "CREATED" }))).replace(',"block":0,"blockHash":""', ""));
  });

  it("a tweet's and an influencer's, with the user put in between (JSON) or after (binary)", () => {
    const retweet = JSON.stringify({ ...tweet({ id: "9" }), retweetedStatusJson: undefined, retweetedStatus: null, user: user({ id: "9" }) });
    for (const row of [tweet(), tweet({ retweetedStatusJson: retweet, user: user({ description: "" }) })]) {
      const f = tweetFragments(row);
      expect(`${f.jsonHead}${socialUserJson(row.user)}${f.jsonTail}`).toBe(compileJsonWriter(TweetSchema)(toTweet(row)));
      const bytes = concat(f.binary, Uint8Array.of(TWEET_USER_TAG), socialUserBinary(row.user));
      expect(equals(TweetSchema, fromBinary(TweetSchema, bytes), toTweet(row))).toBe(true);
    }
    const influencer = { user: user(), score: 87.25 };
    const f = influencerFragments(influencer);
    expect(`${f.jsonHead}${socialUserJson(influencer.user)}${f.jsonTail}`).toBe(compileJsonWriter(InfluencerSchema)(toInfluencer(influencer)));
    const bytes = concat(Uint8Array.of(INFLUENCER_USER_TAG), socialUserBinary(influencer.user), f.binary);
    expect(equals(InfluencerSchema, fromBinary(InfluencerSchema, bytes), toInfluencer(influencer))).toBe(true);
  });

  it("a page spliced into its envelope is the envelope written whole; an empty page is left as written", () => {
    const rows = [sale, { ...sale, assetId: "1", marketplace: "BLUR" }];
    const whole = create(ListSalesResponseSchema, { success: 1, cursor: "abc", data: rows.map(toSale) });
    const write = compileJsonWriter(ListSalesResponseSchema);
    const json = withWireRows(create(ListSalesResponseSchema, { success: 1, cursor: "abc" }), ListSalesResponseSchema.field.data, "json", rows.map((r) => saleFragment(r, "json")));
    expect(spliceJson(json, write(json))).toBe(write(whole));
    const binary = withWireRows(create(ListSalesResponseSchema, { success: 1, cursor: "abc" }), ListSalesResponseSchema.field.data, "binary", rows.map(saleBinary));
    expect(equals(ListSalesResponseSchema, fromBinary(ListSalesResponseSchema, spliceBinary(binary, toBinary(ListSalesResponseSchema, binary))), whole)).toBe(true);
    const empty = withWireRows(create(ListTweetsResponseSchema, { success: 1 }), ListTweetsResponseSchema.field.data, "json", []);
    expect(spliceJson(empty, compileJsonWriter(ListTweetsResponseSchema)(empty))).toBe('{"success":1,"data":[]}');
  });

  it("a page of one form is refused by the other form's writer", () => {
    const m = withWireRows(create(ListListingsResponseSchema, { success: 1 }), ListListingsResponseSchema.field.data, "json", ["{}"]);
    expect(() => spliceBinary(m, new Uint8Array())).toThrow(/json page handed to the binary writer/);
  });

  // The stores keep these answers in their rows: a change to these
  // messages changes the answers, and the rows already written would then
  // answer the old form. If this digest changes, add a migration to both
  // engines that writes every row's fragments again (as SQLite's 15 and
  // PostgreSQL's 13 did: sqlite/wire-rows.ts, postgres/wire-rows.ts; or, for a field
  // added last, as both engines' 21 did: shared/wire-rows.ts SALE_JSON_BLOCK_HASH), then
  // update the digest here. (Sale's finality, field 13, and its wash fields, 14 and 15, are
  // no kept fields: the reads add them, from the finality and the wash_flags column; nor are a listing's block and blockHash, 10 and 11, after its status: the whole
  // JSON puts them in from their columns, migration 26, as the binary read does. Sale's fees, 16 and 17, are kept;
  // a sale kept before them, migration 31, answers them "" at read: fragments.ts saleJsonWithFinality. Its priceUsd, 18, is
  // no kept field: the read puts it in from the price points; nor is its quantity, 19, put in from its column (migration 44). A listing's maker and expiresAt, 12 and 13, are kept:
  // both engines' 40 wrote every listing's fragments again; its quantity, 14, too: 44 wrote them again.)
  it("the messages kept in the stores' rows are those the fragments were written for", () => {
    const digest = createHash("sha256");
    for (const schema of [SaleSchema, ListingSchema, SocialUserSchema, TweetSchema, InfluencerSchema]) {
      for (const field of schema.fields) digest.update(`${schema.typeName}.${field.name}=${field.number}:${field.fieldKind}:${field.jsonName};`);
    }
    expect(digest.digest("hex").slice(0, 16)).toBe("032edab700094086");
  });
});
