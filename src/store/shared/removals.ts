import type { Row } from "./rows.js";
import { toListing, toOffer, toSale, toTransfer } from "./rows.js";
import { toPage, type Page } from "../ports/paging.js";
import type { KeyValue } from "../../domain/rows.js";
import type { RemovedRecord } from "../ports/reads.js";
import type { FeedEntry, RemovableKind } from "../ports/feed.js";

// The records taken back, newest first, as the activity list reads them
// with includeRemoved (docs/chains.md): each removal table's page by time
// (a sale's or transfer's timestamp, an order's creation: migrations 25
// and 28's indexes), the kinds merged by the same key, alike on both
// engines.

/** A removal table of each kind (orders: shared/order-log.ts). */
export const REMOVAL_TABLES = { sales: "sale_removals", transfers: "transfer_removals", listings: "listing_removals", offers: "offer_removals" } as const;

/** A feed read's row as its entry: a removal (original_seq set) says the position it takes back. */
export function feedEntry(r: Row, row: (r: Row) => unknown): FeedEntry<unknown> {
  const entry: FeedEntry<unknown> = { seq: Number(r.feed_seq), row: row(r) };
  if (r.original_seq !== null && r.original_seq !== undefined) entry.removed = { originalSeq: Number(r.original_seq) };
  return entry;
}

/** A removed record's page key (ports REMOVAL_KEY). */
export const removalKey = (r: RemovedRecord): KeyValue[] => [r.time, r.block, r.seq];

/** Each kind's removal table: its time column, and its row as the feed reads it. */
export const REMOVAL_TIME: Readonly<Record<RemovableKind, string>> = { sales: "timestamp", transfers: "timestamp", listings: "created_at", offers: "created_at" };
const ROW_OF: Readonly<Record<RemovableKind, (r: Row) => { block?: number }>> = { sales: toSale, transfers: toTransfer, listings: toListing, offers: toOffer };

/** A removal table's row as a removed record. */
export function removedRecord(kind: RemovableKind, r: Row): RemovedRecord {
  const row = ROW_OF[kind](r);
  return { kind, row, time: Number(r[REMOVAL_TIME[kind]]), block: row.block ?? 0, seq: Number(r.feed_seq), originalSeq: Number(r.original_seq) };
}

/** The kinds' pages (each up to limit + 1 rows, in key order) merged: the page of `limit` and whether more follow. */
export function mergedRemovals(parts: readonly RemovedRecord[][], limit: number): Page<RemovedRecord> {
  const all = parts.flat().sort((a, b) => b.time - a.time || b.block - a.block || b.seq - a.seq);
  return toPage(all, limit, (r) => r, removalKey);
}
