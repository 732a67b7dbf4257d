import { LRUCache } from "lru-cache";
import { type MaybePromise, settle } from "../../store/ports/paging.js";
import type { DataVersion, StoreChanges } from "../../store/ports/reads.js";
import type { KeyGrant, KeyVerifier } from "../policy/guards.js";

// What a server may remember between requests, and when it must forget.
// Everything here is keyed to the store's data versions (ports.ts
// changesSince): whenever another process commits (an ingest batch, an
// import, a derive, a key revoked), the next request sees what moved before
// it uses anything remembered. A commit to one collection makes what was
// remembered of that collection stale, and of no other; a change to the
// keys forgets every verified key. Nothing stale is ever served after a
// commit.

export interface VersionSource {
  changesSince(since: DataVersion | undefined): MaybePromise<StoreChanges>;
}

/**
 * Reads what the store committed and keeps, per collection, a counter that
 * moves whenever that collection changed; a remembered answer carries the
 * stamp of the collections it was read from (stampOf) and is stale once
 * the stamp differs.
 *
 * The store is asked at most once per turn of the event loop: every request
 * handled in one turn had fully arrived before that turn's I/O poll
 * returned, and so before the read; a commit that precedes a request's
 * arrival is therefore always seen by it. Nothing stale is served, at one
 * read per turn instead of per request. On SQLite the read is synchronous
 * (shared memory, but slower under load; the stamps are read only when
 * something was committed); on PostgreSQL it is one query per turn (a
 * row of store_state, so a replica reports what it has replayed), shared by
 * every request of the turn.
 */
