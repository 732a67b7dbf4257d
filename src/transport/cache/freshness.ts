import { LRUCache } from "lru-cache";
import { type MaybePromise, settle } from "../../store/ports.js";
import type { KeyGrant, KeyVerifier } from "../policy/guards.js";

// What a server may remember between requests, and when it must forget.
// Everything here is keyed to the store's data version: whenever another
// process commits (an import, a derive, a key revoked), the next request sees
// a new version and every remembered answer and verified key is dropped
// before it is used. Nothing stale is ever served after a commit.

export interface VersionSource {
  dataVersion(): MaybePromise<number>;
}

/**
 * Reads the store's data version and tells listeners when it moved.
 *
 * It is read at most once per turn of the event loop: every request handled
 * in one turn had fully arrived before that turn's I/O poll returned, and so
 * before the read; a commit that precedes a request's arrival is therefore
 * always seen by it. Nothing stale is served, at one read per turn instead
 * of per request. On SQLite the read is synchronous (shared memory: 2 µs
 * alone, 10-20 µs under load, a quarter of a cached response's cost); on
 * PostgreSQL it is one query per turn (a row of store_state, so a replica
 * reports the version it has replayed), shared by every request of the turn.
 */
export class DataVersionWatch {
  readonly #source: VersionSource;
  readonly #listeners: (() => void)[] = [];
  #version: number | undefined;
  /** This turn's read, once made. */
  #thisTurn: MaybePromise<number> | undefined;
  readonly #endTurn = () => {
    this.#thisTurn = undefined;
  };

  constructor(source: VersionSource) {
    this.#source = source;
    // The version the server starts from (on PostgreSQL, once the first read returns).
    const v = source.dataVersion();
    if (v instanceof Promise) v.then((x) => (this.#version ??= x), () => {});
    else this.#version = v;
  }

  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Call at the start of a request, before consulting anything remembered. */
  check(): MaybePromise<number> {
    if (this.#thisTurn !== undefined) return this.#thisTurn;
    setImmediate(this.#endTurn);
    const read = this.#source.dataVersion();
    this.#thisTurn = read instanceof Promise ? read.then((v) => this.#apply(v)) : this.#apply(read);
    return this.#thisTurn;
  }

  #apply(v: number): number {
    if (v !== this.#version) {
      // The first read only sets the version: nothing is remembered yet.
      const first = this.#version === undefined;
      this.#version = v;
      if (!first) for (const l of this.#listeners) l();
    }
    return v;
  }
}

/** Verified keys are remembered this long at most, and never across a commit. */
export const KEY_MEMO_MS = 1000;
const KEY_MEMO_ENTRIES = 10_000;

/**
 * A KeyVerifier that remembers valid keys for up to a second (and only until
 * the store changes, so a revocation is refused on the next request). Invalid
 * keys are never remembered: each costs a store lookup, as before, which is
 * why admission counts unknown keys against their address first.
 *
 * Keys once seen valid stay `known` after their memo lapses or a commit
 * (they are looked up again all the same); a key found invalid is forgotten.
 * Only valid keys are held, so the memo's bytes are bounded by its entries.
 */
export class MemoizedKeyVerifier implements KeyVerifier {
  readonly #inner: KeyVerifier;
  readonly #valid = new Map<string, { until: number; generation: number; grant: KeyGrant }>();
  readonly #now: () => number;
  readonly #watch: DataVersionWatch;
  /** Moves on every commit: entries of an older generation must be looked up again. */
  #generation = 0;
  /** Lookups that reached the store (read by the metrics and tests). */
  storeLookups = 0;

  constructor(inner: KeyVerifier, watch: DataVersionWatch, now: () => number = Date.now) {
    this.#inner = inner;
    this.#now = now;
    this.#watch = watch;
    watch.onChange(() => this.#generation++);
  }

  /** True when `key` was valid at its last lookup by this server. */
  known(key: string): boolean {
    return this.#valid.has(key);
  }

  lookup(key: string): MaybePromise<KeyGrant | undefined> {
    // A revocation committed since the last request makes every memo stale first.
    return settle(this.#watch.check(), () => {
      const now = this.#now();
      const memo = this.#valid.get(key);
      if (memo !== undefined && memo.until > now && memo.generation === this.#generation) return memo.grant;
      this.storeLookups++;
      const generation = this.#generation;
      return settle(this.#inner.lookup(key), (grant) => this.#remember(key, grant, now, generation));
    });
  }

  #remember(key: string, grant: KeyGrant | undefined, now: number, generation: number): KeyGrant | undefined {
    if (grant === undefined) {
      this.#valid.delete(key);
      return undefined;
    }
    if (this.#valid.size >= KEY_MEMO_ENTRIES && !this.#valid.has(key)) this.#valid.clear();
    this.#valid.set(key, { until: now + KEY_MEMO_MS, generation, grant });
    return grant;
  }
}

export interface CachedResponse {
  body: Buffer;
  contentType: string;
  /** Strong validator: a digest of the body bytes, quoted. */
  etag: string;
}

/**
 * Encoded responses by request (cached-response.ts: cacheKeyPrefix and
 * compileRequestKey), least recently used evicted
 * past `maxBytes`; 0 disables it. Cleared whenever the data version moves.
 */
/** What an entry costs the cache's budget: the body, the key (held too) and bookkeeping. */
function entrySize(value: CachedResponse, key: string): number {
  return value.body.length + key.length + 64;
}

export class ResponseCache {
  readonly #lru: LRUCache<string, CachedResponse> | undefined;
  hits = 0;
  misses = 0;

  constructor(maxBytes: number, watch: DataVersionWatch) {
    if (maxBytes > 0) {
      this.#lru = new LRUCache<string, CachedResponse>({
        maxSize: maxBytes,
        sizeCalculation: entrySize,
      });
      watch.onChange(() => this.#lru?.clear());
    }
  }

  get enabled(): boolean {
    return this.#lru !== undefined;
  }

  get(key: string): CachedResponse | undefined {
    if (!this.#lru) return undefined;
    const v = this.#lru.get(key);
    if (v) this.hits++;
    else this.misses++;
    return v;
  }

  set(key: string, value: CachedResponse): void {
    // A response larger than the whole cache is served but not kept.
    if (this.#lru && entrySize(value, key) <= this.#lru.maxSize) this.#lru.set(key, value);
  }

  get bytes(): number {
    return this.#lru?.calculatedSize ?? 0;
  }
}
