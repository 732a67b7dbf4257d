import { isFeedKind } from "../domain/kinds/index.js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FeedEntry, FeedKind } from "../store/ports/feed.js";
import type { MaybePromise } from "../store/ports/paging.js";
import type { DataVersion, ReadRepositories } from "../store/ports/reads.js";
import { DEFAULTS } from "../config/settings.js";
import {
  FEED_PAGE_ROWS,
  FEED_POLL_MS,
  HEARTBEAT_SECONDS,
  MAX_QUEUED_MESSAGES,
} from "./feed-limits.js";

import type { WriteNotice } from "./write-notices.js";
// The live feeds of one server process. Every process (every worker of
// `serve`, every server on a replica) watches the store itself: while anyone
// subscribes, it asks the store every FEED_POLL_MS what was committed
// (StoreInfo.changesSince: shared memory on SQLite, one row on PostgreSQL,
// which a replica has replayed with the data), and for each collection a
// commit changed that somebody watches, reads the rows above the last
// position it read, once for all of that collection's subscribers
// (a channel). A subscriber resuming from a position reads the rows between
// it and the channel from the store itself, page by page, then joins the
// channel; positions decide the seam, so nothing is sent twice or skipped.

/** Where a subscriber stands, and what it may hear. */
export interface FeedFilter<T> {
  (row: T): boolean;
}

/** What a subscriber's stream receives next. */
export type FeedItem<T> =
  | { kind: "row"; entry: FeedEntry<T> }
  /** Nothing to send for a while: the position reached (every matching row up to it was sent). */
  | { kind: "heartbeat"; seq: number }
  /** The stream must end: `seq` is the position of the last row sent (resume after it). */
  | { kind: "end"; error: ConnectError; seq: number };

export interface FeedStats {
  /** Streams open now. */
  readonly open: number;
  /** Rows sent to subscribers so far. */
  sent: number;
  /** Subscribers ended because they did not read fast enough. */
  endedSlow: number;
  /** Store reads made for the channels (one per commit and collection watched). */
  channelReads: number;
}

export interface FeedLimits {
  /** Open streams per API key; 0: no limit. Default: --streams-per-key's. */
  perKey?: number | undefined;
  /** Open streams on this server; 0: no limit. Default: --max-streams'. */
  total?: number | undefined;
}

class Channel<T> {
  /** The position up to which every row was handed to the attached subscribers; undefined until the head is read. */
  pos: number | undefined;
  /** Subscribers the channel hands rows to. */
  readonly subscribers = new Set<Subscription<T>>();
  /** Subscribers attached or still replaying: the channel is dropped when none is left. */
  members = 0;
  dirty = false;
  pumping = false;
  /** The collection's last position when the channel was made (its head), once read. */
  readonly ready: Promise<number>;

  constructor(
    readonly kind: FeedKind,
    readonly key: string,
    /** The collection's reference (domain/chains.ts collectionRef), as write notices name it. */
    readonly ref: string,
    readonly collectionId: number,
    head: MaybePromise<number>,
  ) {
    this.ready = Promise.resolve(head).then((h) => {
      this.pos = h;
      return h;
    });
  }
}

/** One subscriber: its position, what waits to be sent, and how to wake its stream. */
export class Subscription<T> {
  /** The last position handed to this subscriber (matching or not): with an empty queue, everything up to it was sent or did not match. */
  pos: number;
  /** The position of the last row its stream took. */
  sentPos: number;
  readonly queue: FeedEntry<T>[] = [];
  /** Why and where the stream ends, once it must. */
  ended: { error: ConnectError; seq: number } | undefined;
  lastSentAt = performance.now();
  #wake: (() => void) | undefined;
  #drained: (() => void) | undefined;

  constructor(
    readonly channel: Channel<T>,
    readonly matches: FeedFilter<T>,
    readonly keyId: number | undefined,
    from: number,
    /** Whether it counts as a stream (hub.subscribe's alsoOf). */
    readonly counted = true,
  ) {
    this.pos = from;
    this.sentPos = from;
  }

  /** Where a stream stopped now would resume: past everything sent, before anything still queued. */
  get resumePos(): number {
    return this.queue.length === 0 ? this.pos : this.sentPos;
  }

  wake(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** Waits until there is something to take, the heartbeat is due, or `signal` aborts. */
  wait(signal: AbortSignal, ms: number): Promise<void> {
    if (this.queue.length > 0 || this.ended !== undefined || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
      this.#wake = done;
    });
  }

  /** Resolves once the queue is empty or the stream ended. */
  drained(): Promise<void> {
    if (this.queue.length === 0 || this.ended !== undefined) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#drained = resolve;
    });
  }

  /** Called when the queue emptied or the stream ended. */
  emptied(): void {
    const d = this.#drained;
    this.#drained = undefined;
    d?.();
  }
}

