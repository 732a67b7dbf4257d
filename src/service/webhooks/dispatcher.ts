import { DEFAULTS } from "../../config/settings.js";
import type { ReadRepositories } from "../../store/ports/reads.js";
import type { WebhookAttemptRecord, WebhookProgress, WebhookStore } from "../../store/ports/webhooks.js";
import { BatchReader } from "./batches.js";
import { Commits } from "./commits.js";
import type { DeliveryClient } from "./delivery.js";
import { type Held, Slots, type WebhookLog, type WebhookStats } from "./held.js";
import { Leases } from "./leases.js";
import { backoffMs, outcomeOf, retryAfterMs } from "./retry.js";

// Delivers the webhooks this process holds a lease on. Every serving
// process runs one (every worker, every server on one PostgreSQL): each
// asks the store for leases every LEASE_EVERY_MS, so each webhook is
// delivered by one process at a time, and taken over by another within
// the lease's length when its holder dies.
//
// A webhook's position is one feed position per kind (positions within a
// kind grow in commit order on both engines: store/ports/feed.ts FeedEntry). A batch is
// its collections' events above those positions, merged in position order;
// one batch per webhook is in flight at a time, and sent again, the same
// bytes under the same webhook-id, until the receiver takes it. Only then
// do the positions move, and they are written to the store with the next
// commit (every tick): a crash between a receipt and that commit sends the
// batch again (duplicates only across a crash; event ids let receivers
// drop them). A slow or dead receiver holds its own webhook's batch, and at
// most `perDestination` of the `concurrency` connections: never the
// others', nor ingest, which this only reads behind.
//
// In parts: the lease round (leases.ts) says which webhooks this process
// holds, the batch reader (batches.ts) makes each one's next batch, the
// commit (commits.ts) writes what was delivered; this class sends, retries
// and stops webhooks, and paces the whole by ticks.

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
/** Marks kept: replay --from TIME reaches back this far (seconds). */
export const MARK_KEEP_SECONDS = 30 * 86_400;
/** A failing webhook is logged at most this often (ms), with the failures in between counted. */
const WARN_EVERY_MS = 60_000;

export class WebhookDispatcher {
  readonly #store: ReadRepositories;
  readonly #hooks: WebhookStore;
  readonly #o: Required<Omit<DispatcherOptions, "log" | "client" | "holder">>;
  readonly #client: DeliveryClient;
  readonly #log: WebhookLog;
  readonly holder: string;
  /** What this process holds now, by webhook id (the lease round keeps it; the commit drops a lost lease). */
  readonly #held = new Map<string, Held>();
  readonly #leases: Leases;
  readonly #batches: BatchReader;
  readonly #commits: Commits;
  readonly #all: Slots;
  readonly #perDestination = new Map<string, Slots>();
  #timer: NodeJS.Timeout | undefined;
  #nextLease = 0;
  #nextMark = 0;
  #since: Parameters<ReadRepositories["info"]["changesSince"]>[0];
  #ticking = false;
  #closed = false;
  #inflight = new Set<Promise<void>>();

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
    this.#leases = new Leases(store, hooks, this.holder, this.#o.leaseMs, this.#log);
    this.#batches = new BatchReader(store, this.#o.batchSize);
    this.#commits = new Commits(hooks, this.holder, this.#held, this.#log);
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
    return [...this.#leases.stats.values()];
  }

  /** Stops delivering: waits for the attempts in flight (up to `deadlineMs`), writes every position, gives the leases back. */
  async close(deadlineMs = 5000): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await Promise.race([Promise.allSettled([...this.#inflight]), new Promise((r) => setTimeout(r, deadlineMs).unref())]);
    await this.#commits.settled();
    await this.#commits.commit().catch((err: unknown) => this.#log.warn({ err: String(err) }, "webhooks: positions not written at shutdown; the last batches will be sent again"));
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
        await this.#leases.round(this.#held, {
          drop: (h, state) => this.#drop(h, state),
          released: (h) => {
            this.#commits.keep(h);
            this.#kickCommit();
          },
        });
      }
      if (now >= this.#nextMark) {
        this.#nextMark = now + this.#o.markEveryMs;
        await this.#hooks.mark(Math.floor(now / 1000), await this.#store.feed.last(), this.#o.markKeepSeconds);
      }
      if (this.#held.size === 0) return;
      const changes = await this.#store.info.changesSince(this.#since);
      const first = this.#since === undefined;
      this.#since = changes.now;
      this.#batches.forget();
      const changed = first || changes.collections === "all" ? undefined : new Set(changes.collections);
      for (const h of this.#held.values()) {
        if (changed === undefined || h.rec.collections.some((c) => changed.has(c))) {
          h.dirty = true;
          // A collection it names that the store did not know at the last look may have just appeared.
          if (h.ids.size < h.rec.collections.length) await this.#leases.resolveCollections(h);
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
    if (now + this.#o.attemptMs >= this.#leases.leasedUntil) return;
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
        h.batch = await this.#batches.read(h, this.#leases.epoch!);
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
          this.#commits.keep(h);
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

  /** Stops delivering `h` here and writes its new state with the next commit. */
  #drop(h: Held, state: NonNullable<WebhookProgress["state"]>): void {
    this.#log.warn({ webhook: h.rec.id, state: state.state, reason: state.reason }, "webhooks: delivery stopped");
    h.pending.state = state;
    h.gone = true;
    this.#held.delete(h.rec.id);
    this.#commits.keep(h);
    this.#kickCommit();
  }

  #kickCommit(): void {
    this.#commits.kick(this.#closed);
  }
}

function formatDuration(ms: number): string {
  return ms >= 3_600_000 ? `${Math.round(ms / 360_000) / 10} h` : `${Math.round(ms / 1000)} s`;
}
