import type { FeedEntry, FeedKind } from "../store/ports/feed.js";
import type { FeedHub, FeedItem, Subscription } from "./feed-hub.js";
import { HEARTBEAT_SECONDS } from "./feed-limits.js";
import { abortableSleep } from "./abortable-sleep.js";
import type { MaybePromise } from "../store/ports/paging.js";
import type { ReadRepositories } from "../store/ports/reads.js";

// finality=final (docs/chains.md, "Finality"): settled records only. A list
// reads the records at or below its chain's finalized block, looked up as
// the page is read (never part of its cursor: a cursor stays good as the
// finality moves). A stream holds each record back until its block is
// final, then sends it if it still stands at its position: a record taken
// back (or changed) while it waited is not sent, and neither is a removal,
// since a final record is never taken back.

/** How often a held record's chain's finality is looked up again. */
export const FINALITY_POLL_MS = 1000;

/** The page of a final-only list: none while the chain has no finalized block (every record pending), else read at or below it. */
export async function finalPage<P>(store: ReadRepositories, chain: string, empty: P, read: (maxBlock: number) => MaybePromise<P>): Promise<P> {
  const maxBlock = await store.collections.finalized(chain);
  return maxBlock < 0 ? empty : read(maxBlock);
}

/** What a final-only stream does with a feed entry: send it, drop it (taken back, changed since, or a removal), or wait. */
export type FinalVerdict = "send" | "drop" | "wait";

/** A final-only stream's gate on one kind's feed of one collection. */
export class FinalGate {
  #finalized = -1;

  constructor(
    private readonly store: ReadRepositories,
    private readonly chain: string,
    private readonly kind: FeedKind,
    private readonly collectionId: number,
  ) {}

  /** Whether `entry` is sent now, dropped, or must wait for its chain's finality (looked up again on each call that would wait). */
  async verdict(entry: FeedEntry<unknown>): Promise<FinalVerdict> {
    if (entry.removed !== undefined) return "drop";
    const block = (entry.row as { block: number }).block;
    if (block > this.#finalized) this.#finalized = await this.store.collections.finalized(this.chain);
    if (block > this.#finalized) return "wait";
    // Final now: sent only if it still stands where the feed had it (a later commit would have sent it again, or took it back).
    return (await this.store.feed.holds(this.kind, this.collectionId, entry.seq)) ? "send" : "drop";
  }
}

/**
 * A final-only stream's reading of one subscription: each row once its
 * gate sends it; a row dropped as a position only (the stream has passed
 * it); while a row is held, a heartbeat at the last position sent every
 * HEARTBEAT_SECONDS, and the end, should the hub end the subscription
 * meanwhile, at that position (the hub's own would be past the held row).
 */
export class FinalFeed<T> {
  #held: FeedEntry<T> | undefined;

  constructor(
    private readonly hub: FeedHub,
    private readonly sub: Subscription<T>,
    private readonly gate: FinalGate,
  ) {}

  /** What the stream sends next (`last`: the position it sent last), or undefined once `signal` aborts. */
  async next(signal: AbortSignal, last: number): Promise<FeedItem<T> | undefined> {
    let entry = this.#held;
    this.#held = undefined;
    if (entry === undefined) {
      const item = await this.hub.next(this.sub, signal);
      if (item === undefined || item.kind !== "row") return item;
      entry = item.entry;
    }
    const since = performance.now();
    for (;;) {
      const verdict = await this.gate.verdict(entry);
      // Read while pending, perhaps: it is final now.
      if (verdict === "send") return { kind: "row", entry: { ...entry, row: { ...entry.row, finality: "final" } } };
      if (verdict === "drop") return { kind: "heartbeat", seq: entry.seq };
      const ended = this.sub.ended;
      if (ended !== undefined) return { kind: "end", error: ended.error, seq: last };
      if (performance.now() - since >= HEARTBEAT_SECONDS * 1000) {
        this.#held = entry;
        return { kind: "heartbeat", seq: last };
      }
      await abortableSleep(FINALITY_POLL_MS, signal);
      if (signal.aborted) return undefined;
    }
  }
}