export class FeedHub {
  readonly #store: ReadRepositories;
  readonly #limits: Required<{ [K in keyof FeedLimits]: number }>;
  readonly #pollMs: number;
  readonly #maxQueued: number;
  readonly #pageRows: number;
  readonly #channels = new Map<string, Channel<unknown>>();
  /** Every open subscription, attached or replaying. */
  readonly #subs = new Set<Subscription<unknown>>();
  /** The subscriptions that count as streams (a stream of several kinds counts its first one only). */
  #streams = 0;
  readonly #perKey = new Map<number, number>();
  #since: DataVersion | undefined;
  #timer: NodeJS.Timeout | undefined;
  #polling = false;
  #closed = false;
  #epoch: Promise<string> | undefined;
  readonly stats: FeedStats;

  constructor(store: ReadRepositories, limits: FeedLimits = {}, options: { pollMs?: number; maxQueued?: number; pageRows?: number } = {}) {
    this.#store = store;
    this.#limits = { perKey: limits.perKey ?? DEFAULTS.streamsPerKey, total: limits.total ?? DEFAULTS.maxStreams };
    this.#pollMs = options.pollMs ?? FEED_POLL_MS;
    this.#maxQueued = options.maxQueued ?? MAX_QUEUED_MESSAGES;
    this.#pageRows = options.pageRows ?? FEED_PAGE_ROWS;
    const streams = () => this.#streams;
    this.stats = {
      get open() {
        return streams();
      },
      sent: 0,
      endedSlow: 0,
      channelReads: 0,
    };
  }

