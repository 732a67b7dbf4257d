import { createHash } from "node:crypto";
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ADDRESS_RE } from "../domain/formats.js";
import type { CachedResponse, DataVersionWatch, ResponseCache } from "./freshness.js";

// Conditional requests and the response cache, for every GET the service
// answers (REST /v1 and Connect GET): a strong ETag on each 200, 304 for a
// matching If-None-Match, and encoded bodies reused until the store changes.

/** Lets browsers and proxies keep a copy but revalidate it (cheap: a 304) every time. */
export const CACHE_CONTROL = "private, no-cache";

export function etagOf(body: Buffer): string {
  return `"${createHash("sha1").update(body).digest("base64url")}"`;
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

/**
 * Answers a GET from the cache or from `produce`, with ETag and 304 handling.
 * The caller has already authenticated the request.
 */
export async function sendCached(
  request: FastifyRequest,
  reply: FastifyReply,
  cache: ResponseCache,
  watch: DataVersionWatch,
  key: string,
  produce: () => Promise<Encoded>,
): Promise<FastifyReply> {
  // Before anything remembered is used: a commit since the last request drops it all.
  watch.check();
  let entry: CachedResponse | undefined = cache.get(key);
  if (entry === undefined) {
    const { body, contentType } = await produce();
    entry = { body, contentType, etag: etagOf(body) };
    cache.set(key, entry);
  }
  reply.header("etag", entry.etag).header("cache-control", CACHE_CONTROL);
  if (matchesIfNoneMatch(request.headers["if-none-match"], entry.etag)) return reply.code(304).send();
  return reply.type(entry.contentType).send(entry.body);
}
