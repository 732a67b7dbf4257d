import { Code, ConnectError } from "@connectrpc/connect";
import { type KeyGrant, type KeyVerifier, requireApiKey } from "./guards.js";
import type { RateState, RateWindows } from "./rate-limit.js";
import { type MaybePromise, settle } from "../store/repositories.js";

// The first thing every request meets, on every protocol, before its body
// is read: the API key, then the rate limit of that key, or, for a request
// without a valid key, the limit of its client address (a flood of bad keys
// must not reach the store unbounded).

export interface RateLimits {
  /** Requests per second of a key without a limit of its own; 0: unlimited. */
  keyRate: number;
  /** Requests per second per client address without a valid key; 0: unlimited. */
  anonymousRate: number;
  windows: RateWindows;
}

export interface Admitted {
  grant?: KeyGrant;
  /** Absent when the subject has no limit. */
  rate?: RateState;
  /** Set when the request is refused: unauthenticated or resource_exhausted. */
  error?: ConnectError;
}

export class Admission {
  readonly #keys: KeyVerifier;
  readonly #limits: RateLimits | undefined;
  #closing = false;
  /** Requests refused by a rate limit so far (read by the metrics). */
  readonly refused = { key: 0, address: 0 };

  constructor(keys: KeyVerifier, limits?: RateLimits) {
    this.#keys = keys;
    this.#limits = limits && (limits.keyRate > 0 || limits.anonymousRate > 0) ? limits : undefined;
  }

  /** From now on every request is refused with `unavailable`: the server is shutting down. */
  close(): void {
    this.#closing = true;
  }

  /** Synchronous when keys are checked and limits counted in this process (a cached answer stays synchronous). */
  admit(key: string | null | undefined, address: string | undefined): MaybePromise<Admitted> {
    if (this.#closing) return SHUTTING_DOWN;
    let checked: MaybePromise<KeyGrant>;
    try {
      checked = requireApiKey(this.#keys, key);
    } catch (err) {
      return err instanceof ConnectError ? this.#anonymous(err, address) : STORE_UNAVAILABLE;
    }
    if (checked instanceof Promise) {
      return checked.then(
        (grant) => this.#limitKey(grant),
        (err: unknown) => (err instanceof ConnectError ? this.#anonymous(err, address) : STORE_UNAVAILABLE),
      );
    }
    return this.#limitKey(checked);
  }

  /** A request without a valid key: refused, after counting against its address's limit. */
  #anonymous(err: ConnectError, address: string | undefined): MaybePromise<Admitted> {
    const limits = this.#limits;
    if (limits === undefined || limits.anonymousRate === 0) return { error: err };
    return settle(limits.windows.take(`a:${address ?? "?"}`, limits.anonymousRate), (rate) => {
      if (!rate.allowed) this.refused.address++;
      return { rate, error: rate.allowed ? err : tooMany(rate) };
    });
  }

  #limitKey(grant: KeyGrant): MaybePromise<Admitted> {
    const limit = grant.rateLimit ?? this.#limits?.keyRate ?? 0;
    if (this.#limits === undefined || limit === 0) return { grant };
    return settle(this.#limits.windows.take(`k:${grant.id}`, limit), (rate) => {
      if (rate.allowed) return { grant, rate };
      this.refused.key++;
      return { grant, rate, error: tooMany(rate) };
    });
  }
}

/** The key could not be checked (the store is down or unreachable): the caller may retry. */
const STORE_UNAVAILABLE: Admitted = {
  error: new ConnectError("the store is unavailable; retry shortly", Code.Unavailable),
};

const SHUTTING_DOWN: Admitted = {
  error: new ConnectError("the server is shutting down; retry on another server", Code.Unavailable),
};

/** Whole seconds until the window resets, at least 1 (Retry-After, RateLimit-Reset). */
export function resetSeconds(rate: RateState): number {
  return Math.max(1, Math.ceil(rate.resetMs / 1000));
}

function tooMany(rate: RateState): ConnectError {
  return new ConnectError(
    `rate limit exceeded: ${rate.limit} requests per second; retry after ${resetSeconds(rate)} s`,
    Code.ResourceExhausted,
    { "retry-after": String(resetSeconds(rate)) },
  );
}

/** The RateLimit-* response headers (IETF draft) of a request's state, plus Retry-After when refused. */
export function rateLimitHeaders(rate: RateState | undefined): Record<string, string> {
  if (rate === undefined) return {};
  const headers: Record<string, string> = {
    "ratelimit-limit": String(rate.limit),
    "ratelimit-remaining": String(rate.remaining),
    "ratelimit-reset": String(resetSeconds(rate)),
  };
  if (!rate.allowed) headers["retry-after"] = String(resetSeconds(rate));
  return headers;
}
