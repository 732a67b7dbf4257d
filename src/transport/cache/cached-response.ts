import { collectionRef } from "../../domain/chains.js";
import { hash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { ADDRESS_RE } from "../../domain/formats.js";
import type { CachedResponse, CacheEntry, DataVersionWatch, ResponseCache } from "./freshness.js";
import { settle } from "../../store/ports/paging.js";

// Conditional requests and the response cache: a strong ETag on each 200 of
// every GET the service answers (REST /v1 and Connect GET), 304 for a
// matching If-None-Match, and encoded bodies reused until the store changes
// (gRPC unary reads share Connect GET's binary entries).

/** Lets browsers and proxies keep a copy but revalidate it (cheap: a 304) every time. */
export const CACHE_CONTROL = "private, no-cache";

export function etagOf(body: Buffer): string {
  // One-shot: no Hash object per response (a quarter less CPU on a 4 KB body).
  return `"${hash("sha1", body, "base64url")}"`;
}

/** If-None-Match (a list, weak or strong, or *) against our strong tag, by weak comparison (RFC 9110 13.1.2). */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  for (const raw of header.split(",")) {
    const tag = raw.trim();
    if (tag === "*" || tag === etag || (tag.startsWith("W/") && tag.slice(2) === etag)) return true;
  }
  return false;
}

/**
 * A canonical text of a request message, so that requests that mean the same
 * share a cache entry: parameter order and enum spelling are gone once
 * parsed; address-shaped strings are lower-cased (the services do the same).
 */
export function compileRequestKey(desc: DescMessage): (message: Message) => string {
  const fields: DescField[] = [...desc.fields];
  const canonical = (v: unknown): unknown => {
    if (typeof v === "string") return ADDRESS_RE.test(v) ? v.toLowerCase() : v;
    if (typeof v === "bigint") return `${v}n`;
    if (Array.isArray(v)) return v.map(canonical);
    if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
    return v ?? null;
  };
  return (message) => {
    const m = message as unknown as Record<string, unknown>;
    return JSON.stringify(fields.map((f) => canonical(m[f.localName])));
  };
}

export interface Encoded {
  body: Buffer;
  contentType: string;
}

export type CacheEncoding = "rest" | "connect-json" | "connect-proto";

/**
 * The cache key of a request: its encoding (`rest`, `connect-json` or
 * `connect-proto`; gRPC shares `connect-proto`, whose bytes are the same),
 * the procedure, then the canonical request (compileRequestKey).
 */
export function cacheKeyPrefix(encoding: CacheEncoding, procedure: string): string {
  return `${encoding} ${procedure} `;
}

/**
 * The encoded response for `key`, from the cache or from `produce` (then
 * kept, with its ETag). Synchronous on a hit. Every path that reads or fills
 * the cache goes through here, so every entry has a valid ETag whichever
 * protocol made it.
 */
export function cachedEntry(
  cache: ResponseCache,
  watch: DataVersionWatch,
  key: string,
  produce: (stampBeforeRead: (collections: readonly string[] | undefined) => void) => Promise<Encoded>,
): CachedResponse | Promise<CachedResponse> {
  // Before anything remembered is used: what a commit since the last request changed is stale.
  return settle(watch.check(), () => {
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    // The stamp is taken before the store is read: a commit seen later moves
    // it past the entry's, whether or not the read saw that commit.
    let collections: readonly string[] | undefined;
    let stamp = watch.stampOf(undefined);
    const stampBeforeRead = (c: readonly string[] | undefined) => {
      collections = c;
      stamp = watch.stampOf(c);
    };
    return produce(stampBeforeRead).then(({ body, contentType }) => {
      const entry: CacheEntry = { body, contentType, etag: etagOf(body), collections, stamp };
      cache.set(key, entry);
      return entry;
    });
  });
}

/**
 * The collections a request reads (domain/chains.ts collectionRef), from
 * its `contract_address` field (one, or a list) and its `chain`: every read
 * method names them so. undefined for a method without one: its answers may
 * depend on any.
 */
export function compileCollectionsOf(desc: DescMessage): (message: Message) => readonly string[] | undefined {
  const field = desc.fields.find((f) => f.name === "contract_address");
  if (field === undefined) return () => undefined;
  const chainField = desc.fields.find((f) => f.name === "chain");
  return (message) => {
    const m = message as unknown as Record<string, unknown>;
    const v = m[field.localName];
    const chain = chainField === undefined ? "" : String(m[chainField.localName]);
    return (Array.isArray(v) ? (v as string[]) : [v as string]).map((a) => collectionRef(chain, a.toLowerCase()));
  };
}

/**
 * Remembers, per route, the cache key that a request URL parsed to, so that
 * a repeated URL skips parsing on its way to the cache. Parsing depends on
 * the URL alone, never on the data, so an entry is never stale. Only URLs
 * that were answered successfully are remembered (never one that failed
 * validation: a caller could fill the memo with unique failing URLs), only
 * short ones (a long URL's parse is cheap beside its own transfer), and the
 * whole memo is bounded in bytes, least recently used first out.
 */
export class ParsedKeyMemo {
  readonly #keys: LRUCache<string, string>;

  constructor(maxBytes = PARSED_MEMO_BYTES) {
    // Two bytes per character at most (V8 strings), plus the entry's bookkeeping.
    this.#keys = new LRUCache<string, string>({ maxSize: maxBytes, sizeCalculation: (key, url) => 2 * (url.length + key.length) + 96 });
  }

  get(url: string): string | undefined {
    return this.#keys.get(url);
  }

  /** Whether `url` is remembered, leaving its place in the LRU order as it is (the get that answers it moves it). */
  has(url: string): boolean {
    return this.#keys.has(url);
  }

  /** Call once the request was answered successfully. */
  set(url: string, key: string): void {
    if (url.length <= PARSED_MEMO_MAX_URL) this.#keys.set(url, key);
  }

  get bytes(): number {
    return this.#keys.calculatedSize;
  }
}

/** Per route. */
export const PARSED_MEMO_BYTES = 1024 * 1024;
const PARSED_MEMO_MAX_URL = 1024;
