import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type CollectionService,
  GetCollectionFloorResponseSchema,
  GetCollectionCandlesResponseSchema,
  GetCollectionStatsSeriesResponseSchema,
  ListCollectionHoldersResponseSchema,
  ListCollectionTraitsResponseSchema,
  GetCollectionMarketResponseSchema,
} from "../../gen/marketdata/v1/collection_service_pb.js";
import { type Candle, type StatsBucket } from "../../gen/marketdata/v1/resources_pb.js";
import { dollarsOfExact, USD } from "../domain/money.js";
import { intervalSeconds, intervalStart, type SeriesBucket, type SeriesInterval } from "../domain/series.js";
import type { FloorListingRow } from "../domain/rows.js";
import type { KeySpec } from "../store/ports/paging.js";
import { HOLDER_KEY, type ReadRepositories } from "../store/ports/reads.js";
import { knownCollection } from "./collections.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import { marketplaceCheck } from "./marketplaces.js";
import * as p from "./params.js";
import { nowSeconds } from "../domain/formats.js";
import { type FloorCandle, floorCandles, type FloorPrice, type FloorSpanLength } from "../domain/floor-candles.js";
import { CURRENCY, toFloorListing, toOffer, toTraitValue } from "../domain/wire/messages.js";
import type { OfferRow } from "../domain/rows.js";

// The analytics RPCs of CollectionService: floor, market, holders, traits, sales series and candles.

/** Buckets per series page: a year of days fits one. */
export const SERIES_LIMITS = { fallback: 1000, max: 1000 };
/** A series page token: the start of the next page's first interval. */
const SERIES_KEY: KeySpec = ["int"];

type AnalyticsMethods = Pick<ServiceImpl<typeof CollectionService>, "getCollectionFloor" | "listCollectionHolders" | "getCollectionStatsSeries" | "getCollectionCandles" | "listCollectionTraits" | "getCollectionMarket"
>;

export function createAnalyticsMethods(store: ReadRepositories, checkMarketplace = marketplaceCheck(store.collections)): AnalyticsMethods {
  return {
    async getCollectionFloor(req) {
      const { address, ref } = p.collection(req);
      const filter = { marketplace: p.marketplace(req.marketplace), at: p.epochSeconds(req.at, "at"), includeFlagged: req.includeFlagged };
      await checkMarketplace(filter.marketplace);
      // In code-point order of marketplace whatever the engine's collation.
      const groups = (await store.analytics.floors(await knownCollection(store.collections, ref), filter)).sort((a, b) =>
        a.marketplace < b.marketplace ? -1 : a.marketplace > b.marketplace ? 1 : 0,
      );
      const floor = lowest(groups);
      return create(GetCollectionFloorResponseSchema, {
        successful: 1,
        data: {
          contractAddress: address,
          at: BigInt(filter.at ?? 0),
          floor: floor && toFloorListing(floor),
          groups: groups.map(toFloorListing),
          currency: CURRENCY,
        },
      });
    },

    async listCollectionHolders(req) {
      const { address, ref } = p.collection(req);
      const limit = p.limit(req.limit);
      const collection = await knownCollection(store.collections, ref);
      const digest = queryDigest(["holders", ref]);
      const after = decodePageToken("cursor", req.cursor, digest, HOLDER_KEY);
      const { totalTokens, numHolders, page, distribution } = await store.analytics.holders(collection, { limit, after });
      return create(ListCollectionHoldersResponseSchema, {
        successful: 1,
        nextPage: encodePageToken(digest, page.nextKey),
        data: {
          contractAddress: address,
          totalTokens: BigInt(totalTokens),
          numHolders: BigInt(numHolders),
          holders: page.rows.map((h) => ({ address: h.address, tokenCount: BigInt(h.tokens) })),
          distribution: distribution.map((b) => ({ minTokens: BigInt(b.min), maxTokens: BigInt(b.max), wallets: BigInt(b.wallets), tokens: BigInt(b.tokens) })),
        },
      });
    },

    async listCollectionTraits(req) {
      const { ref } = p.collection(req);
      const collection = await knownCollection(store.collections, ref);
      const values = await store.tokens.traits(collection, req.includeFlagged);
      // In code-point order of type, then value, whatever the engine's collation.
      values.sort((a, b) => compare(a.traitType, b.traitType) || compare(a.value, b.value));
      // Each value's best trait offer, and the collection's (any token fills it): the better one.
      const now = nowSeconds();
      const best = await store.offers.bestOffers(collection, [{}, ...values.map((v) => ({ traitType: v.traitType, traitValue: v.value }))], now);
      const data = values.map((v, i) => toTraitValue(v, better(best[i + 1], best[0]), now));
      return create(ListCollectionTraitsResponseSchema, { successful: 1, data });
    },

    async getCollectionMarket(req) {
      const { address, ref } = p.collection(req);
      const collection = await knownCollection(store.collections, ref);
      const now = nowSeconds();
      const [floor, [bid]] = await Promise.all([
        Promise.resolve(store.analytics.floors(collection, { includeFlagged: req.includeFlagged })).then((groups) => lowest(groups)),
        Promise.resolve(store.offers.bestOffers(collection, [{}], now)),
      ]);
      return create(GetCollectionMarketResponseSchema, {
        successful: 1,
        data: {
          contractAddress: address,
          floor: floor && toFloorListing(floor),
          topBid: bid && toOffer(bid, now),
          spread: floor === undefined || bid === undefined ? "" : (BigInt(floor.price) - BigInt(bid.price)).toString(),
          currency: CURRENCY,
        },
      });
    },

    async getCollectionStatsSeries(req) {
      const usd = p.amountUnit(req.currency) === "usd";
      const page = await seriesPage(store, checkMarketplace, req, p.seriesInterval(req.interval), "series", p.optionalAssetId(req.assetId), usd);
      const data = page.intervals.map(([b, found]) => (usd ? toUsdStatsBucket(b, page.length, found) : toStatsBucket(b, page.length, found)));
      return create(GetCollectionStatsSeriesResponseSchema, { successful: 1, nextPage: page.nextPage, data });
    },

    async getCollectionCandles(req) {
      const interval = CANDLE_INTERVALS[p.requiredChoice(req.interval, CANDLE_INTERVAL_NAMES, "interval")];
      const page = await seriesPage(store, checkMarketplace, req, interval, "candles", undefined, false);
      // The floor's history over the page (decisions.md, "Floor history"): one seek and one range of the kept buckets.
      const first = page.intervals[0]?.[0] ?? 0;
      const history = page.intervals.length === 0
        ? { before: null, rows: [] }
        : await store.analytics.floorHistory(page.collection, page.marketplace, page.length as FloorSpanLength, first, first + page.intervals.length * page.length);
      const floors = floorCandles(first, page.length, page.intervals.length, history.before, history.rows);
      const data = page.intervals.map(([b, found], i) => toCandle(b, page.length, found, floors[i]!));
      return create(GetCollectionCandlesResponseSchema, { successful: 1, nextPage: page.nextPage, data });
    },
  };
}

