import type http2 from "node:http2";
import { type DescMethodUnary, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { contentTypeUnaryProto } from "@connectrpc/connect/protocol-connect";
import { readOnlyUnaryMethods, type ServiceSet } from "../../service/services.js";
import { cachedEntry, cacheKeyPrefix, compileRequestKey } from "../cache/cached-response.js";
import type { DataVersionWatch, ResponseCache } from "../cache/freshness.js";
import { type ErrorLogger, publicError } from "../policy/guards.js";
import { readBody, unwrapEnvelope } from "./body.js";
import { grpcStatusOf, undecodable, writeRpcError } from "./errors.js";

// gRPC unary calls to read-only methods (NO_SIDE_EFFECTS), served without
// connect-node's general machinery. A profile of connect-node's gRPC path
// under load put most of a call's CPU in its generic layers (async
// iterables, linked abort controllers, DOMExceptions, header objects) and in
// re-encoding the same response on every call. Here a call is: read the
// one length-prefixed message (the key was checked before: gate.ts), look the encoded response up
// in the response cache (shared with Connect GET's binary responses: the
// bytes are the same), call the service in-process on a miss, write one
// DATA frame and the trailers. Anything else (other content types, client
// streaming, compression other than gzip, gRPC-Web, Connect) goes to
// connect-node, which remains the reference: the e2e suite runs every
// protocol against the same expectations.

export interface GrpcUnaryDeps {
  services: ServiceSet;
  cache: ResponseCache;
  watch: DataVersionWatch;
  log: ErrorLogger;
  readMaxBytes: number;
}

interface Route {
  method: DescMethodUnary;
  impl: ReturnType<ServiceSet["unary"]>;
  requestKey: ReturnType<typeof compileRequestKey>;
  cachePrefix: string;
}

export interface GrpcUnaryHandler {
  /** True when this request is a gRPC unary call this handler serves. */
  accepts(req: http2.Http2ServerRequest): boolean;
  handle(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void;
}

const CONTENT_TYPES = new Set(["application/grpc", "application/grpc+proto"]);

export function createGrpcUnaryHandler(deps: GrpcUnaryDeps): GrpcUnaryHandler {
  const routes = new Map<string, Route>();
  for (const { method, procedure } of readOnlyUnaryMethods(deps.services.services)) {
    routes.set(procedure, {
      method,
      impl: deps.services.unary(method),
      requestKey: compileRequestKey(method.input),
      // The same key as Connect GET's binary encoding: the response bytes are identical.
      cachePrefix: cacheKeyPrefix("connect-proto", procedure),
    });
  }

  return {
    accepts(req) {
      const type = req.headers["content-type"];
      const encoding = req.headers["grpc-encoding"];
      return (
        req.method === "POST" &&
        typeof type === "string" &&
        CONTENT_TYPES.has(type) &&
        (encoding === undefined || encoding === "identity" || encoding === "gzip") &&
        routes.has(req.url)
      );
    },

    handle(req, res) {
      const route = routes.get(req.url)!;
      readBody(req, deps.readMaxBytes + 5)
        .then((body) => call(route, req, body))
        .then(
          (message) => respond(res, message),
          (err: unknown) => writeRpcError(res, GRPC, publicError(err, deps.log, req.url), {}, !req.readableEnded),
        );
    },
  };

  async function call(route: Route, req: http2.Http2ServerRequest, body: Buffer): Promise<Buffer> {
    const message = await unwrapEnvelope(body, req.headers["grpc-encoding"] === "gzip", deps.readMaxBytes);
    let input;
    try {
      input = fromBinary(route.method.input, message);
    } catch (err) {
      throw undecodable(route.method.input.typeName, err);
    }
    const entry = await cachedEntry(deps.cache, deps.watch, route.cachePrefix + route.requestKey(input), async () => ({
      body: Buffer.from(toBinary(route.method.output, await route.impl(input))),
      contentType: contentTypeUnaryProto,
    }));
    return entry.body;
  }
}

const GRPC = { protocol: "grpc", binary: true } as const;

function respond(res: http2.Http2ServerResponse, message: Buffer): void {
  if (res.stream.destroyed || res.stream.closed) return;
  grpcStatusOf.set(res, 0);
  const prefix = Buffer.allocUnsafe(5);
  prefix[0] = 0;
  prefix.writeUInt32BE(message.length, 1);
  // Node's compatibility response sends the trailers when the stream asks for them.
  res.addTrailers({ "grpc-status": "0" });
  res.writeHead(200, { "content-type": "application/grpc+proto" });
  res.write(prefix);
  res.end(message);
}
