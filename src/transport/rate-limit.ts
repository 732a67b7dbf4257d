import cluster from "node:cluster";
import { type Redis } from "ioredis";
import {
  type RateLimiterAbstract,
  RateLimiterCluster,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from "rate-limiter-flexible";

// Request rate limits: each subject (an API key, or the address of a client
// without a valid key) may make `limit` requests per one-second window; the
// whole second's budget may be spent at once (that is the burst). Three
// stores count the windows:
// - memory: one process, synchronous, so a cached response stays synchronous;
// - cluster: the workers of one server ask their primary over IPC
//   (rate-limiter-flexible's cluster limiter), so N workers enforce one limit;
// - redis: every server with the same Redis and prefix shares one count.
// A store that fails (Redis down, the primary slow) never turns requests
// away: Redis falls back to a per-process memory count, IPC failures admit.

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

/** Windows shared by every server using this Redis and prefix; a memory count stands in while Redis fails. */
export function redisWindows(client: Redis, prefix: string, onError: (err: unknown) => void): SharedWindows {
  return new SharedWindows(
    (limit) =>
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix: `${prefix}:${limit}`,
        points: limit,
        duration: 1,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ points: limit, duration: 1 }),
      }),
    onError,
  );
}
