import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type CollectionService,
  ListCollectionActivityResponseSchema,
  WatchCollectionActivityResponseSchema,
} from "../../gen/marketdata/v1/collection_service_pb.js";
import { type ActivityEvent, ActivityEventSchema } from "../../gen/marketdata/v1/resources_pb.js";
import type { ListingRow, OfferRow, SaleRow, TokenEventRow, TransferRow } from "../domain/rows.js";
import type { FeedEntry, FeedKind, RemovableKind } from "../store/ports/feed.js";
import type { KeySpec, Page, PageRequest } from "../store/ports/paging.js";
import type { KeyValue } from "../domain/rows.js";
import type { ReadRepositories, RemovedRecord } from "../store/ports/reads.js";
import { echo } from "../domain/echo.js";
import { knownCollection } from "./collections.js";
import type { FeedHub, FeedItem, Subscription } from "./feed-hub.js";
import { decodePageToken, encodePageToken, queryDigest } from "./page-token.js";
import * as p from "./params.js";
import { nowSeconds } from "../domain/formats.js";
import { DEFAULT_EVENT_TYPES, FEED_KIND_OF_EVENT, type FeedDeclaration, feedOf } from "../domain/kinds/index.js";
import { RESUME_TOKEN_HEADER, streamCaller } from "./watch.js";
import { REMOVED_EVENT, removalOf } from "./feed-events.js";
import { FinalFeed, FinalGate } from "./finality.js";

// The activity feed (decisions.md, "Activity"): a collection's sales,
// listings, offers and transfers as one list, newest first, and as one live
// stream.
//
// The list merges each kind's own keyset list (each one index range),
// asked from one cursor: a page key of (time, kind, the kind's own key).
// At the cursor's time the kinds are in a fixed order (listing, offer,
// sale, transfer), so each kind's list resumes after the cursor's row (its
// own kind), before its time (kinds before it) or at its time (kinds after
// it); a page reads at most limit + 1 rows of each kind.
//
// The stream reads each kind's live feed (feed-hub.ts) and sends what each
// one brings: every kind in its commit order. Its resume token holds a
// position in each kind's feed, so resuming is exact for each, whatever the
// engine orders between kinds (PostgreSQL takes sales' positions under
// another lock than listings'): nothing is sent twice or missed.

export type ActivityType = "listing" | "offer" | "sale" | "transfer";
/** The kinds, in their order at equal times. */
export const ACTIVITY_TYPES: readonly ActivityType[] = ["listing", "offer", "sale", "transfer"];
/**
 * The stream's kinds: the list's, and tokens whose record was written
 * (sent only when asked for: DEFAULT_EVENT_TYPES). A token's write is no
 * market event with a time of its own, so the list does not carry it.
 */
type StreamType = ActivityType | "token";
const STREAM_TYPES: readonly StreamType[] = [...ACTIVITY_TYPES, "token"];
/** Each type's feed kind: the kind declared with that event (domain/kinds). */
const FEED_OF = FEED_KIND_OF_EVENT as Readonly<Record<StreamType, FeedKind>>;
/** Each type's event declaration (its time and message), looked up once: the page's sort asks it of every row. */
const EVENT_OF = Object.fromEntries(STREAM_TYPES.map((t) => [t, feedOf(FEED_OF[t])])) as Readonly<Record<StreamType, FeedDeclaration<unknown>>>;

/** A page key: time, kind, then two numbers and two texts of the kind's own key (unused ones 0). */
const ACTIVITY_KEY: KeySpec = ["int", "text", "int", "int", "text", "text"];
/** A resume token: the store's feed epoch, then a position in each kind's feed (STREAM_TYPES order). */
const RESUME_KEY: KeySpec = ["text", ...STREAM_TYPES.map(() => "int" as const)];
/** A resume token made before tokens were a feed: no token position (its stream could not ask for tokens). */
const RESUME_KEY_BEFORE_TOKENS: KeySpec = ["text", ...ACTIVITY_TYPES.map(() => "int" as const)];

type Row =
  | { type: "sale"; row: SaleRow }
  | { type: "listing"; row: ListingRow }
  | { type: "offer"; row: OfferRow }
  | { type: "transfer"; row: TransferRow };
