import { DEFAULTS } from "../../config/settings.js";
import { collectionHeads } from "./positions.js";
import type { FeedEntry, FeedKind } from "../../store/ports/feed.js";
import type { ReadRepositories } from "../../store/ports/reads.js";
import type { FeedPositions, WebhookAttemptRecord, WebhookProgress, WebhookRecord, WebhookStore } from "../../store/ports/webhooks.js";
import { nowSeconds } from "../../domain/formats.js";
import type { DeliveryClient } from "./delivery.js";
import { batchBody, eventJson, messageId } from "./payload.js";
import { backoffMs, outcomeOf, retryAfterMs } from "./retry.js";

// Delivers the webhooks this process holds a lease on. Every serving
// process runs one (every worker, every server on one PostgreSQL): each
// asks the store for leases every LEASE_EVERY_MS, so each webhook is
// delivered by one process at a time, and taken over by another within
// the lease's length when its holder dies.
//
// A webhook's position is one feed position per kind (positions within a
// kind grow in commit order on both engines: ports.ts FeedEntry). A batch is
// its collections' events above those positions, merged in position order;
// one batch per webhook is in flight at a time, and sent again, the same
// bytes under the same webhook-id, until the receiver takes it. Only then
// do the positions move, and they are written to the store with the next
// commit (every tick): a crash between a receipt and that commit sends the
// batch again (duplicates only across a crash; event ids let receivers
// drop them). A slow or dead receiver holds its own webhook's batch, and at
// most `perDestination` of the `concurrency` connections: never the
// others', nor ingest, which this only reads behind.

/** Where the dispatcher says what went wrong (the server's logger; from a worker thread, messages to it). */
export interface WebhookLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface DispatcherOptions {
  /** This process's name in leases: unique per process. */
  holder: string;
  client: DeliveryClient;
  log: WebhookLog;
  /** How often to look for new events (ms). */
  pollMs?: number;
  /** A lease's length (ms): a dead holder's webhooks are taken over after it. */
  leaseMs?: number;
  /** How often leases are renewed and webhooks re-read (pause, replay, rotate, revoked keys). */
  leaseEveryMs?: number;
  /** Events per batch at most. */
  batchSize?: number;
  /** How long a batch is retried before the webhook is marked failing (ms). */
  retryForMs?: number;
  /** Deliveries in flight on this process, and per destination (scheme, host, port). */
  concurrency?: number;
  perDestination?: number;
  /** How often the feed's position is marked with the time (replay --from TIME), and how long marks are kept (s). */
  markEveryMs?: number;
  markKeepSeconds?: number;
  /** The longest an attempt takes (the client's timeout): one is started only while the lease outlasts it. */
  attemptMs?: number;
  /** Backoff's randomness (tests). */
  random?: () => number;
}

const BATCH_SIZE = 100;
const LEASE_EVERY_MS = 1000;
const POLL_MS = 50;
const MARK_EVERY_MS = 10_000;
/** A webhook's log is cut back to its last WEBHOOK_LOG_SIZE attempts once this many more were written (and at its first commit here). */
const TRIM_EVERY = 100;
/** How long delivered positions may wait to be written, gathered into one transaction. */
const COMMIT_EVERY_MS = 100;
/** Marks kept: replay --from TIME reaches back this far (seconds). */
export const MARK_KEEP_SECONDS = 30 * 86_400;
/** Leases a process takes per round beyond those it holds. */
const NEW_LEASES_PER_ROUND = 1000;

/** One webhook's delivery figures, for metrics and GetWebhook. */
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

