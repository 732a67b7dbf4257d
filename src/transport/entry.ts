import { SSE_KEY_PARAM } from "../service/feed-limits.js";
import type http from "node:http";
import type http2 from "node:http2";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { RequestHandler } from "./http/dual-protocol-server.js";
import { refuseLongUrl } from "./http/url-limit.js";
import { codeOfGrpcStatus, codeOfHttpStatus, type ServerMetrics } from "./ops/metrics.js";
import { grpcStatusOf, rpcKindOf } from "./rpc/errors.js";

// Where every request enters once its connection has picked a protocol
// (http/dual-protocol-server.ts): CORS preflights, the URL bound, then GETs
// to Fastify (REST, Connect GET, health, docs), with REST's POSTs, and every
// other method to the RPC gate (rpc/gate.ts); and the one request log line and the metrics of
// each, whichever path served it.

export interface EntryDeps {
  cors: { apply(req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): boolean } | undefined;
  /** Each /v1 path's success flag (for the 414 written before routing). */
  restFlags: ReadonlyMap<string, string>;
  fastify: RequestHandler;
  gate: RequestHandler;
  log: Logger;
  metrics: ServerMetrics | undefined;
  /** True for an RPC procedure the server defines (anything else is "unmatched" in the metrics). */
  known(procedure: string): boolean;
}

export function requestEntry(deps: EntryDeps): RequestHandler {
  const { cors, restFlags, fastify, gate, log, metrics } = deps;
  return (req, res) => {
    if (cors?.apply(req, res)) return;
    if (refuseLongUrl(req, res, restFlags)) return;
    // Fastify serves GET (REST, Connect GET) and its own HEAD and OPTIONS,
    // and the REST writes (POST /v1/ingest/KIND, rest/ingest.ts); every
    // other method is an RPC or nothing (rpc/gate.ts).
    if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS" || (req.method === "POST" && req.url?.startsWith("/v1/") === true)) {
      fastify(req, res);
      return;
    }
    if (log.isLevelEnabled("info")) logRpc(log, req, res);
    if (metrics !== undefined) observeRpc(metrics, req, res, deps.known(req.url ?? ""));
    gate(req, res);
  };
}

/**
 * The request log line and the metrics of what Fastify serves, in one
 * onResponse hook, registered only when it has something to do: every hook
 * costs each request.
 */
export function observeRoutes(app: FastifyInstance, log: Logger, metrics: ServerMetrics | undefined): void {
  const logging = log.isLevelEnabled("info");
  if (!logging && metrics === undefined) return;
  app.addHook("onResponse", (request, reply, done) => {
    if (logging) {
      // The root logger with the request's id, as its own logger would write
      // it, without the cost of a child logger's line per request.
      log.info(
        { reqId: request.id, method: request.method, url: truncate(request.url), status: reply.statusCode, ms: round(reply.elapsedTime) },
        "request",
      );
    }
    if (metrics !== undefined) {
      // Only the API's own routes are observed: health checks and scrapes would drown them.
      const route = request.routeOptions.url;
      const protocol = route === undefined ? undefined : route.startsWith("/v1/") ? "rest" : route.startsWith("/marketdata.") ? "connect-get" : undefined;
      if (protocol !== undefined) metrics.observe(route!, protocol, codeOfHttpStatus(reply.statusCode), reply.elapsedTime / 1000);
      else if (route === undefined) metrics.observe("unmatched", "rest", codeOfHttpStatus(reply.statusCode), reply.elapsedTime / 1000);
    }
    done();
  });
}

/** Records an RPC POST when its response ends: the procedure (or "unmatched"), its protocol, its code. */
function observeRpc(metrics: ServerMetrics, req: http.IncomingMessage | http2.Http2ServerRequest, res: unknown, known: boolean): void {
  const started = performance.now();
  const protocol = rpcKindOf(req.headers["content-type"])?.protocol ?? "connect";
  (res as http.ServerResponse).once("finish", () => {
    const r = res as http.ServerResponse;
    const grpcStatus = r.getHeader("grpc-status") ?? grpcStatusOf.get(res as object);
    const code =
      protocol === "connect" || grpcStatus === undefined
        ? codeOfHttpStatus(r.statusCode)
        : codeOfGrpcStatus(Number(grpcStatus));
    metrics.observe(known ? (req.url ?? "unmatched") : "unmatched", protocol, code, (performance.now() - started) / 1000);
  });
}

/** The one log line of an RPC request, written when its response ends. */
function logRpc(log: Logger, req: http.IncomingMessage | http2.Http2ServerRequest, res: unknown): void {
  const started = performance.now();
  (res as http.ServerResponse).once("finish", () => {
    const r = res as http.ServerResponse;
    // Trailers-only errors and the direct gRPC path's trailers are not headers of `r`.
    const grpcStatus = r.getHeader("grpc-status") ?? grpcStatusOf.get(res as object);
    log.info(
      {
        reqId: (req as { reqId?: string }).reqId,
        method: req.method,
        url: truncate(req.url ?? ""),
        status: r.statusCode,
        ...(grpcStatus === undefined ? {} : { grpcStatus }),
        ms: round(performance.now() - started),
      },
      "request",
    );
  });
}

const KEY_IN_URL = new RegExp(`([?&]${SSE_KEY_PARAM}=)[^&]*`, "g");

function truncate(raw: string): string {
  // A key given in the URL (an EventSource's feed: rest/sse.ts) is never logged.
  const url = raw.includes(`${SSE_KEY_PARAM}=`) ? raw.replace(KEY_IN_URL, "$1[redacted]") : raw;
  return url.length > 200 ? `${url.slice(0, 200)}...(${url.length} chars)` : url;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