export class DataVersionWatch {
  readonly #source: VersionSource;
  readonly #keyListeners: (() => void)[] = [];
  readonly #allListeners: (() => void)[] = [];
  #since: DataVersion | undefined;
  /** Moves per collection (domain/chains.ts collectionRef) on each commit that changed it; absent is 0. */
  readonly #collections = new Map<string, number>();
  /** Moves on a change that may reach every collection. */
  #all = 0;
  /** Moves on every commit of data. */
  #any = 0;
  /** This turn's read once made: done (null), or its promise (PostgreSQL). */
  #thisTurn: Promise<void> | null | undefined;
  readonly #endTurn = () => {
    this.#thisTurn = undefined;
  };

  constructor(source: VersionSource) {
    this.#source = source;
    // Where the server starts from (on PostgreSQL, once the first read returns).
    const first = source.changesSince(undefined);
    if (first instanceof Promise) first.then((c) => (this.#since ??= c.now), () => {});
    else this.#since = first.now;
  }

  /** Called when keys were created, revoked or changed. */
  onKeysChange(listener: () => void): void {
    this.#keyListeners.push(listener);
  }

  /** Called when a change may have reached every collection. */
  onAllChange(listener: () => void): void {
    this.#allListeners.push(listener);
  }

  /** Call at the start of a request, before consulting anything remembered. */
  check(): MaybePromise<void> {
    if (this.#thisTurn !== undefined) return this.#thisTurn ?? undefined;
    setImmediate(this.#endTurn);
    const read = this.#source.changesSince(this.#since);
    if (read instanceof Promise) return (this.#thisTurn = read.then((c) => this.#apply(c)));
    this.#thisTurn = null;
    this.#apply(read);
  }

  /**
   * The stamp of an answer read from `collections` (references, collectionRef;
   * undefined: the answer may depend on any), taken before it is read: it
   * differs from a later stamp once any of them changed.
   */
  stampOf(collections: readonly string[] | undefined): number {
    if (collections === undefined) return this.#all + this.#any;
    let stamp = this.#all;
    for (const c of collections) stamp += this.#collections.get(c) ?? 0;
    return stamp;
  }

  #apply(c: StoreChanges): void {
    const since = this.#since;
    this.#since = c.now;
    // The first read only sets where the server starts: nothing is remembered yet.
    if (since === undefined) return;
    if (c.now.keys !== since.keys) for (const l of this.#keyListeners) l();
    if (c.now.data === since.data) return;
    this.#any++;
    if (c.collections === "all") {
      this.#all++;
      for (const l of this.#allListeners) l();
    } else {
      for (const address of c.collections) this.#collections.set(address, (this.#collections.get(address) ?? 0) + 1);
    }
  }
}

/** Verified keys are remembered this long at most, and never across a change to the keys. */
export const KEY_MEMO_MS = 1000;
const KEY_MEMO_ENTRIES = 10_000;

/**
 * A KeyVerifier that remembers valid keys for up to a second (and only until
 * the keys change, so a revocation is refused on the next request). Invalid
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
  /** Moves on every change to the keys: entries of an older generation must be looked up again. */
  #generation = 0;
  /** Lookups that reached the store (read by the metrics and tests). */
  storeLookups = 0;
  /** Lookups under way, by key (bounded by the requests in flight). */
  readonly #inFlight = new Map<string, { lookup: Promise<KeyGrant | undefined>; generation: number }>();

  constructor(inner: KeyVerifier, watch: DataVersionWatch, now: () => number = Date.now) {
    this.#inner = inner;
    this.#now = now;
    this.#watch = watch;
    watch.onKeysChange(() => this.#generation++);
  }

  /** True when `key` was valid at its last lookup by this server. */
  known(key: string): boolean {
    return this.#valid.has(key);
  }

  /**
   * The lookup of `key` under way (asynchronous stores), if any: requests
   * carrying a key that arrive while it is looked up wait for that answer
   * (admission.ts) rather than each counting as unknown against their
   * address, or each asking the store again.
   */
  pending(key: string): Promise<KeyGrant | undefined> | undefined {
    const p = this.#inFlight.get(key);
    return p !== undefined && p.generation === this.#generation ? p.lookup : undefined;
  }

  lookup(key: string): MaybePromise<KeyGrant | undefined> {
    // A revocation committed since the last request makes every memo stale first.
    return settle(this.#watch.check(), () => {
      const now = this.#now();
      const memo = this.#valid.get(key);
      if (memo !== undefined && memo.until > now && memo.generation === this.#generation) return memo.grant;
      const shared = this.pending(key);
      if (shared !== undefined) return shared;
      this.storeLookups++;
      const generation = this.#generation;
      const found = settle(this.#inner.lookup(key), (grant) => this.#remember(key, grant, now, generation));
      if (found instanceof Promise) {
        // Shared only within its generation: a lookup begun before the keys changed answers no later request.
        this.#inFlight.set(key, { lookup: found, generation });
        const done = () => {
          if (this.#inFlight.get(key)?.lookup === found) this.#inFlight.delete(key);
        };
        found.then(done, done);
      }
      return found;
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

/** A cached response with what it was read from: stale once the watch's stamp of those collections moved. */
export interface CacheEntry extends CachedResponse {
  /** Lower-case addresses; undefined: any collection. */
  collections: readonly string[] | undefined;
  stamp: number;
}

/**
 * Encoded responses by request (cached-response.ts: cacheKeyPrefix and
 * compileRequestKey), least recently used evicted past `maxBytes`; 0
 * disables it. An entry whose collections changed since it was read is
 * stale: never returned, and dropped when met; all are dropped when a change
 * may reach every collection.
 */
/** What an entry costs the cache's budget: the body, the key (held too) and bookkeeping. */
function entrySize(value: CacheEntry, key: string): number {
  return value.body.length + key.length + 64;
}

export class ResponseCache {
  readonly #lru: LRUCache<string, CacheEntry> | undefined;
  readonly #watch: DataVersionWatch;
  hits = 0;
  misses = 0;

  constructor(maxBytes: number, watch: DataVersionWatch) {
    this.#watch = watch;
    if (maxBytes > 0) {
      this.#lru = new LRUCache<string, CacheEntry>({
        maxSize: maxBytes,
        sizeCalculation: entrySize,
      });
      watch.onAllChange(() => this.#lru?.clear());
    }
  }

  get enabled(): boolean {
    return this.#lru !== undefined;
  }

  /** The entry for `key` unless absent or stale (call after the watch's check this turn). */
  get(key: string): CacheEntry | undefined {
    if (!this.#lru) return undefined;
    let v = this.#lru.get(key);
    if (v !== undefined && this.#watch.stampOf(v.collections) !== v.stamp) {
      this.#lru.delete(key);
      v = undefined;
    }
    if (v) this.hits++;
    else this.misses++;
    return v;
  }

  set(key: string, value: CacheEntry): void {
    // A response larger than the whole cache is served but not kept.
    if (this.#lru && entrySize(value, key) <= this.#lru.maxSize) this.#lru.set(key, value);
  }

  get bytes(): number {
    return this.#lru?.calculatedSize ?? 0;
  }
}
