import cluster from "node:cluster";
import { type Redis } from "ioredis";
import { type RateLimiterAbstract, RateLimiterCluster, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";

// Request rate limits: each subject (an API key, or the address of a client
// without a valid key) may make `limit` requests per one-second window; the
// whole second's budget may be spent at once (that is the burst). Three
// stores count the windows:
// - memory: one process, synchronous, so a cached response stays synchronous;
// - cluster: the workers of one server ask their primary over IPC
//   (rate-limiter-flexible's cluster limiter), so N workers enforce one limit;
// - redis: every server with the same Redis and prefix shares one count.
// A store that fails (Redis down or hung, the primary slow) never turns
// requests away or holds them: Redis has a deadline and falls back to a
// per-process memory count (RedisWindows), IPC failures admit.

export interface RateState {
  allowed: boolean;
  /** The window's budget (RateLimit-Limit). */
  limit: number;
  /** What is left of it after this request (RateLimit-Remaining). */
  remaining: number;
  /** Milliseconds until the window resets (RateLimit-Reset, Retry-After). */
  resetMs: number;
}

export interface RateWindows {
  /** Counts one request of `subject` against `limit` per second. */
  take(subject: string, limit: number): RateState | Promise<RateState>;
  close?(): Promise<void>;
}

const WINDOW_MS = 1000;
/** Past this many subjects, windows that have ended are dropped. */
const SWEEP_AT = 50_000;

/** One process's windows, counted synchronously. */
export class MemoryWindows implements RateWindows {
  readonly #windows = new Map<string, { start: number; count: number }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  take(subject: string, limit: number): RateState {
    const now = this.#now();
    const start = now - (now % WINDOW_MS);
    let w = this.#windows.get(subject);
    if (w === undefined || w.start !== start) {
      if (w === undefined && this.#windows.size >= SWEEP_AT) this.#sweep(start);
      w = { start, count: 0 };
      this.#windows.set(subject, w);
    }
    w.count++;
    return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetMs: start + WINDOW_MS - now };
  }

  #sweep(current: number): void {
    for (const [k, w] of this.#windows) if (w.start !== current) this.#windows.delete(k);
  }
}

/** Windows kept by a rate-limiter-flexible store: one limiter per distinct limit. */
export class SharedWindows implements RateWindows {
  readonly #limiters = new Map<number, RateLimiterAbstract>();
  readonly #create: (limit: number) => RateLimiterAbstract;
  readonly #onError: (err: unknown) => void;

  constructor(create: (limit: number) => RateLimiterAbstract, onError: (err: unknown) => void) {
    this.#create = create;
    this.#onError = onError;
  }

  async take(subject: string, limit: number): Promise<RateState> {
    let limiter = this.#limiters.get(limit);
    if (limiter === undefined) {
      limiter = this.#create(limit);
      this.#limiters.set(limit, limiter);
    }
    try {
      const res = await limiter.consume(subject);
      return { allowed: true, limit, remaining: res.remainingPoints, resetMs: res.msBeforeNext };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { allowed: false, limit, remaining: 0, resetMs: err.msBeforeNext };
      // The store failed: admit rather than turn every caller away.
      this.#onError(err);
      return { allowed: true, limit, remaining: limit, resetMs: WINDOW_MS };
    }
  }
}

/** Windows summed across the workers of a node:cluster server (RateLimiterClusterMaster in the primary). */
export function clusterWindows(onError: (err: unknown) => void): SharedWindows {
  if (!cluster.isWorker) throw new Error("cluster rate limits need a node:cluster worker");
  return new SharedWindows(
    (limit) => new RateLimiterCluster({ keyPrefix: `rl${limit}`, points: limit, duration: 1, timeoutMs: 2000 }),
    onError,
  );
}

/** How long a request waits for Redis before it is counted in this process instead. */
export const REDIS_DEADLINE_MS = 50;
/** After Redis failed, requests are counted in this process for this long before Redis is tried again. */
const REDIS_RETRY_MS = 1000;
/** At most one warning per this long while Redis keeps failing. */
export const WARN_EVERY_MS = 10_000;

export interface RedisWindowsOptions {
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  deadlineMs?: number;
  now?: () => number;
}

/**
 * Windows shared by every server using this Redis and prefix. Every Redis
 * call has a deadline: a Redis that is down, unreachable or hung (a stopped
 * process answers nothing) costs a request at most `deadlineMs` once a
 * second; meanwhile requests are counted in this process (each server then
 * enforces the limit on its own), a warning is logged, the fallbacks are
 * counted for the metrics, and readiness reports "degraded".
 */
export class RedisWindows implements RateWindows {
  readonly #limiters = new Map<number, RateLimiterRedis>();
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #fallback: MemoryWindows;
  readonly #log: RedisWindowsOptions["log"];
  readonly #deadlineMs: number;
  readonly #now: () => number;
  /** When Redis last failed; undefined while it answers. */
  #failedAt: number | undefined;
  #warnedAt = -Infinity;
  /** Requests counted in this process because Redis did not answer in time. */
  fallbacks = 0;

  constructor(client: Redis, prefix: string, options: RedisWindowsOptions) {
    this.#client = client;
    this.#prefix = prefix;
    this.#log = options.log;
    this.#deadlineMs = options.deadlineMs ?? REDIS_DEADLINE_MS;
    this.#now = options.now ?? Date.now;
    this.#fallback = new MemoryWindows(this.#now);
  }

  take(subject: string, limit: number): RateState | Promise<RateState> {
    if (this.#failedAt !== undefined && this.#now() - this.#failedAt < REDIS_RETRY_MS) return this.#counted(subject, limit);
    return this.#consume(subject, limit);
  }

  /** Why the limits are not shared right now; undefined while Redis answers. */
  degradedReason(): string | undefined {
    if (this.#failedAt === undefined) return undefined;
    return `redis did not answer within ${this.#deadlineMs} ms (last at ${new Date(this.#failedAt).toISOString()}): rate limits are counted per process`;
  }

  async #consume(subject: string, limit: number): Promise<RateState> {
    let limiter = this.#limiters.get(limit);
    if (limiter === undefined) {
      limiter = new RateLimiterRedis({
        storeClient: this.#client,
        keyPrefix: `${this.#prefix}:${limit}`,
        points: limit,
        duration: 1,
        rejectIfRedisNotReady: true,
      });
      this.#limiters.set(limit, limiter);
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.#deadlineMs} ms`)), this.#deadlineMs);
    });
    try {
      const res = await Promise.race([limiter.consume(subject), deadline]);
      this.#recovered();
      return { allowed: true, limit, remaining: res.remainingPoints, resetMs: res.msBeforeNext };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        this.#recovered();
        return { allowed: false, limit, remaining: 0, resetMs: err.msBeforeNext };
      }
      this.#failed(err);
      return this.#counted(subject, limit);
    } finally {
      clearTimeout(timer);
    }
  }

  #counted(subject: string, limit: number): RateState {
    this.fallbacks++;
    return this.#fallback.take(subject, limit);
  }

  #failed(err: unknown): void {
    const now = this.#now();
    this.#failedAt = now;
    if (now - this.#warnedAt >= WARN_EVERY_MS) {
      this.#warnedAt = now;
      this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, "redis rate-limit store failed: counting per process until it answers");
    }
  }

  #recovered(): void {
    if (this.#failedAt === undefined) return;
    this.#failedAt = undefined;
    this.#warnedAt = -Infinity;
    this.#log.info({}, "redis rate-limit store answers again: limits are shared");
  }
}
