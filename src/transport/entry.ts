import { SSE_KEY_PARAM } from "../service/feed-limits.js";
import type http from "node:http";
import type http2 from "node:http2";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { requestLineWriter } from "../log.js";
import type { RequestHandler } from "./http/dual-protocol-server.js";
import type { RawGet } from "./rest/transcoder.js";
import type { HijackedObserver } from "./rest/sse.js";
import { refuseLongUrl } from "./http/url-limit.js";
import { codeOfGrpcStatus, codeOfHttpStatus, type ServerMetrics } from "./ops/metrics.js";
import { grpcStatusOf, rpcKindOf } from "./rpc/errors.js";
import { streamOutcomes } from "./stream/pipeline.js";

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
  /** The /v1 routes by path, for the GETs they answered before (rest/transcoder.ts). */
  rawGets?: ReadonlyMap<string, RawGet>;
  /** The next request id (Fastify's requests take theirs from the same counter). */
  nextReqId: () => string;
}

export function requestEntry(deps: EntryDeps): RequestHandler {
  const { cors, restFlags, fastify, gate, log, metrics, rawGets, nextReqId } = deps;
  const line = requestLineWriter(log);
  return (req, res) => {
    if (cors?.apply(req, res)) return;
    if (refuseLongUrl(req, res, restFlags)) return;
    // A /v1 GET answered before: its remembered cache key answers it without Fastify (unary/node-exchange.ts).
    if (req.method === "GET" && rawGets !== undefined) {
      const url = req.url ?? "";
      const q = url.indexOf("?");
      const path = q < 0 ? url : url.slice(0, q);
      const route = rawGets.get(path);
      if (route?.knows(url)) {
        const started = performance.now();
        const reqId = nextReqId();
        route.serve(req, res, log, reqId, (status) => {
          const ms = performance.now() - started;
          line({ reqId, method: "GET", url: truncate(url), status, ms: round(ms) });
          metrics?.observe(path, "rest", codeOfHttpStatus(status), ms / 1000);
        });
        return;
      }
    }
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
 * costs each request. A route that takes the response over from Fastify
 * (SSE) is observed apart, when its response closes, however it ends: the
 * returned function, which such a route calls when it starts.
 */
export function observeRoutes(app: FastifyInstance, log: Logger, metrics: ServerMetrics | undefined): HijackedObserver {
  const logging = log.isLevelEnabled("info");
  const apart = new WeakSet<FastifyRequest>();
  const hijacked: HijackedObserver = (request, reply) => {
    if (!logging && metrics === undefined) return;
    apart.add(request);
    const started = performance.now();
    reply.raw.once("close", () => {
      const ms = performance.now() - started;
      const outcome = streamOutcomes.get(request.raw);
      const closedBy = (outcome?.ended ?? reply.raw.writableFinished) ? "server" : "client";
      const messages = outcome?.messages ?? 0;
      if (logging) {
        log.info(
          { reqId: request.id, method: request.method, url: truncate(request.url), status: reply.raw.statusCode, ms: round(ms), messages, closedBy },
          "request",
        );
      }
      const route = request.routeOptions.url ?? "unmatched";
      metrics?.observe(route, "rest", closedBy === "client" ? "canceled" : codeOfHttpStatus(reply.raw.statusCode), ms / 1000);
    });
  };
  if (!logging && metrics === undefined) return hijacked;
  const line = requestLineWriter(log);
  app.addHook("onResponse", (request, reply, done) => {
    if (apart.has(request)) {
      done();
      return;
    }
    // The root logger's line with the request's id, as its own logger would
    // write it, without the cost of a child logger's line per request.
    line({ reqId: request.id, method: request.method, url: truncate(request.url), status: reply.statusCode, ms: round(reply.elapsedTime) });
    if (metrics !== undefined) {
      // Only the API's own routes are observed: health checks and scrapes would drown them.
      const route = request.routeOptions.url;
      const protocol = route === undefined ? undefined : route.startsWith("/v1/") ? "rest" : route.startsWith("/marketdata.") ? "connect-get" : undefined;
      if (protocol !== undefined) metrics.observe(route!, protocol, codeOfHttpStatus(reply.statusCode), reply.elapsedTime / 1000);
      else if (route === undefined) metrics.observe("unmatched", "rest", codeOfHttpStatus(reply.statusCode), reply.elapsedTime / 1000);
    }
    done();
  });
  return hijacked;
}

/**
 * Records an RPC POST when its response closes (a stream the client left
 * closes without finishing: canceled): the procedure (or "unmatched"), its
 * protocol, its code.
 */
function observeRpc(metrics: ServerMetrics, req: http.IncomingMessage | http2.Http2ServerRequest, res: unknown, known: boolean): void {
  const started = performance.now();
  const protocol = rpcKindOf(req.headers["content-type"])?.protocol ?? "connect";
  (res as http.ServerResponse).once("close", () => {
    const r = res as http.ServerResponse;
    const grpcStatus = r.getHeader("grpc-status") ?? grpcStatusOf.get(res as object);
    const code = !(streamOutcomes.get(req)?.ended ?? r.writableFinished)
      ? "canceled"
      : protocol === "connect" || grpcStatus === undefined
        ? codeOfHttpStatus(r.statusCode)
        : codeOfGrpcStatus(Number(grpcStatus));
    metrics.observe(known ? (req.url ?? "unmatched") : "unmatched", protocol, code, (performance.now() - started) / 1000);
  });
}

/** The one log line of an RPC request, written when its response closes (a stream's: with the messages it sent, and who closed it). */
function logRpc(log: Logger, req: http.IncomingMessage | http2.Http2ServerRequest, res: unknown): void {
  const started = performance.now();
  (res as http.ServerResponse).once("close", () => {
    const r = res as http.ServerResponse;
    // Trailers-only errors and the direct gRPC path's trailers are not headers of `r`.
    const grpcStatus = r.getHeader("grpc-status") ?? grpcStatusOf.get(res as object);
    const stream = streamOutcomes.get(req);
    log.info(
      {
        reqId: (req as { reqId?: string }).reqId,
        method: req.method,
        url: truncate(req.url ?? ""),
        status: r.statusCode,
        ...(grpcStatus === undefined ? {} : { grpcStatus }),
        ms: round(performance.now() - started),
        ...(stream === undefined ? {} : { messages: stream.messages, closedBy: (stream.ended ?? r.writableFinished) ? "server" : "client" }),
      },
      "request",
    );
  });
}

function truncate(raw: string): string {
  const url = redactKey(raw);
  return url.length > 200 ? `${url.slice(0, 200)}...(${url.length} chars)` : url;
}

/**
 * The URL with the value of every parameter whose name decodes to the SSE
 * key parameter (an EventSource's feed: rest/sse.ts) redacted: the query
 * parser decodes names, so `api%4Bey=` carries a key as `apiKey=` does, and
 * neither is ever logged. A URL whose query has neither the name nor an
 * escape is returned as it is, unparsed.
 */
export function redactKey(raw: string): string {
  const q = raw.indexOf("?");
  if (q < 0) return raw;
  const query = raw.slice(q + 1);
  if (!query.includes(SSE_KEY_PARAM) && !query.includes("%")) return raw;
  const params = query.split("&").map((param) => {
    const eq = param.indexOf("=");
    const name = eq < 0 ? param : param.slice(0, eq);
    return decodedName(name) === SSE_KEY_PARAM ? `${name}=[redacted]` : param;
  });
  return `${raw.slice(0, q)}?${params.join("&")}`;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll("+", " "));
  } catch {
    return name;
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

