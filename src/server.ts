import type http from "node:http";
import type http2 from "node:http2";
import { createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { pino, type Logger } from "pino";
import { DEFAULT_CACHE_MB, type ServeConfig } from "./config.js";
import { createServices } from "./service/services.js";
import { ApiKeyVerifier } from "./store/api-keys.js";
import { openReadOnly } from "./store/database.js";
import { ReadStore } from "./store/read-store.js";
import { registerConnectGetRoutes } from "./transport/connect-get.js";
import { DualProtocolServer, type RequestHandler } from "./transport/dual-protocol-server.js";
import { createGrpcUnaryHandler, grpcStatusOf } from "./transport/grpc-unary.js";
import { DataVersionWatch, MemoizedKeyVerifier, ResponseCache } from "./transport/freshness.js";
import type { KeyVerifier } from "./transport/guards.js";
import { requestLogger, rpcInterceptors } from "./transport/interceptors.js";
import { registerRestRoutes } from "./transport/rest/transcoder.js";

// The composition root: the one place where store, services and transports
// are wired together, for the CLI and the tests alike.

export interface ServerDeps {
  store: ReadStore;
  keys: KeyVerifier;
  /** Request and error logging; silent when absent. */
  logger?: Logger;
  /** Response cache size in bytes; 0 turns it off. Default DEFAULT_CACHE_MB. */
  cacheBytes?: number;
}

export interface BuiltServer {
  app: FastifyInstance;
  cache: ResponseCache;
}

/** Bounds on what a caller can make the server read (hardened further by the hardening work). */
const MIB = 1024 * 1024;
const RPC_READ_MAX_BYTES = MIB;

/**
 * The whole service as a Fastify instance, not yet listening, on one port:
 * REST /v1 and Connect GET through Fastify (in-process calls, cached);
 * Connect POST, gRPC-Web and gRPC (HTTP/2 prior knowledge) straight to
 * connect-node's handler, which skips Fastify's routing and hooks: those
 * requests never reach a Fastify route anyway.
 */
export async function buildServer(deps: ServerDeps): Promise<BuiltServer> {
  const log = deps.logger ?? pino({ level: "silent" });
  const watch = new DataVersionWatch(deps.store);
  const keys = new MemoizedKeyVerifier(deps.keys, watch);
  const cache = new ResponseCache(deps.cacheBytes ?? DEFAULT_CACHE_MB * MIB, watch);
  const services = createServices(deps.store);
  const interceptors = rpcInterceptors(keys, log);
  const grpcUnary = createGrpcUnaryHandler({ services, keys, cache, watch, log, readMaxBytes: RPC_READ_MAX_BYTES });
  let nextRpcId = 0;

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // One line per request (onResponse below), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify's types know one server kind; this one serves HTTP/1.1 and h2c.
    serverFactory: (fastifyHandler) => {
      const rpc = connectNodeAdapter({
        routes: (router) => services.routes(router),
        interceptors,
        readMaxBytes: RPC_READ_MAX_BYTES,
        // Responses are at most tens of KB: gzip costs more CPU than it saves
        // on the networks a self-hosted service runs on. Compressed requests
        // are still accepted.
        compressMinBytes: MIB,
        contextValues: (req) => {
          const reqId = `rpc-${++nextRpcId}`;
          (req as { reqId?: string }).reqId = reqId;
          return createContextValues().set(requestLogger, log.child({ reqId }));
        },
        fallback: fastifyHandler as unknown as NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]>,
      });
      const handler: RequestHandler = (req, res) => {
        if (req.method === "GET") {
          fastifyHandler(req as http.IncomingMessage, res as http.ServerResponse);
          return;
        }
        if (log.isLevelEnabled("info")) logRpc(log, req, res);
        if (req.httpVersionMajor === 2 && grpcUnary.accepts(req as http2.Http2ServerRequest)) {
          grpcUnary.handle(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse);
          return;
        }
        rpc(req, res as never);
      };
      return new DualProtocolServer(handler) as unknown as http.Server;
    },
    // While closing, new requests on kept-alive connections get a 503
    // rather than work that the shutdown would cut short.
    return503OnClosing: true,
  });

  // Registered only when the lines would be written: an idle hook still costs each request.
  if (log.isLevelEnabled("info")) {
    app.addHook("onResponse", (request, reply, done) => {
      request.log.info(
        { method: request.method, url: truncate(request.url), status: reply.statusCode, ms: round(reply.elapsedTime) },
        "request",
      );
      done();
    });
  }
  registerRestRoutes(app, { services, keys, cache, watch });
  registerConnectGetRoutes(app, { services, keys, cache, watch });
  return { app, cache };
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

function truncate(url: string): string {
  return url.length > 200 ? `${url.slice(0, 200)}...(${url.length} chars)` : url;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  cache: ResponseCache;
  /** Stops accepting connections, lets requests in flight finish, closes the store. */
  close(): Promise<void>;
}

export type StartOptions = Pick<ServeConfig, "db" | "port" | "host"> & Partial<Pick<ServeConfig, "cacheMb" | "logLevel">>;

/** Opens the store read-only and serves it: the CLI's serve (each worker) and the tests' servers. */
export async function startServer(config: StartOptions): Promise<RunningServer> {
  const db = openReadOnly(config.db);
  try {
    const { app, cache } = await buildServer({
      store: new ReadStore(db),
      keys: new ApiKeyVerifier(db),
      logger: pino({ level: config.logLevel ?? "silent" }),
      cacheBytes: (config.cacheMb ?? DEFAULT_CACHE_MB) * MIB,
    });
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    if (address === null || typeof address === "string") throw new Error("no TCP address");
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return {
      app,
      cache,
      url: `http://${host}:${address.port}`,
      close: async () => {
        await app.close();
        db.close();
      },
    };
  } catch (err) {
    db.close();
    throw err;
  }
}
