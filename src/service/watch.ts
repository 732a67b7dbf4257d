import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type {
  WatchListingsRequest,
  WatchListingsResponse,
  WatchOffersRequest,
  WatchOffersResponse,
  WatchSalesRequest,
  WatchSalesResponse,
} from "../../gen/marketdata/v1/asset_service_pb.js";
import type { ListingRow, OfferRow, SaleRow } from "../domain/rows.js";
import type { FeedKind } from "../store/ports/feed.js";
import type { ReadRepositories } from "../store/ports/reads.js";
import { knownCollection } from "./collections.js";
import type { FeedFilter, FeedHub } from "./feed-hub.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import * as p from "./params.js";
import { nowSeconds } from "../domain/formats.js";
import { toListing, toOffer, toSale } from "../domain/wire/messages.js";
import type { Removal } from "../../gen/marketdata/v1/resources_pb.js";
import { removalOf } from "./feed-events.js";
import { FinalFeed, FinalGate } from "./finality.js";

// WatchSales, WatchListings and WatchOffers: the live feeds as server streams, for every
// transport (connect-node for Connect, gRPC and gRPC-Web; rest/sse.ts for
// Server-Sent Events). A stream opens with a message holding only a resume
// token (where it starts), then sends each matching row as its commit is
// seen (feed-hub.ts), a position-only message after HEARTBEAT_SECONDS of
// quiet, and ends, when it must, with an error whose message and
// `resume-token` metadata give where to resume.

/** The API key's id of the caller, set by the transport that admitted it: streams are counted per key. */
export const streamCaller = createContextKey<number | undefined>(undefined, { description: "the caller's API key id" });

/** Where a stream must end: the error's metadata holds the resume token. */
export const RESUME_TOKEN_HEADER = "resume-token";

/** A resume token: the position, and the feed epoch of the store it is a position of. */
const TOKEN_KEY = ["int", "text"] as const;

interface Watch<Row, Out> {
  kind: FeedKind;
  /** Names the query in its tokens (a token resumes only the query it came from). */
  name: string;
  filter: Record<string, unknown>;
  matches: FeedFilter<Row>;
  /** The stream's message: a row, a record taken back (its Removal), or (neither) only a position. */
  message(row: Row | undefined, token: string, removed?: Removal): Out;
  /** finality=final: each row once final (finality.ts FinalGate). */
  final?: boolean;
}

export interface WatchMethods {
  watchSales(req: WatchSalesRequest, context: HandlerContext): AsyncIterable<WatchSalesResponse>;
  watchListings(req: WatchListingsRequest, context: HandlerContext): AsyncIterable<WatchListingsResponse>;
  watchOffers(req: WatchOffersRequest, context: HandlerContext): AsyncIterable<WatchOffersResponse>;
}

