import { DEFAULT_CHAIN } from "../domain/chains.js";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type CollectionService, ListCollectionsResponseSchema } from "../../gen/marketdata/v1/collection_service_pb.js";
import { type CollectionSummary, CollectionSummarySchema } from "../../gen/marketdata/v1/resources_pb.js";
import { COLLECTION_KEY, COLLECTION_SORTS } from "../store/ports/market.js";
import type { CollectionSummaryRow } from "../domain/rows.js";
import type { ReadRepositories } from "../store/ports/reads.js";
import type { OfferRow } from "../domain/rows.js";
import { DAY } from "../domain/series.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import * as p from "./params.js";
import { nowSeconds } from "../domain/formats.js";
import { CURRENCY, toFloorListing, toOffer } from "../domain/wire/messages.js";

// The collections list (decisions.md, "Collections"): a page of the kept
// summaries in the order asked, then the top bid of each row returned
// (offers lapse by the clock, so it is read now) and its floor a day ago
// (from the listings' history): a few seeks a row, whatever the store
// holds, asked for the page at once.

export function createCollectionListMethods(store: ReadRepositories): Pick<ServiceImpl<typeof CollectionService>, "listCollections"> {
  return {
    async listCollections(req) {
      const chain = p.chain(req.chain);
      // includeWash only when asked: the pages' tokens without it are those from before it.
      const filter = { chain, query: p.optionalQuery(req.query), sort: p.choice(req.sort, COLLECTION_SORTS, "sort"), includeWash: req.includeWash || undefined, includeSpam: req.includeSpam || undefined };
      const limit = p.limit(req.limit);
      // The default chain's pages keep the tokens they had before chains (its name is not in them).
      const digest = queryDigest(["collections", chain === DEFAULT_CHAIN ? { ...filter, chain: undefined } : filter]);
      const after = decodePageToken("cursor", req.cursor, digest, COLLECTION_KEY);
      const { windowsEnd, page } = await store.collectionList.collectionsPage(filter, { limit, after });
      const now = nowSeconds();
      // Each row's top bid and floor a day ago: one batch each (one statement on PostgreSQL), read together.
      const ids = page.rows.map((r) => r.collectionId);
      const [bids, then] = await Promise.all([
        Promise.resolve(store.offers.topBids(ids, now)),
        Promise.resolve(store.analytics.lowestFloorsAt(ids, now - DAY)),
      ]);
      const data = page.rows.map((row, i) => summaryOf(row, bids[i], then[i], now));
      return create(ListCollectionsResponseSchema, {
        successful: 1,
        nextPage: encodePageToken(digest, page.nextKey),
        windowsEnd: BigInt(windowsEnd),
        data,
      });
    },
  };
}

function summaryOf(row: CollectionSummaryRow, bid: OfferRow | undefined, then: string | undefined, now: number): CollectionSummary {
  return create(CollectionSummarySchema, {
    contractAddress: row.contractAddress,
    chain: row.chain,
    name: row.name,
    totalTokens: BigInt(row.totalTokens),
    numHolders: BigInt(row.numHolders),
    floor: row.floor && toFloorListing(row.floor),
    topBid: bid && toOffer(bid, now),
    volume1d: row.volume1d,
    volume7d: row.volume7d,
    volume30d: row.volume30d,
    volumeUsd1d: row.volumeUsd1d,
    volumeUsd7d: row.volumeUsd7d,
    volumeUsd30d: row.volumeUsd30d,
    sales1d: BigInt(row.sales1d),
    sales7d: BigInt(row.sales7d),
    sales30d: BigInt(row.sales30d),
    floorChange1d: row.floor === undefined || then === undefined ? undefined : floorChange(row.floor.price, then),
    currency: CURRENCY,
    description: row.description,
    image: row.image,
    externalUrl: row.externalUrl,
    twitter: row.twitter,
    discord: row.discord,
    tokenStandard: row.tokenStandard,
    isSpam: row.isSpam,
    spamReason: row.spamReason,
    marketCap: row.marketCap,
    volumeAll: row.volumeAll,
  });
}

/** (now - then) / then, of two wei prices; undefined from a floor of 0 wei. */
function floorChange(now: string, then: string): number | undefined {
  const before = BigInt(then);
  return before === 0n ? undefined : Number(BigInt(now) - before) / Number(before);
}