/** A row the stream sends: the list's, or a token whose record was written. */
type StreamRow = Row | { type: "token"; row: TokenEventRow };

const timeOf = (r: StreamRow) => EVENT_OF[r.type].time(r.row);

/** The list's kinds: the activity types, then (includeRemoved) the records taken back, in their order at equal times. */
type ListType = ActivityType | typeof REMOVED_EVENT;
const LIST_TYPES: readonly ListType[] = [...ACTIVITY_TYPES, REMOVED_EVENT];
/** A row of the list: an activity row, or a record taken back. */
type ListRow = Row | { type: typeof REMOVED_EVENT; row: RemovedRecord };

const listTimeOf = (r: ListRow) => (r.type === REMOVED_EVENT ? r.row.time : timeOf(r));
/** A list row's page key (ACTIVITY_KEY): a record taken back by its time, block and removal position. */
const listKeyOf = (r: ListRow): KeyValue[] => (r.type === REMOVED_EVENT ? [r.row.time, REMOVED_EVENT, r.row.block, r.row.seq, "", ""] : keyOf(r));

/** The row's page key (ACTIVITY_KEY). */
function keyOf(r: Row): KeyValue[] {
  switch (r.type) {
    case "sale":
      return [r.row.timestamp, "sale", r.row.block, 0, r.row.hash, r.row.assetId];
    case "transfer":
      return [r.row.timestamp, "transfer", r.row.block, r.row.logIndex, r.row.hash, r.row.assetId];
    default:
      return [r.row.createdAt, r.type, 0, 0, r.row.marketplace, r.row.marketplaceId];
  }
}

/**
 * Where kind `type`'s own list resumes for the activity cursor `after`:
 * after the cursor's row (its kind), else through its time (kinds after it
 * at equal times) or before it (kinds before it). A key past every row of a
 * second is that second's key with the largest block (sales, transfers:
 * blocks descend) or the smallest text (listings, offers: "" is before
 * every marketplace).
 */
export function resumeKey(type: ListType, after: KeyValue[]): KeyValue[] {
  const [time, kind, n1, n2, t1, t2] = after as [number, ListType, number, number, string, string];
  if (kind === type) {
    if (type === "sale") return [time, n1, t1, t2];
    if (type === "transfer") return [time, n1, n2, t1, t2];
    // Records taken back: time, block, removal position (REMOVAL_KEY).
    if (type === REMOVED_EVENT) return [time, n1, n2];
    return [time, t1, t2];
  }
  // Kinds before the cursor's at its time were all sent: from the second before.
  const through = LIST_TYPES.indexOf(type) < LIST_TYPES.indexOf(kind) ? time - 1 : time;
  if (type === "sale") return [through, Number.MAX_SAFE_INTEGER, "0x", "0"];
  if (type === "transfer") return [through, Number.MAX_SAFE_INTEGER, 0, "0x", "0"];
  if (type === REMOVED_EVENT) return [through, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
  return [through, "", ""];
}

/** A removal table's record as the feed entry of its removal. */
const removalEntry = (r: RemovedRecord): FeedEntry<unknown> => ({ seq: r.seq, row: r.row, removed: { originalSeq: r.originalSeq } });

/** A record taken back (a removal's feed entry) as an activity event of type "removed" (docs/chains.md, "Removals in the feeds"). */
function removedEvent(kind: RemovableKind, entry: FeedEntry<unknown>, epoch: string, now: number): ActivityEvent {
  // At its record's time (a sale's or transfer's timestamp, an order's creation).
  return create(ActivityEventSchema, { type: REMOVED_EVENT, timestamp: BigInt(feedOf(kind).time(entry.row)), removed: removalOf(kind, entry, epoch, now) });
}

export function toActivityEvent(r: StreamRow, now: number): ActivityEvent {
  // The event's message in the field named as its type, as its declaration makes it (a webhook's event alike).
  return create(ActivityEventSchema, { type: r.type, timestamp: BigInt(timeOf(r)), [r.type]: EVENT_OF[r.type].toMessage(r.row, now) });
}

/** Types asked of `among` ("sale", …; none: those of DEFAULT_EVENT_TYPES), in their order, each once. */
function activityTypes<T extends StreamType>(values: readonly string[], among: readonly T[]): T[] {
  const asked = values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== "");
  for (const v of asked) {
    if (!among.includes(v as T)) throw p.invalid(`types must be some of ${among.join(", ")}, got ${echo(v)}`);
  }
  return among.filter((t) => (asked.length === 0 ? DEFAULT_EVENT_TYPES : asked).includes(t));
}