  /** The collection's rows of `kind` above `after` (FeedRepository's method of the kind's name). */
  #read<T>(kind: FeedKind, collectionId: number, after: number): MaybePromise<FeedEntry<T>[]> {
    return this.#store.feed[kind](collectionId, after, this.#pageRows) as MaybePromise<FeedEntry<T>[]>;
  }

  /** The store's feed epoch (read once: it changes only when the store is rebuilt, and a server is restarted on a new store). */
  epoch(): Promise<string> {
    return (this.#epoch ??= Promise.resolve(this.#store.feed.epoch()).catch((err: unknown) => {
      this.#epoch = undefined;
      throw err;
    }));
  }

  /**
   * A new subscriber of `kind` in a collection, at position `from` (a
   * resume token's) or, when undefined, at the store's last (live).
   * Refused with resource_exhausted past the stream limits, and with
   * unavailable once the server is shutting down. `alsoOf`: the stream's
   * first subscription, when a stream reads several kinds (the activity
   * feed): only the first counts against the limits and is ended with its
   * key, which ends the stream and so the others.
   */
  async subscribe<T>(
    kind: FeedKind,
    collection: { id: number; ref: string },
    matches: FeedFilter<T>,
    keyId: number | undefined,
    from: number | undefined,
    alsoOf?: Subscription<unknown>,
  ): Promise<Subscription<T>> {
    if (this.#closed) throw SHUTTING_DOWN;
    const counted = alsoOf === undefined;
    if (!counted) keyId = undefined;
    if (counted && this.#limits.total > 0 && this.#streams >= this.#limits.total) {
      // Retry-After: the server is busy, not the caller at fault (a client library retries it; the per-key limit it does not).
      throw new ConnectError(`this server has ${this.#limits.total} streams open, its limit; retry later or on another server`, Code.ResourceExhausted, {
        "retry-after": "1",
      });
    }
    const held = keyId === undefined ? 0 : (this.#perKey.get(keyId) ?? 0);
    if (keyId !== undefined && this.#limits.perKey > 0 && held >= this.#limits.perKey) {
      throw new ConnectError(`this API key has ${this.#limits.perKey} streams open, its limit; close one first`, Code.ResourceExhausted);
    }
    const { channel, created } = this.#channel<T>(kind, collection);
    channel.members++;
    // Counted before anything is awaited: concurrent subscribes cannot pass the limits together.
    const sub = new Subscription<T>(channel, matches, keyId, from ?? 0, counted);
    const any = sub as Subscription<unknown>;
    this.#subs.add(any);
    if (counted) this.#streams++;
    if (keyId !== undefined) this.#perKey.set(keyId, held + 1);
    let head: number;
    try {
      head = await channel.ready;
    } catch (err) {
      this.unsubscribe(sub);
      throw storeFailure(err);
    }
    if (this.#closed) {
      this.unsubscribe(sub);
      throw SHUTTING_DOWN;
    }
    if (from === undefined && created) {
      // Live, on a channel just made: its head, read for this subscriber, is what the store holds
      // now (should the channel have read past it already, the replay below reads the rows between).
      sub.pos = sub.sentPos = head;
    } else if (from === undefined) {
      // Live: from what the store holds now (the channel may not have read the latest commit yet).
      try {
        sub.pos = sub.sentPos = await this.#store.feed.head(kind, collection.id);
      } catch (err) {
        this.unsubscribe(sub);
        throw storeFailure(err);
      }
    }
    this.#startPolling();
    void this.#replay(sub);
    return sub;
  }

  /** What the subscriber's stream sends next, waiting for it (a heartbeat once HEARTBEAT_SECONDS pass without a row). */
  async next<T>(sub: Subscription<T>, signal: AbortSignal): Promise<FeedItem<T> | undefined> {
    for (;;) {
      if (signal.aborted) return undefined;
      if (sub.ended !== undefined) return { kind: "end", error: sub.ended.error, seq: sub.ended.seq };
      const entry = sub.queue.shift();
      if (entry !== undefined) {
        sub.sentPos = entry.seq;
        sub.lastSentAt = performance.now();
        this.stats.sent++;
        // A replaying subscriber reads its next page once its queue has room.
        if (sub.queue.length === 0) sub.emptied();
        return { kind: "row", entry };
      }
      const quiet = performance.now() - sub.lastSentAt;
      if (quiet >= HEARTBEAT_SECONDS * 1000) {
        sub.lastSentAt = performance.now();
        sub.sentPos = sub.pos;
        return { kind: "heartbeat", seq: sub.pos };
      }
      await sub.wait(signal, HEARTBEAT_SECONDS * 1000 - quiet);
    }
  }

  /** The subscriber's stream ended (the caller left, or it sent its end): forgets it. Safe to call twice. */
  unsubscribe<T>(sub: Subscription<T>): void {
    const any = sub as Subscription<unknown>;
    if (!this.#subs.delete(any)) return;
    if (sub.counted) this.#streams--;
    if (sub.keyId !== undefined) {
      const n = (this.#perKey.get(sub.keyId) ?? 1) - 1;
      if (n === 0) this.#perKey.delete(sub.keyId);
      else this.#perKey.set(sub.keyId, n);
    }
    this.#end(any, GONE);
    const channel = sub.channel as Channel<unknown>;
    channel.subscribers.delete(any);
    channel.members--;
    this.#dropIfUnused(channel);
    if (this.#subs.size === 0) this.#stopPolling();
  }

  /** Ends every stream of API key `keyId` with `error` (the key was revoked), each with its resume position. */
  endKey(keyId: number, error: ConnectError): void {
    for (const sub of this.#subs) if (sub.keyId === keyId) this.#end(sub, error);
  }

  /** Shutdown: every stream ends with its resume position; new subscribers are refused. */
  close(): void {
    this.#closed = true;
    for (const sub of this.#subs) this.#end(sub, SHUTTING_DOWN);
    this.#stopPolling();
  }

  #end(sub: Subscription<unknown>, error: ConnectError): void {
    if (sub.ended !== undefined) return;
    sub.ended = { error, seq: sub.resumePos };
    sub.queue.length = 0;
    sub.channel.subscribers.delete(sub);
    sub.wake();
    sub.emptied();
  }

  /** The channel of a kind and collection, made (its head read) when none is open. */
  #channel<T>(kind: FeedKind, collection: { id: number; ref: string }): { channel: Channel<T>; created: boolean } {
    const key = `${kind}:${collection.id}`;
    const open = this.#channels.get(key);
    if (open !== undefined) return { channel: open as Channel<T>, created: false };
    const created = new Channel<unknown>(kind, key, collection.ref, collection.id, this.#store.feed.head(kind, collection.id));
    this.#channels.set(key, created);
    // A commit between the head's read and the next poll is read at once.
    created.ready.then(
      () => {
        created.dirty = true;
        void this.#pump(created);
      },
      () => {
        if (this.#channels.get(key) === created) this.#channels.delete(key);
      },
    );
    return { channel: created as Channel<T>, created: true };
  }

  #dropIfUnused(channel: Channel<unknown>): void {
    if (channel.members === 0 && !channel.pumping && this.#channels.get(channel.key) === channel) this.#channels.delete(channel.key);
  }

  /**
   * Reads a resuming subscriber's rows from its position up to its
   * channel's, a page at a time (the next page once the last was sent),
   * then attaches it to the channel, which hands it what follows.
   */
  async #replay<T>(sub: Subscription<T>): Promise<void> {
    const channel = sub.channel;
    try {
      for (;;) {
        if (sub.ended !== undefined) return;
        // In one turn of the loop: no channel read can land between this check and the attach.
        if (sub.pos >= channel.pos!) {
          channel.subscribers.add(sub);
          return;
        }
        const rows: FeedEntry<T>[] = await this.#read(channel.kind, channel.collectionId, sub.pos);
        if (sub.ended !== undefined) return;
        for (const entry of rows) if (sub.matches(entry.row)) sub.queue.push(entry);
        if (rows.length === 0) {
          // Nothing above our position in the store: the channel hands us what comes next.
          channel.subscribers.add(sub);
          return;
        }
        sub.pos = rows[rows.length - 1]!.seq;
        sub.wake();
        await sub.drained();
      }
    } catch (err) {
      this.#end(sub as Subscription<unknown>, storeFailure(err));
    }
  }
  #startPolling(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => void this.#poll(), this.#pollMs);
    this.#timer.unref();
  }

  #stopPolling(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#since = undefined;
  }

  /**
   * A commit this process just made (the ingest API's; write-notices.ts):
   * the channels of its collections read now rather than at the next poll,
   * when it wrote a kind the feeds carry. Commits of other processes are
   * found by the polls.
   */
  readonly onWrite = (notice: WriteNotice): void => {
    // A kind the feeds carry (a transfer also ends its token's listings, which the listings feed sends again).
    if (isFeedKind(notice.kind)) this.poke(notice.collections);
  };

  /** The channels of `collections` (references: domain/chains.ts collectionRef) read now. */
  poke(collections: ReadonlySet<string>): void {
    if (this.#timer === undefined) return;
    // The collections it wrote are known: their channels read at once, without asking the store what changed.
    for (const channel of this.#channels.values()) {
      if (!collections.has(channel.ref)) continue;
      channel.dirty = true;
      void this.#pump(channel);
    }
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const changes = await this.#store.info.changesSince(this.#since);
      const first = this.#since === undefined;
      this.#since = changes.now;
      // The first poll only learns where the store stands: what was committed
      // before it is unknown, so every channel reads (from its position: a
      // read that finds nothing costs one index seek).
      const changed = first || changes.collections === "all" ? undefined : new Set(changes.collections);
      for (const channel of this.#channels.values()) {
        // A channel left dirty (its change came while its head was still being
        // read, or its read failed) reads again now, changed or not: no later
        // change may ever come to wake it.
        if (changed !== undefined && !changed.has(channel.ref) && !channel.dirty) continue;
        channel.dirty = true;
        void this.#pump(channel);
      }
    } catch {
      // The store is unreachable: the next poll tries again; subscribers keep their positions.
    } finally {
      this.#polling = false;
    }
  }

  /** Reads the channel's new rows, once for all its subscribers, and hands each the ones it matches. */
  async #pump(channel: Channel<unknown>): Promise<void> {
    if (channel.pumping || channel.pos === undefined) return;
    let pos: number = channel.pos;
    channel.pumping = true;
    try {
      while (channel.dirty) {
        channel.dirty = false;
        this.stats.channelReads++;
        const rows: FeedEntry<unknown>[] = await this.#read(channel.kind, channel.collectionId, pos);
        if (rows.length === 0) break;
        for (const sub of channel.subscribers) this.#deliver(sub, rows);
        channel.pos = pos = rows[rows.length - 1]!.seq;
        if (rows.length === this.#pageRows) channel.dirty = true;
      }
    } catch {
      // Read again at the next poll.
      channel.dirty = true;
    } finally {
      channel.pumping = false;
      this.#dropIfUnused(channel);
    }
  }

  #deliver(sub: Subscription<unknown>, rows: readonly FeedEntry<unknown>[]): void {
    if (sub.ended !== undefined) return;
    let added = false;
    for (const entry of rows) {
      // Positions decide the seam with a replay: rows it read itself are not sent twice.
      if (entry.seq <= sub.pos) continue;
      sub.pos = entry.seq;
      if (!sub.matches(entry.row)) continue;
      sub.queue.push(entry);
      added = true;
    }
    if (sub.queue.length > this.#maxQueued) {
      this.stats.endedSlow++;
      this.#end(
        sub,
        new ConnectError(
          `the stream fell more than ${this.#maxQueued} messages behind; resume from the last resume token (reading faster, or with narrower filters)`,
          Code.ResourceExhausted,
        ),
      );
      return;
    }
    if (added) sub.wake();
  }
}

const GONE = new ConnectError("the stream ended", Code.Canceled);
const SHUTTING_DOWN = new ConnectError("the server is shutting down; resume from the last resume token on another server", Code.Unavailable);

function storeFailure(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return new ConnectError("the store is unavailable; resume from the last resume token shortly", Code.Unavailable);
}
