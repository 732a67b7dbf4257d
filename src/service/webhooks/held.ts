import type { FeedPositions, WebhookAttemptRecord, WebhookProgress, WebhookRecord } from "../../store/ports/webhooks.js";

// A webhook as the dispatcher holds it while its lease lasts (dispatcher.ts):
// its positions in memory, the batch out or waiting, what the next commit
// writes, and its figures. Shared by the dispatcher's parts: the lease round
// (leases.ts) makes them, the batch reader (batches.ts) reads their events,
// the commit (commits.ts) writes what they delivered.

/** Where the dispatcher says what went wrong (the server's logger; from a worker thread, messages to it). */
export interface WebhookLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface WebhookStats {
  id: string;
  /** How far behind its collections' newest events it is, in feed positions (largest over its kinds). */
  lagPositions: number;
  /** Seconds since it was last caught up (0: caught up). */
  lagSeconds: number;
  delivered: number;
  failed: number;
  events: number;
}

export interface Batch {
  id: string;
  body: string;
  events: number;
  first: number;
  last: number;
  positions: FeedPositions;
  /** More events wait behind this batch. */
  more: boolean;
  attempt: number;
}

/** What the next commit writes of a webhook. */
export interface Pending {
  positions?: FeedPositions;
  attempts: WebhookAttemptRecord[];
  state?: WebhookProgress["state"];
}

export interface Held {
  rec: WebhookRecord;
  positions: FeedPositions;
  batch: Batch | undefined;
  /** Reading or sending now. */
  busy: boolean;
  retryAt: number;
  firstFailureAt: number | undefined;
  /** New events may be waiting (a commit to its collections, a backlog, a fresh lease). */
  dirty: boolean;
  /** Its collections' ids, once the store knows them. */
  ids: Map<string, number>;
  behindSince: number | undefined;
  lagPositions: number;
  pending: Pending;
  /** Attempts logged since its log was last cut back. */
  untrimmed: number;
  stats: WebhookStats;
  /** Dropped from this process (lease lost, paused, deleted): its result is not written. */
  gone: boolean;
  /** Its first batch here may be one another process (or this one before a restart) was retrying: its log says which attempt comes next. */
  fromLog: boolean;
  /** When its failures were last logged, and how many since. */
  warnedAt: number;
  unwarned: number;
}

/** A webhook's log is cut back to its last WEBHOOK_LOG_SIZE attempts once this many more were written (and at its first commit here). */
export const TRIM_EVERY = 100;

/** A webhook newly held by this process, from its stored record. */
export function heldFrom(rec: WebhookRecord, stats: WebhookStats): Held {
  return {
    rec,
    positions: { ...rec.positions },
    batch: undefined,
    busy: false,
    retryAt: 0,
    firstFailureAt: undefined,
    dirty: true,
    ids: new Map(),
    behindSince: undefined,
    lagPositions: 0,
    pending: { attempts: [] },
    untrimmed: TRIM_EVERY,
    stats,
    gone: false,
    fromLog: true,
    warnedAt: 0,
    unwarned: 0,
  };
}

/** A count of deliveries in flight against a bound (all of this process's, or one destination's). */
export class Slots {
  #used = 0;
  constructor(readonly size: number) {}
  get free(): boolean {
    return this.#used < this.size;
  }
  take(): void {
    this.#used++;
  }
  give(): void {
    this.#used--;
  }
}
