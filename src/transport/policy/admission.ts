import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ClientAddresses } from "./client-address.js";
import { type KeyGrant, type KeyVerifier, MISSING_KEY, requireApiKey, unavailableError } from "./guards.js";
import { MemoryWindows, type RateState, type RateWindows } from "./rate-limit.js";
import { mayIngest } from "../../store/ports/keys.js";
import { type MaybePromise, settle } from "../../store/ports/paging.js";
import { abortableSleep } from "../../service/abortable-sleep.js";

// The first thing every request meets, on every protocol, before its body
// is read. A request whose key this server has not seen valid is counted
// against its client address's limit first, and refused there without a
// store lookup once the address is over it: a flood of made-up keys costs
// at most the address limit's worth of lookups per second. A key seen valid
// (since this server started) is looked up without touching its address's
// count, so callers sharing an address with a flood keep being served. A
// valid key is then held to its own limit (keys create --rate) or the
// server's default; a key's own limit holds even when the server's limits
// are off.

export interface RateLimits {
  /** Requests per second of a key without a limit of its own; 0: unlimited. */
  keyRate: number;
  /** Ingest requests (batches) per second per key, counted apart from its reads; 0: unlimited. */
  ingestRate: number;
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

/** The verifier admission needs: lookups, whether a key was seen valid before, and its lookup under way (MemoizedKeyVerifier). */
export interface AdmissionKeys extends KeyVerifier {
  known?(key: string): boolean;
  pending?(key: string): Promise<unknown> | undefined;
}

export class Admission {
  readonly #keys: AdmissionKeys;
  readonly #limits: RateLimits;
  #closing = false;
  /** Requests refused by a rate limit so far (read by the metrics). */
  readonly refused = { key: 0, address: 0 };

  /** Without `limits`, only keys' own limits are counted, in this process. */
  constructor(keys: AdmissionKeys, limits?: RateLimits) {
    this.#keys = keys;
    this.#limits = limits ?? { keyRate: 0, ingestRate: 0, anonymousRate: 0, windows: new MemoryWindows() };
  }

  /** From now on every request is refused with `unavailable`: the server is shutting down. */
  close(): void {
    this.#closing = true;
  }