interface Batch {
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

interface Held {
  rec: WebhookRecord;
  positions: FeedPositions;
  batch: Batch | undefined;
  /** Reading or sending now. */
  busy: boolean;
  retryAt: number;
  firstFailureAt: number | undefined;
  /** New events may be waiting (a commit to its collections, a backlog, a fresh lease). */
  dirty: boolean;
  ids: Map<string, number>;
  behindSince: number | undefined;
  lagPositions: number;
  pending: { positions?: FeedPositions; attempts: WebhookAttemptRecord[]; state?: WebhookProgress["state"] };
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

/** A failing webhook is logged at most this often (ms), with the failures in between counted. */
const WARN_EVERY_MS = 60_000;

class Slots {
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

export class WebhookDispatcher {
  readonly #store: ReadRepositories;
  readonly #hooks: WebhookStore;
  readonly #o: Required<Omit<DispatcherOptions, "log" | "client" | "holder">>;
  readonly #client: DeliveryClient;
  readonly #log: DispatcherOptions["log"];
  readonly holder: string;
  readonly #held = new Map<string, Held>();
  readonly #all: Slots;
  readonly #perDestination = new Map<string, Slots>();
  readonly #events = new Map<number, string>();
  /** Webhooks no longer delivered here whose new state (410, failing, key revoked) the next commit writes. */
  readonly #dropped = new Set<Held>();
  #timer: NodeJS.Timeout | undefined;
  #nextLease = 0;
  #nextMark = 0;
  #since: Parameters<ReadRepositories["info"]["changesSince"]>[0];
  #ticking = false;
  #committing: Promise<void> | undefined;
  #closed = false;
  #inflight = new Set<Promise<void>>();
  #epoch: string | undefined;
  /** Until when this process's leases hold, as of its last lease round (its own clock, taken before asking: never late). */
  #leasedUntil = 0;
  /**
   * The feed reads made since the last look at the store, shared by the
   * webhooks on one collection (ten webhooks on a collection, caught up,
   * read the same rows). Cleared at each tick once the store said what
   * changed: a commit after a read is seen by the next tick, which reads it.
   */
  #reads = new Map<string, Promise<FeedEntry<unknown>[]>>();
  /** Every webhook seen, for stats after it moved elsewhere (metrics keep counters monotone while this process lives). */
  readonly #stats = new Map<string, WebhookStats>();

  constructor(store: ReadRepositories, hooks: WebhookStore, options: DispatcherOptions) {
    this.#store = store;
    this.#hooks = hooks;
    this.#client = options.client;
    this.#log = options.log;
    this.holder = options.holder;
    this.#o = {
      pollMs: options.pollMs ?? POLL_MS,
      leaseMs: options.leaseMs ?? DEFAULTS.webhookLeaseSeconds,
      leaseEveryMs: options.leaseEveryMs ?? Math.min(LEASE_EVERY_MS, Math.floor((options.leaseMs ?? DEFAULTS.webhookLeaseSeconds) / 4)),
      attemptMs: options.attemptMs ?? DEFAULTS.webhookTimeout,
      batchSize: options.batchSize ?? BATCH_SIZE,
      retryForMs: options.retryForMs ?? DEFAULTS.webhookRetryHours,
      concurrency: options.concurrency ?? DEFAULTS.webhookConcurrency,
      perDestination: options.perDestination ?? DEFAULTS.webhookPerDestination,
      markEveryMs: options.markEveryMs ?? MARK_EVERY_MS,
      markKeepSeconds: options.markKeepSeconds ?? MARK_KEEP_SECONDS,
      random: options.random ?? Math.random,
    };
    this.#all = new Slots(this.#o.concurrency);
  }

  start(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => void this.#tick(), this.#o.pollMs);
    this.#timer.unref();
    void this.#tick();
  }

  /** This process committed to `collections` (lower-case addresses): their webhooks read now, not at the next poll. */
  poke(collections: ReadonlySet<string>): void {
    let any = false;
    for (const h of this.#held.values()) {
      if (h.rec.collections.some((c) => collections.has(c))) {
        h.dirty = true;
        any = true;
      }
    }
    if (any) void this.#tick();
  }

