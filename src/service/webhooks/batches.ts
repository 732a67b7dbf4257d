import { webhookChain } from "./admin.js";
import { nowSeconds } from "../../domain/formats.js";
import type { FeedEntry, FeedKind } from "../../store/ports/feed.js";
import type { ReadRepositories } from "../../store/ports/reads.js";
import type { Batch, Held } from "./held.js";
import { batchBody, eventJson, messageId } from "./payload.js";

// The dispatcher's batch part: a webhook's next batch, its collections'
// events above its positions merged in position order, as the bytes sent
// (payload.ts). The feed reads of one look at the store are shared by the
// webhooks on the same collections (ten webhooks on a collection, caught
// up, read the same rows), and each event's JSON is made once.
//
// A final-only webhook (finality=final, docs/chains.md "Settled data only")
// gets each sale and transfer once its block is final: a kind's read stops
// at its first record above the chain's finalized block (the position waits
// there until a finality record moves it, which makes every webhook look
// again), and its removals are passed over unsent, as a final record is
// never taken back and the record they take back was never sent.

/** The kinds whose records a final-only webhook holds until final. */
const GATED: ReadonlySet<FeedKind> = new Set(["sales", "transfers"]);

interface BatchRow {
  kind: FeedKind;
  entry: FeedEntry<unknown>;
  /** Of a kind a final-only webhook holds until final: a removal is passed over (its position taken, nothing sent), a record sent as final. */
  gated: boolean;
}

export class BatchReader {
  /**
   * The feed reads made since the last look at the store. Forgotten at each
   * tick once the store said what changed (forget()): a commit after a read
   * is seen by the next tick, which reads it.
   */
  #reads = new Map<string, Promise<FeedEntry<unknown>[]>>();
  /** Events' JSON by position (offers excepted: their status depends on the time they are sent). */
  readonly #events = new Map<number, string>();

  constructor(
    private readonly store: ReadRepositories,
    private readonly batchSize: number,
  ) {}

  /** A new look at the store: reads are made afresh. */
  forget(): void {
    this.#reads = new Map();
  }

  #feedRead(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): Promise<FeedEntry<unknown>[]> {
    const key = `${kind}:${collectionIds.join(",")}:${after}:${limit}`;
    let read = this.#reads.get(key);
    if (read === undefined) {
      read = Promise.resolve(this.store.feed.merged(kind, collectionIds, after, limit));
      read.catch(() => this.#reads.delete(key));
      if (this.#reads.size > 10_000) this.#reads.clear();
      this.#reads.set(key, read);
    }
    return read;
  }

  /**
   * The next batch of the webhook's events above its positions in feed
   * `epoch`, or undefined when it has none. A batch that would only pass
   * over positions (a final-only webhook's removals) is not sent: the
   * webhook's positions move past them here, and the next batch is read.
   */
  async read(h: Held, epoch: string): Promise<Batch | undefined> {
    for (;;) {
      const batch = await this.#readOnce(h, epoch);
      if (batch === undefined || batch.events > 0) return batch;
      h.positions = batch.positions;
      if (!batch.more) return undefined;
    }
  }

  async #readOnce(h: Held, epoch: string): Promise<Batch | undefined> {
    const size = this.batchSize;
    const rows: BatchRow[] = [];
    let more = false;
    const ids = [...h.ids.values()].sort((a, b) => a - b);
    const chain = webhookChain(h.rec);
    const finalized = h.rec.finalOnly ? await this.store.collections.finalized(chain) : undefined;
    for (const kind of h.rec.kinds) {
      // Its collections in one read (one snapshot): positions are per kind, so a commit seen
      // in one collection but not in another read before it would be skipped for ever.
      let read = await this.#feedRead(kind, ids, h.positions[kind], size);
      let full = read.length === size;
      const gated = finalized !== undefined && GATED.has(kind);
      if (gated) {
        const pending = read.findIndex((e) => e.removed === undefined && (e.row as { block: number }).block > finalized);
        if (pending >= 0) {
          read = read.slice(0, pending);
          full = false;
        }
      }
      for (const entry of read) rows.push({ kind, entry, gated });
      if (full) more = true;
    }
    // The batch is the `size` lowest positions of everything read. Each read
    // holds at most `size` rows, so a row a full read left out lies above
    // that read's last row, above `size` rows read: never among them. Kinds
    // are read apart: each has its own position.
    if (rows.length === 0) return undefined;
    rows.sort((a, b) => a.entry.seq - b.entry.seq);
    if (rows.length > size) {
      rows.length = size;
      more = true;
    }
    const positions = { ...h.positions };
    const now = nowSeconds();
    const texts: string[] = [];
    for (const { kind, entry, gated } of rows) {
      positions[kind] = entry.seq;
      if (!(gated && entry.removed !== undefined)) texts.push(this.#eventText(epoch, kind, entry, now, chain, gated));
    }
    const first = rows[0]!.entry.seq;
    const last = rows[rows.length - 1]!.entry.seq;
    return {
      id: messageId(h.rec.id, h.rec.generation, first, last),
      body: batchBody(h.rec.id, texts, new Date()),
      events: texts.length,
      first,
      last,
      positions,
      more,
      attempt: 1,
    };
  }

  /** An event's JSON, made once per position (an offer's status depends on the time; a final-only webhook's record answers "final"). */
  #eventText(epoch: string, kind: FeedKind, entry: FeedEntry<unknown>, now: number, chain: string, final: boolean): string {
    // Read while pending, perhaps, by the feed read another webhook shares: final now, as the gate found.
    if (final) return eventJson(epoch, kind, { ...entry, row: { ...(entry.row as object), finality: "final" } }, now, chain);
    if (kind === "offers") return eventJson(epoch, kind, entry, now, chain);
    let text = this.#events.get(entry.seq);
    if (text === undefined) {
      text = eventJson(epoch, kind, entry, now, chain);
      if (this.#events.size >= 100_000) this.#events.clear();
      this.#events.set(entry.seq, text);
    }
    return text;
  }
}