  /**
   * Admits a request with API key `key` from address bucket `address`
   * (client-address.ts) to a read, or to a write (`ingest`: a key with the
   * ingest scope, held to the ingest limit, counted apart from its reads).
   * Synchronous when keys are checked and limits counted in this process (a
   * cached answer stays synchronous).
   */
  admit(key: string | null | undefined, address: string, surface: Surface = "read"): MaybePromise<Admitted> {
    if (this.#closing) return SHUTTING_DOWN;
    if (!key) return this.#countAddress(address, MISSING);
    if (this.#limits.anonymousRate > 0 && this.#keys.known?.(key) !== true) {
      // A key being looked up for an earlier request: its answer decides
      // (a burst of first requests with a new valid key is not counted as
      // unknown, each against the address).
      const looking = this.#keys.pending?.(key);
      if (looking !== undefined) {
        const again = () => this.admit(key, address, surface);
        return looking.then(again, again);
      }
      // Counted before the lookup; refused here, the key is never looked up.
      return settle(this.#takeAddress(address), (rate) => (rate.allowed ? this.#lookup(key, address, rate, surface) : this.#tooMany(rate)));
    }
    return this.#lookup(key, address, undefined, surface);
  }

  /**
   * Admits one more message of a write stream already admitted: each message
   * of StreamSales or StreamListings is a batch, held to the key's ingest
   * limit as a request is (an export's page of records, `surface` "read", to
   * its read limit). Over the limit the stream is held back: this
   * waits for the window to reset and asks again, and nothing more is read
   * from the stream meanwhile. A key no longer valid, or no longer allowed
   * to write, ends the stream with its error; so does `signal` (the call
   * ended).
   */
  async admitMessage(key: string | undefined, address: string, signal: AbortSignal, surface: Surface = "ingest"): Promise<void> {
    for (;;) {
      if (signal.aborted) throw new ConnectError("the call ended", Code.Canceled);
      const a = await this.admit(key, address, surface);
      if (a.error === undefined) return;
      if (a.error.code !== Code.ResourceExhausted || a.rate === undefined) throw a.error;
      await abortableSleep(Math.max(HOLD_BACK_MIN_MS, a.rate.resetMs), signal);
    }
  }

  /**
   * Admits a request to a surface served without a key (health, reflection,
   * readiness, metrics, docs): counted against its address's limit only.
   */
  admitAddress(address: string): MaybePromise<Admitted> {
    if (this.#limits.anonymousRate === 0) return OPEN;
    return settle(this.#takeAddress(address), (rate) => (rate.allowed ? { rate } : this.#tooMany(rate)));
  }

  #lookup(key: string, address: string, counted: RateState | undefined, surface: Surface): MaybePromise<Admitted> {
    const refusedKey = (err: unknown): MaybePromise<Admitted> => {
      if (!(err instanceof ConnectError)) return STORE_UNAVAILABLE;
      // Already counted against the address before the lookup: not twice.
      return counted === undefined ? this.#countAddress(address, err) : { rate: counted, error: err };
    };
    let checked: MaybePromise<KeyGrant>;
    try {
      checked = requireApiKey(this.#keys, key);
    } catch (err) {
      return refusedKey(err);
    }
    if (checked instanceof Promise) return checked.then((grant) => this.#limitKey(grant, surface), refusedKey);
    return this.#limitKey(checked, surface);
  }

  /** A request without a valid key: refused with `err`, after counting against its address's limit. */
  #countAddress(address: string, err: ConnectError): MaybePromise<Admitted> {
    return settle(this.admitAddress(address), (a) => (a.error === undefined ? { ...a, error: err } : a));
  }

  #takeAddress(address: string): MaybePromise<RateState> {
    return this.#limits.windows.take(`a:${address}`, this.#limits.anonymousRate);
  }

  #tooMany(rate: RateState): Admitted {
    this.refused.address++;
    return { rate, error: tooMany(rate) };
  }

  #limitKey(grant: KeyGrant, surface: Surface): MaybePromise<Admitted> {
    if (surface === "ingest" && !mayIngest(grant.scope)) return { grant, error: READ_ONLY_KEY };
    if (surface === "admin" && grant.scope !== "admin") return { grant, error: NOT_ADMIN_KEY };
    // Reads: a key's own limit always holds, the server's default only when
    // it has none. Writes (and the operator's calls): the server's ingest
    // limit, in a window of their own.
    const limit = surface === "read" ? (grant.rateLimit ?? this.#limits.keyRate) : this.#limits.ingestRate;
    if (limit === 0) return { grant };
    return settle(this.#limits.windows.take(`${surface === "read" ? "k" : "i"}:${grant.id}`, limit), (rate) => {
      if (rate.allowed) return { grant, rate };
      this.refused.key++;
      return { grant, rate, error: tooMany(rate) };
    });
  }
}

/** The shortest wait of a held-back stream message before it asks again (a window about to reset). */
const HOLD_BACK_MIN_MS = 10;


/** What a request asks of its key: to read, to write through the ingest API, or the operator's calls (webhooks). */
export type Surface = "read" | "ingest" | "admin";

const MISSING = new ConnectError(MISSING_KEY, Code.Unauthenticated);
export const NOT_ADMIN_KEY = new ConnectError(
  'webhooks are managed with a key made with "marketdata keys create --scope admin"',
  Code.PermissionDenied,
);
export const READ_ONLY_KEY = new ConnectError(
  'this API key may only read; writes need a key made with "marketdata keys create --scope ingest"',
  Code.PermissionDenied,
);
const OPEN: Admitted = {};

/** The key could not be checked (the store is down or unreachable): the caller may retry. */
const STORE_UNAVAILABLE: Admitted = {
  error: unavailableError("the store is unavailable; retry shortly"),
};

const SHUTTING_DOWN: Admitted = {
  error: unavailableError("the server is shutting down; retry on another server"),
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

/** The onRequest hook of routes served without a key (addressLimited). */
export type PublicGuard = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/**
 * The onRequest hook of GET routes served without a key (health, readiness,
 * metrics, docs): the caller's address limit, refused with 429 and the
 * RateLimit headers in the Connect error shape.
 */
export function addressLimited(admission: Admission, addresses: ClientAddresses): PublicGuard {
  return (request, reply, done) => {
    const then = (a: Admitted) => {
      if (a.rate !== undefined) reply.headers(rateLimitHeaders(a.rate));
      if (a.error === undefined) {
        done();
        return;
      }
      reply.code(429).header("cache-control", "no-store").send({ code: "resource_exhausted", message: a.error.rawMessage });
    };
    const admitted = admission.admitAddress(addresses.bucketOf(request.raw));
    if (admitted instanceof Promise) admitted.then(then, () => then(OPEN));
    else then(admitted);
  };
}