export function createWatchMethods(store: ReadRepositories, hub: FeedHub): WatchMethods {
  async function* watch<Row, Out>(req: { contractAddress: string; chain: string; cursor: string }, context: HandlerContext, w: Watch<Row, Out>): AsyncGenerator<Out> {
    const { ref } = p.collection(req);
    const chain = p.chain(req.chain);
    const digest = queryDigest([w.name, ref, w.filter]);
    const after = decodePageToken("cursor", req.cursor, digest, TOKEN_KEY);
    const [collectionId, epoch] = await Promise.all([knownCollection(store.collections, ref), hub.epoch()]);
    if (after !== null && after[1] !== epoch) {
      throw new ConnectError(
        "cursor is older than the data this store keeps (it was rebuilt since); start again without a cursor, after reading the list",
        Code.FailedPrecondition,
      );
    }
    const token = (seq: number) => encodePageToken(digest, [seq, epoch]);
    const sub = await hub.subscribe<Row>(w.kind, { id: collectionId, ref }, w.matches, context.values.get(streamCaller), after === null ? undefined : (after[0] as number));
    const final = w.final === true ? new FinalFeed(hub, sub, new FinalGate(store, chain, w.kind, collectionId)) : undefined;
    try {
      // Where the stream starts (the cursor's position, or the head), not
      // where the replay has read to: rows it queued are not sent yet, and a
      // caller that drops now resumes from this token and must get them.
      let last = sub.resumePos;
      yield w.message(undefined, token(last));
      for (;;) {
        const item = final === undefined ? await hub.next(sub, context.signal) : await final.next(context.signal, last);
        if (item === undefined) return;
        if (item.kind === "row" && item.entry.removed !== undefined) {
          yield w.message(undefined, token((last = item.entry.seq)), removalOf(w.kind, item.entry, epoch, nowSeconds()));
        } else if (item.kind === "row") yield w.message(item.entry.row, token((last = item.entry.seq)));
        else if (item.kind === "heartbeat") yield w.message(undefined, token((last = item.seq)));
        else {
          const t = token(item.seq);
          throw new ConnectError(`${item.error.rawMessage} (cursor ${t})`, item.error.code, { [RESUME_TOKEN_HEADER]: t });
        }
      }
    } finally {
      hub.unsubscribe(sub);
    }
  }

  return {
    watchSales(req, context) {
      const assetIds = new Set(req.assetId.length === 0 ? [] : p.assetIds(req.assetId));
      const marketplace = p.marketplace(req.marketplace);
      const final = p.finalOnly(req.finality);
      return watch<SaleRow, WatchSalesResponse>(req, context, {
        kind: "sales",
        name: "watch-sales",
        // A final-only stream's tokens are its own (an earlier token of the other kind would resume past held sales).
        filter: { assetIds: [...assetIds].sort(), marketplace, ...(final ? { final } : {}) },
        final,
        matches: (r) => (assetIds.size === 0 || assetIds.has(r.assetId)) && (marketplace === undefined || r.marketplace === marketplace),
        message: (row, resumeToken, removed) => ({
          $typeName: "marketdata.v1.WatchSalesResponse",
          ...(row === undefined ? {} : { sale: toSale(row) }),
          ...(removed === undefined ? {} : { removed }),
          resumeToken,
        }),
      });
    },
    watchListings(req, context) {
      const assetIds = new Set(req.assetId.length === 0 ? [] : p.assetIds(req.assetId));
      const marketplace = p.marketplace(req.marketplace);
      const status = p.listingStatus(req.status);
      return watch<ListingRow, WatchListingsResponse>(req, context, {
        kind: "listings",
        name: "watch-listings",
        filter: { assetIds: [...assetIds].sort(), marketplace, status },
        matches: (r) =>
          (assetIds.size === 0 || assetIds.has(r.assetId)) &&
          (marketplace === undefined || r.marketplace === marketplace) &&
          (status === undefined || r.status === status),
        message: (row, resumeToken) => ({
          $typeName: "marketdata.v1.WatchListingsResponse",
          ...(row === undefined ? {} : { listing: toListing(row) }),
          resumeToken,
        }),
      });
    },
    watchOffers(req, context) {
      const assetIds = new Set(req.assetId.length === 0 ? [] : p.assetIds(req.assetId));
      const status = p.listingStatus(req.status);
      return watch<OfferRow, WatchOffersResponse>(req, context, {
        kind: "offers",
        name: "watch-offers",
        filter: { assetIds: [...assetIds].sort(), status },
        // The status as committed: a lapse at expiresAt is no commit (the message says EXPIRED when sent after it).
        matches: (r) => (assetIds.size === 0 || assetIds.has(r.assetId)) && (status === undefined || r.status === status),
        message: (row, resumeToken) => ({
          $typeName: "marketdata.v1.WatchOffersResponse",
          ...(row === undefined ? {} : { offer: toOffer(row, nowSeconds()) }),
          resumeToken,
        }),
      });
    },
  };
}