/** The candles' intervals by their names (GetCollectionCandles). */
const CANDLE_INTERVALS = { "1m": "minute", "1h": "hour", "1d": "day" } as const satisfies Record<string, SeriesInterval>;
const CANDLE_INTERVAL_NAMES = Object.keys(CANDLE_INTERVALS) as (keyof typeof CANDLE_INTERVALS)[];

interface SeriesRequest {
  contractAddress: string;
  chain: string;
  marketplace: string;
  since?: bigint | undefined;
  until?: bigint | undefined;
  limit?: number | undefined;
  cursor: string;
  includeWash: boolean;
}

/**
 * One page of a series (the stats series, the candles): every interval of
 * the window from the cursor on, each with its sales' totals (undefined
 * when it has none), and the next page's token. The cursor is bound to the
 * list (`list`), the collection, the interval and the filter.
 */
async function seriesPage(
  store: ReadRepositories,
  checkMarketplace: (m: string | undefined) => Promise<void>,
  req: SeriesRequest,
  interval: SeriesInterval,
  list: "series" | "candles",
  assetId: string | undefined,
  usd: boolean,
): Promise<{ collection: number; marketplace: string; length: number; intervals: [number, SeriesBucket | undefined][]; nextPage: string }> {
  const { ref } = p.collection(req);
  const filter = {
    marketplace: p.marketplace(req.marketplace),
    assetId,
    ...p.timeWindow(req.since, req.until),
    // Wash trades left out unless asked for (docs/wash-trades.md); the cursor is bound to the choice.
    includeWash: req.includeWash,
  };
  const limit = p.limit(req.limit, "limit", SERIES_LIMITS);
  await checkMarketplace(filter.marketplace);
  const collection = await knownCollection(store.collections, ref);
  // Bound to the list by its name: "series" as the stats series' tokens were before the candles.
  const digest = queryDigest([list, ref, interval, filter]);
  const after = decodePageToken("cursor", req.cursor, digest, SERIES_KEY);
  const length = intervalSeconds(interval);
  // The candles' range covers the floor's history too (a collection listed, never sold).
  const range = await seriesRange(store, collection, interval, filter, list === "candles" ? filter.marketplace ?? "" : undefined);
  const marketplace = filter.marketplace ?? "";
  if (range === undefined) return { collection, marketplace, length, intervals: [], nextPage: "" };
  const start = Math.max(range.first, after === null ? range.first : intervalStart(interval, after[0] as number));
  const end = Math.min(range.last, start + (limit - 1) * length);
  // The unit is not the filter's: not in the cursor's digest.
  const buckets = await store.analytics.series(collection, { ...filter, interval, from: start, to: end, usd });
  const intervals: [number, SeriesBucket | undefined][] = [];
  let i = 0;
  for (let b = start; b <= end; b += length) intervals.push([b, buckets[i]?.start === b ? buckets[i++] : undefined]);
  return { collection, marketplace, length, intervals, nextPage: encodePageToken(digest, end < range.last ? [end + length] : null) };
}