  /** The figures of every webhook this process has delivered. */
  stats(): WebhookStats[] {
    const now = Date.now();
    for (const h of this.#held.values()) {
      h.stats.lagPositions = h.lagPositions;
      h.stats.lagSeconds = h.behindSince === undefined ? 0 : Math.floor((now - h.behindSince) / 1000);
    }
    return [...this.#stats.values()];
  }

  /** Stops delivering: waits for the attempts in flight (up to `deadlineMs`), writes every position, gives the leases back. */
  async close(deadlineMs = 5000): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.race([Promise.allSettled([...this.#inflight]), new Promise((r) => setTimeout(r, deadlineMs).unref())]);
    await this.#committing;
    await this.#commit().catch((err: unknown) => this.#log.warn({ err: String(err) }, "webhooks: positions not written at shutdown; the last batches will be sent again"));
    await this.#hooks.release(this.holder).catch(() => {});
    this.#client.close();
  }

  async #tick(): Promise<void> {
    if (this.#ticking || this.#closed) return;
    this.#ticking = true;
    try {
      const now = Date.now();
      if (now >= this.#nextLease) {
        this.#nextLease = now + this.#o.leaseEveryMs;
        await this.#leaseRound();
      }
      if (now >= this.#nextMark) {
        this.#nextMark = now + this.#o.markEveryMs;
        await this.#hooks.mark(Math.floor(now / 1000), await this.#store.feed.last(), this.#o.markKeepSeconds);
      }
      if (this.#held.size === 0) return;
      const changes = await this.#store.info.changesSince(this.#since);
      const first = this.#since === undefined;
      this.#since = changes.now;
      this.#reads = new Map();
      const changed = first || changes.collections === "all" ? undefined : new Set(changes.collections);
      for (const h of this.#held.values()) {
        if (changed === undefined || h.rec.collections.some((c) => changed.has(c))) {
          h.dirty = true;
          // A collection it names that the store did not know at the last look may have just appeared.
          if (h.ids.size < h.rec.collections.length) await this.#resolveCollections(h);
        }
        this.#maybeSend(h, now);
      }
      this.#kickCommit();
    } catch (err) {
      this.#log.warn({ err: String(err) }, "webhooks: the store could not be read; trying again");
    } finally {
      this.#ticking = false;
    }
  }

  async #leaseRound(): Promise<void> {
    const asked = Date.now();
    const leased = await this.#hooks.lease(this.holder, this.#o.leaseMs, NEW_LEASES_PER_ROUND);
    this.#leasedUntil = asked + this.#o.leaseMs;
    const epoch = (this.#epoch ??= await this.#store.feed.epoch());
    const live = await this.#hooks.liveKeys([...new Set(leased.map((r) => r.keyId))]);
    const seen = new Set<string>();
    for (const rec of leased) {
      seen.add(rec.id);
      let h = this.#held.get(rec.id);
      if (rec.epoch !== epoch) {
        // The store was rebuilt (another feed): its old positions name nothing here. Start from its newest events.
        const heads = await collectionHeads(this.#store, rec.collections);
        await this.#hooks.replay(rec.id, epoch, heads);
        this.#log.warn({ webhook: rec.id }, "webhooks: the store's feed changed (a rebuilt store); delivery starts from its newest events");
        if (h !== undefined) h.gone = true;
        this.#held.delete(rec.id);
        continue;
      }
      if (h === undefined || h.rec.generation !== rec.generation) {
        if (h !== undefined) h.gone = true;
        const stats = this.#stats.get(rec.id) ?? { id: rec.id, lagPositions: 0, lagSeconds: 0, delivered: 0, failed: 0, events: 0 };
        this.#stats.set(rec.id, stats);
        h = {
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
        this.#held.set(rec.id, h);
      } else {
        // Same generation: the URL, secrets or collections may have changed; the positions in memory are ahead of the stored ones.
        h.rec = rec;
      }
      if (!live.has(rec.keyId)) {
        this.#drop(h, { state: "disabled", reason: `its API key ${rec.keyId} was revoked` });
        continue;
      }
      await this.#resolveCollections(h);
      await this.#measureLag(h);
    }
    for (const [id, h] of this.#held) {
      if (!seen.has(id)) {
        h.gone = true;
        this.#held.delete(id);
        // Paused or deleted between a delivery and the commit of its position:
        // written still (where the store's lease and generation allow), or a
        // resume would send the delivered batch again.
        this.#dropped.add(h);
        this.#kickCommit();
      }
    }
  }

  async #resolveCollections(h: Held): Promise<void> {
    for (const address of h.rec.collections) {
      if (h.ids.has(address)) continue;
      const id = await this.#store.collections.collectionId(address);
      if (id === undefined) continue;
      h.ids.set(address, id);
      // A collection that just appeared: its first events may already be committed.
      h.dirty = true;
    }
  }

  async #measureLag(h: Held): Promise<void> {
    let lag = 0;
    for (const kind of h.rec.kinds) {
      for (const id of h.ids.values()) lag = Math.max(lag, (await this.#store.feed.head(kind, id)) - h.positions[kind]);
    }
    h.lagPositions = lag;
    if (lag > 0) h.behindSince ??= Date.now();
    else h.behindSince = undefined;
  }

  #slots(url: string): Slots {
    const origin = new URL(url).origin;
    let s = this.#perDestination.get(origin);
    if (s === undefined) {
      s = new Slots(this.#o.perDestination);
      this.#perDestination.set(origin, s);
    }
    return s;
  }

  #maybeSend(h: Held, now: number): void {
    if (h.busy || h.gone || this.#closed) return;
    if (h.batch === undefined && !h.dirty) return;
    if (h.batch !== undefined && now < h.retryAt) return;
    // An attempt must end before the lease could pass to another process (renewals late: a slow store), or two would send.
    if (now + this.#o.attemptMs >= this.#leasedUntil) return;
    const dest = this.#slots(h.rec.url);
    if (!this.#all.free || !dest.free) return;
    h.busy = true;
    this.#all.take();
    dest.take();
    const run = this.#send(h).finally(() => {
      h.busy = false;
      this.#all.give();
      dest.give();
      this.#inflight.delete(run);
    });
    this.#inflight.add(run);
  }

  async #send(h: Held): Promise<void> {
    try {
      if (h.batch === undefined) {
        h.dirty = false;
        h.batch = await this.#read(h);
        if (h.batch === undefined) {
          h.lagPositions = 0;
          h.behindSince = undefined;
          return;
        }
        if (h.fromLog) {
          // The same batch failing before a restart or a takeover: its attempts go on counting.
          h.fromLog = false;
          const [last] = await this.#hooks.attempts(h.rec.id, 1);
          if (last !== undefined && last.messageId === h.batch.id && outcomeOf(last.status).kind !== "delivered") h.batch.attempt = last.attempt + 1;
        }
        h.behindSince ??= Date.now();
      }
      const batch = h.batch;
      const secrets = h.rec.previousSecret !== null && (h.rec.previousUntil ?? 0) > Date.now() ? [h.rec.secret, h.rec.previousSecret] : [h.rec.secret];
      const result = await this.#client.post(h.rec.url, batch.id, secrets, batch.body);
      const attempt: WebhookAttemptRecord = {
        at: Date.now(),
        messageId: batch.id,
        events: batch.events,
        firstPosition: batch.first,
        lastPosition: batch.last,
        status: result.status,
        latencyMs: result.latencyMs,
        error: result.error,
        attempt: batch.attempt,
      };
      const outcome = outcomeOf(result.status);
      if (h.gone) {
        // Dropped here while the batch was out (paused, deleted, a replay, a lost lease): a receipt is
        // still written where this process may (the store checks the lease and the generation), so a
        // pause does not send the batch again.
        if (outcome.kind === "delivered" && h.pending.state === undefined) {
          h.pending.attempts.push(attempt);
          h.pending.positions = batch.positions;
          this.#dropped.add(h);
          this.#kickCommit();
        }
        return;
      }
      h.pending.attempts.push(attempt);
      if (outcome.kind === "delivered") {
        h.positions = batch.positions;
        h.pending.positions = batch.positions;
        h.batch = undefined;
        h.firstFailureAt = undefined;
        h.stats.delivered++;
        h.stats.events += batch.events;
        if (batch.more) h.dirty = true;
        else {
          h.behindSince = undefined;
          h.lagPositions = 0;
        }
        // The next batch now rather than at the next tick: a backlog drains at the receiver's pace.
        if (h.dirty) setImmediate(() => this.#maybeSend(h, Date.now()));
        this.#kickCommit();
        return;
      }
      h.stats.failed++;
      if (outcome.kind === "gone") {
        this.#drop(h, { state: "disabled", reason: "the receiver answered 410 Gone" });
        return;
      }
      const now = Date.now();
      h.firstFailureAt ??= now;
      if (now - h.firstFailureAt >= this.#o.retryForMs) {
        this.#drop(h, { state: "failing", reason: `no delivery for ${formatDuration(this.#o.retryForMs)}; last: ${result.error}` });
        return;
      }
      const wait = Math.max(backoffMs(batch.attempt, this.#o.random), retryAfterMs(result.retryAfter, now) ?? 0);
      h.retryAt = now + wait;
      h.unwarned++;
      if (now - h.warnedAt >= WARN_EVERY_MS) {
        // The URL's origin only: its path or query may hold the receiver's own token.
        this.#log.warn(
          { webhook: h.rec.id, destination: new URL(h.rec.url).origin, attempt: batch.attempt, failures: h.unwarned, error: result.error, retryInMs: wait },
          "webhooks: delivery failed; retrying",
        );
        h.warnedAt = now;
        h.unwarned = 0;
      }
      batch.attempt++;
    } catch (err) {
      // The store could not be read: tried again at a later tick.
      h.dirty = true;
      this.#log.warn({ webhook: h.rec.id, err: String(err) }, "webhooks: could not read the webhook's events; trying again");
    }
  }

  #feedRead(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): Promise<FeedEntry<unknown>[]> {
    const key = `${kind}:${collectionIds.join(",")}:${after}:${limit}`;
    let read = this.#reads.get(key);
    if (read === undefined) {
      read = Promise.resolve(this.#store.feed.merged(kind, collectionIds, after, limit));
      read.catch(() => this.#reads.delete(key));
      if (this.#reads.size > 10_000) this.#reads.clear();
      this.#reads.set(key, read);
    }
    return read;
  }

  /** The next batch of the webhook's events above its positions, or undefined when it has none. */
  async #read(h: Held): Promise<Batch | undefined> {
    const size = this.#o.batchSize;
    const rows: { kind: FeedKind; entry: FeedEntry<unknown> }[] = [];
    let more = false;
    const ids = [...h.ids.values()].sort((a, b) => a - b);
    for (const kind of h.rec.kinds) {
      // Its collections in one read (one snapshot): positions are per kind, so a commit seen
      // in one collection but not in another read before it would be skipped for ever.
      const read = await this.#feedRead(kind, ids, h.positions[kind], size);
      for (const entry of read) rows.push({ kind, entry });
      if (read.length === size) more = true;
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
    const epoch = this.#epoch!;
    const texts = rows.map(({ kind, entry }) => {
      positions[kind] = entry.seq;
      if (kind === "offers") return eventJson(epoch, kind, entry, now);
      let text = this.#events.get(entry.seq);
      if (text === undefined) {
        text = eventJson(epoch, kind, entry, now);
        if (this.#events.size >= 100_000) this.#events.clear();
        this.#events.set(entry.seq, text);
      }
      return text;
    });
    const first = rows[0]!.entry.seq;
    const last = rows[rows.length - 1]!.entry.seq;
    return {
      id: messageId(h.rec.id, h.rec.generation, first, last),
      body: batchBody(h.rec.id, texts, new Date()),
      events: rows.length,
      first,
      last,
      positions,
      more,
      attempt: 1,
    };
  }

  /** Stops delivering `h` here and writes its new state with the next commit. */
  #drop(h: Held, state: NonNullable<WebhookProgress["state"]>): void {
    this.#log.warn({ webhook: h.rec.id, state: state.state, reason: state.reason }, "webhooks: delivery stopped");
    h.pending.state = state;
    h.gone = true;
    this.#held.delete(h.rec.id);
    this.#dropped.add(h);
    this.#kickCommit();
  }

  /**
   * Writes what was delivered within COMMIT_EVERY_MS, in one transaction for
   * every webhook: a receipt written a little later costs at most a
   * duplicate after a crash; one transaction per batch would cost a sync of
   * the webhooks' store per batch.
   */
  #kickCommit(): void {
    if (this.#committing !== undefined) return;
    this.#committing = new Promise<void>((resolve) => setTimeout(resolve, this.#closed ? 0 : COMMIT_EVERY_MS).unref())
      .then(() => this.#commit())
      .catch((err: unknown) => this.#log.warn({ err: String(err) }, "webhooks: positions not written; trying again"))
      .finally(() => {
        this.#committing = undefined;
      });
  }

  /** Writes every held webhook's pending positions, attempts and states in one transaction. */
  async #commit(): Promise<void> {
    const progress: WebhookProgress[] = [];
    const taken: [Held, Held["pending"]][] = [];
    // Webhooks no longer held that still have something to write (a 410, failing, a revoked key, a
    // receipt that came after a pause): each its own entry, as the same id held again (a new generation) is another.
    const candidates = [...this.#held.values(), ...this.#dropped];
    this.#dropped.clear();
    for (const h of candidates) {
      const p = h.pending;
      if (p.positions === undefined && p.attempts.length === 0 && p.state === undefined) continue;
      taken.push([h, p]);
      h.pending = { attempts: [] };
      h.untrimmed += p.attempts.length;
      const trim = h.untrimmed >= TRIM_EVERY;
      if (trim) h.untrimmed = 0;
      progress.push({
        id: h.rec.id,
        generation: h.rec.generation,
        attempts: p.attempts,
        ...(p.positions ? { positions: p.positions } : {}),
        ...(p.state ? { state: p.state } : {}),
        ...(trim ? { trim } : {}),
      });
    }
    if (progress.length === 0) return;
    try {
      const lost = await this.#hooks.commit(this.holder, progress);
      for (const id of lost) {
        const h = this.#held.get(id);
        if (h !== undefined) {
          h.gone = true;
          this.#held.delete(id);
        }
        this.#log.warn({ webhook: id }, "webhooks: lease lost (another process holds it now); its last batch may be sent again");
      }
    } catch (err) {
      // Not written: merged back so the next commit writes it (newer positions win).
      for (const [h, p] of taken) {
        h.pending = {
          attempts: [...p.attempts, ...h.pending.attempts],
          ...(h.pending.positions ?? p.positions ? { positions: (h.pending.positions ?? p.positions)! } : {}),
          ...(h.pending.state ?? p.state ? { state: (h.pending.state ?? p.state)! } : {}),
        };
        if (this.#held.get(h.rec.id) !== h) this.#dropped.add(h);
      }
      throw err;
    }
  }


}

function formatDuration(ms: number): string {
  return ms >= 3_600_000 ? `${Math.round(ms / 360_000) / 10} h` : `${Math.round(ms / 1000)} s`;
}