/** A resume token's key, one made before tokens were a feed taken too (its token position 0: it could not have asked for tokens). */
function resumeAfter(token: string, digest: string): KeyValue[] | null {
  try {
    return decodePageToken("cursor", token, digest, RESUME_KEY);
  } catch (err) {
    const old = (() => {
      try {
        return decodePageToken("cursor", token, digest, RESUME_KEY_BEFORE_TOKENS);
      } catch {
        return undefined;
      }
    })();
    if (old === undefined || old === null) throw err;
    return [...old, 0];
  }
}

export function createActivityMethods(
  store: ReadRepositories,
  hub: FeedHub,
): Pick<ServiceImpl<typeof CollectionService>, "listCollectionActivity" | "watchCollectionActivity"> {
  /** Kind `type`'s own page of collection `id`. */
  async function pageOf(type: ActivityType, id: number, page: PageRequest, now: number, maxBlock?: number): Promise<Page<Row>> {
    const wrap = <R>(t: ActivityType, pg: Page<R>) => ({ rows: pg.rows.map((row) => ({ type: t, row }) as Row), nextKey: pg.nextKey });
    switch (type) {
      case "sale":
        return wrap(type, await store.sales.salesPage(id, maxBlock === undefined ? {} : { maxBlock }, page));
      case "listing":
        return wrap(type, await store.listings.listingsPage(id, {}, page));
      case "offer":
        return wrap(type, await store.offers.offersPage(id, {}, page, now));
      case "transfer":
        return wrap(type, await store.transfers.transfersPage(id, page, maxBlock));
    }
  }

  return {
    async listCollectionActivity(req) {
      const { ref } = p.collection(req);
      const types = activityTypes(req.types, ACTIVITY_TYPES);
      const limit = p.limit(req.limit);
      const final = p.finalOnly(req.finality);
      // includeRemoved: the records of the types asked that were taken back (never final: none with finality=final).
      const removedKinds = req.includeRemoved && !final ? types.map((t) => FEED_OF[t] as RemovableKind) : [];
      const digest = queryDigest(["activity", ref, types, ...(final ? ["final"] : []), ...(req.includeRemoved ? ["removed"] : [])]);
      const after = decodePageToken("cursor", req.cursor, digest, ACTIVITY_KEY);
      if (after !== null && !LIST_TYPES.includes(after[1] as ListType)) throw p.invalid("cursor is not a valid page token");
      const id = await knownCollection(store.collections, ref);
      const now = nowSeconds();
      // finality=final: sales and transfers at or below the chain's finalized block (none while it has none); listings and offers as they are.
      const maxBlock = final ? await store.collections.finalized(p.chain(req.chain)) : undefined;
      const kept = maxBlock !== undefined && maxBlock < 0 ? types.filter((t) => t !== "sale" && t !== "transfer") : types;
      const from = (t: ListType) => ({ limit, after: after === null ? null : resumeKey(t, after) });
      const pages: Page<ListRow>[] = await Promise.all(kept.map((t) => pageOf(t, id, from(t), now, maxBlock)));
      if (removedKinds.length > 0) {
        const removed = await store.removals.removalsPage(id, removedKinds, from(REMOVED_EVENT));
        pages.push({ rows: removed.rows.map((row) => ({ type: REMOVED_EVENT, row })), nextKey: removed.nextKey });
      }
      // Each kind's rows are in the feed's order already: merged by time, then kind.
      const merged = pages
        .flatMap((pg) => pg.rows)
        .sort((a, b) => listTimeOf(b) - listTimeOf(a) || LIST_TYPES.indexOf(a.type) - LIST_TYPES.indexOf(b.type));
      // Array.prototype.sort is stable: equal time and kind keep each list's own order.
      const rows = merged.slice(0, limit);
      const more = merged.length > limit || pages.some((pg) => pg.nextKey !== null);
      const last = rows.at(-1);
      const epoch = rows.some((r) => r.type === REMOVED_EVENT) ? await store.feed.epoch() : "";
      return create(ListCollectionActivityResponseSchema, {
        successful: 1,
        nextPage: encodePageToken(digest, more && last !== undefined ? listKeyOf(last) : null),
        data: rows.map((r) => (r.type === REMOVED_EVENT ? removedEvent(r.row.kind, removalEntry(r.row), epoch, now) : toActivityEvent(r, now))),
      });
    },

    async *watchCollectionActivity(req, context) {
      const { ref } = p.collection(req);
      const types = activityTypes(req.types, STREAM_TYPES);
      const final = p.finalOnly(req.finality);
      const digest = queryDigest(["watch-activity", ref, types, ...(final ? ["final"] : [])]);
      const after = resumeAfter(req.cursor, digest);
      const [collectionId, epoch] = await Promise.all([knownCollection(store.collections, ref), hub.epoch()]);
      if (after !== null && after[0] !== epoch) {
        throw new ConnectError(
          "cursor is older than the data this store keeps (it was rebuilt since); start again without a cursor, after reading the list",
          Code.FailedPrecondition,
        );
      }
      // The position sent last of each kind (STREAM_TYPES order): what the token says.
      const positions = STREAM_TYPES.map((_, i) => (after === null ? 0 : (after[i + 1] as number)));
      const token = () => encodePageToken(digest, [epoch, ...positions]);
      const subs: { type: StreamType; sub: Subscription<unknown>; final?: FinalFeed<unknown> }[] = [];
      try {
        for (const type of types) {
          const from = after === null ? undefined : positions[STREAM_TYPES.indexOf(type)];
          const sub = await hub.subscribe<unknown>(FEED_OF[type], { id: collectionId, ref }, () => true, context.values.get(streamCaller), from, subs[0]?.sub);
          // finality=final: sales and transfers held until final (finality.ts).
          const gated = final && (type === "sale" || type === "transfer");
          subs.push({ type, sub, ...(gated ? { final: new FinalFeed(hub, sub, new FinalGate(store, p.chain(req.chain), FEED_OF[type], collectionId)) } : {}) });
        }
        for (const { type, sub } of subs) positions[STREAM_TYPES.indexOf(type)] = sub.resumePos;
        yield create(WatchCollectionActivityResponseSchema, { resumeToken: token() });
        const pending = new Map<number, Promise<{ i: number; item: FeedItem<unknown> | undefined }>>();
        for (;;) {
          subs.forEach(({ type, sub, final: gate }, i) => {
            if (pending.has(i)) return;
            const next = gate === undefined ? hub.next(sub, context.signal) : gate.next(context.signal, positions[STREAM_TYPES.indexOf(type)]!);
            pending.set(i, next.then((item) => ({ i, item })));
          });
          const { i, item } = await Promise.race(pending.values());
          pending.delete(i);
          if (item === undefined) return;
          const { type } = subs[i]!;
          const at = STREAM_TYPES.indexOf(type);
          if (item.kind === "end") {
            // What another kind's feed took but this stream did not send is sent again on resuming: the token says what was sent.
            positions[at] = item.seq;
            const t = token();
            throw new ConnectError(`${item.error.rawMessage} (cursor ${t})`, item.error.code, { [RESUME_TOKEN_HEADER]: t });
          }
          if (item.kind === "heartbeat") {
            positions[at] = item.seq;
            yield create(WatchCollectionActivityResponseSchema, { resumeToken: token() });
            continue;
          }
          const entry = item.entry as FeedEntry<StreamRow["row"]>;
          positions[at] = entry.seq;
          const row = { type, row: entry.row } as StreamRow;
          // A record a reorganisation took back: a "removed" event at its removal's position (docs/chains.md).
          const event = entry.removed === undefined
            ? toActivityEvent(row, nowSeconds())
            : removedEvent(FEED_OF[type] as RemovableKind, entry, epoch, nowSeconds());
          yield create(WatchCollectionActivityResponseSchema, { event, resumeToken: token() });
        }
      } finally {
        for (const { sub } of subs) hub.unsubscribe(sub);
      }
    },
  };
}