/** Built whole, with its $typeName, so that the response takes it as it is (messages.ts: create() copies field by field). */
function toCandle(start: number, length: number, b: SeriesBucket | undefined, floor: FloorCandle): Candle {
  const wei = (v: FloorPrice) => v ?? "";
  return {
    $typeName: "marketdata.v1.Candle",
    start: BigInt(start),
    end: BigInt(start + length - 1),
    open: b?.firstPrice ?? "",
    high: b?.max ?? "",
    low: b?.min ?? "",
    close: b?.lastPrice ?? "",
    volume: b?.volume ?? "0",
    sales: BigInt(b?.n ?? 0),
    currency: CURRENCY,
    floorOpen: wei(floor.open),
    floorHigh: wei(floor.high),
    floorLow: wei(floor.low),
    floorClose: wei(floor.close),
  };
}

/**
 * The starts of the first and last interval a series covers: the window's,
 * or where a bound is absent the collection's sales', and with `floorOf` (a
 * marketplace, or "" for all) its floor's changes' too, up to now.
 */
async function seriesRange(
  store: ReadRepositories,
  collection: number,
  interval: SeriesInterval,
  window: { since?: number | undefined; until?: number | undefined },
  floorOf?: string,
): Promise<{ first: number; last: number } | undefined> {
  let { since, until } = window;
  if (since === undefined || until === undefined) {
    const sales = await store.analytics.salesExtent(collection);
    const floor = floorOf === undefined ? undefined : await store.analytics.floorExtent(collection, floorOf);
    const now = nowSeconds();
    const extent = floor === undefined ? sales : {
      first: Math.min(floor.first, sales?.first ?? floor.first),
      last: Math.max(Math.min(floor.last, now), floor.first, sales?.last ?? floor.first),
    };
    since ??= extent === undefined ? until : Math.min(extent.first, until ?? extent.first);
    until ??= extent === undefined ? since : Math.max(extent.last, since ?? extent.last);
  }
  if (since === undefined || until === undefined) return undefined;
  return { first: intervalStart(interval, since), last: intervalStart(interval, until) };
}

function toStatsBucket(start: number, length: number, b: SeriesBucket | undefined) {
  const price = (v: string | undefined) => v ?? "0";
  return {
    start: BigInt(start),
    end: BigInt(start + length - 1),
    totalNumSales: BigInt(b?.n ?? 0),
    totalVolume: price(b?.volume),
    minPrice: price(b?.min),
    maxPrice: price(b?.max),
    firstPrice: price(b?.firstPrice),
    lastPrice: price(b?.lastPrice),
    currency: CURRENCY,
  } as StatsBucket;
}

/** An interval in US dollars (docs/money.md, "USD kept with the series"): its volume and its sales without a point; no prices. */
function toUsdStatsBucket(start: number, length: number, b: SeriesBucket | undefined) {
  return {
    start: BigInt(start),
    end: BigInt(start + length - 1),
    totalNumSales: BigInt(b?.n ?? 0),
    totalVolume: dollarsOfExact(BigInt(b?.volumeUsd ?? 0)),
    minPrice: "",
    maxPrice: "",
    firstPrice: "",
    lastPrice: "",
    currency: USD,
    unpricedNumSales: BigInt(b?.unpriced ?? 0),
  } as StatsBucket;
}

/** The lowest price of the marketplaces' floors (in marketplace order: ties go to the first). */
function lowest(groups: readonly FloorListingRow[]): FloorListingRow | undefined {
  let best: FloorListingRow | undefined;
  for (const g of groups) if (best === undefined || BigInt(g.price) < BigInt(best.price)) best = g;
  return best;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The better of two offers: higher price, then marketplace, then offer id (the stores' order). */
function better(a: OfferRow | undefined, b: OfferRow | undefined): OfferRow | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const pa = BigInt(a.price);
  const pb = BigInt(b.price);
  if (pa !== pb) return pa > pb ? a : b;
  return (compare(a.marketplace, b.marketplace) || compare(a.marketplaceId, b.marketplaceId)) <= 0 ? a : b;
}
