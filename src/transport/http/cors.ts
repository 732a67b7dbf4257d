import type http from "node:http";
import type http2 from "node:http2";
import { cors as connectCors } from "@connectrpc/connect";

// CORS for browsers on another origin (--cors-origin; off by default), for
// every protocol at once: it is applied where each request enters the
// server, before REST, Connect GET, Connect, gRPC-Web or the preflight
// reaches anything else. Allowed headers: Connect's and gRPC-Web's own plus
// x-api-key; exposed: Connect's and gRPC's plus the rate-limit headers,
// Retry-After and ETag.

const ALLOWED_METHODS = [...connectCors.allowedMethods, "HEAD"].join(", ");
const ALLOWED_HEADERS = [...connectCors.allowedHeaders, "X-Api-Key", "If-None-Match"].join(", ");
const EXPOSED_HEADERS = [
  ...connectCors.exposedHeaders,
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "Retry-After",
  "ETag",
].join(", ");
/** Browsers may reuse a preflight this long (seconds). */
const MAX_AGE = "7200";

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

export interface CorsPolicy {
  /**
   * Adds the CORS headers a request from an allowed origin needs; answers a
   * preflight itself. Returns true when the request was answered.
   */
  apply(req: AnyRequest, res: AnyResponse): boolean;
}

/** `origins`: exact origins ("https://app.example.com") or "*"; empty: CORS off. */
export function corsPolicy(origins: readonly string[]): CorsPolicy | undefined {
  if (origins.length === 0) return undefined;
  const any = origins.includes("*");
  const allowed = new Set(origins);
  return {
    apply(req, res) {
      const origin = req.headers.origin;
      if (typeof origin !== "string" || !(any || allowed.has(origin))) return false;
      res.setHeader("access-control-allow-origin", any ? "*" : origin);
      if (!any) res.setHeader("vary", "Origin");
      res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
      if (req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined) return false;
      res.writeHead(204, {
        "access-control-allow-methods": ALLOWED_METHODS,
        "access-control-allow-headers": ALLOWED_HEADERS,
        "access-control-max-age": MAX_AGE,
        "content-length": "0",
      });
      res.end();
      return true;
    },
  };
}
