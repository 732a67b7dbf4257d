import type http2 from "node:http2";
import { gunzip } from "node:zlib";
import { promisify } from "node:util";
import { type DescMethodUnary, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { contentTypeUnaryProto } from "@connectrpc/connect/protocol-connect";
import { readOnlyUnaryMethods, type ServiceSet } from "../service/services.js";
import { cachedEntry, cacheKeyPrefix, compileRequestKey } from "./cached-response.js";
import type { DataVersionWatch, ResponseCache } from "./freshness.js";
import { apiKeyFrom, type ErrorLogger, type KeyVerifier, publicError, requireApiKey } from "./guards.js";

// gRPC unary calls to read-only methods (NO_SIDE_EFFECTS), served without
// connect-node's general machinery. A profile of connect-node's gRPC path
// under load put most of a call's CPU in its generic layers (async
// iterables, linked abort controllers, DOMExceptions, header objects) and in
// re-encoding the same response on every call. Here a call is: read the
// one length-prefixed message, check the key, look the encoded response up
// in the response cache (shared with Connect GET's binary responses: the
// bytes are the same), call the service in-process on a miss, write one
// DATA frame and the trailers. Anything else (other content types, client
// streaming, compression other than gzip, gRPC-Web, Connect) goes to
// connect-node, which remains the reference: the e2e suite runs every
// protocol against the same expectations.

const gunzipAsync = promisify(gunzip);

export interface GrpcUnaryDeps {
  services: ServiceSet;
  keys: KeyVerifier;
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
      const stream = req.stream;
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = false;
      stream.on("data", (c: Buffer) => {
        size += c.length;
        if (size > deps.readMaxBytes + 5) tooLarge = true;
        else chunks.push(c);
      });
      stream.on("error", () => {});
      stream.once("end", () => {
        call(route, req, tooLarge ? null : Buffer.concat(chunks, size)).then(
          (body) => respond(res, body),
          (err: unknown) => fail(res, publicError(err, deps.log, req.url)),
        );
      });
    },
  };

  async function call(route: Route, req: http2.Http2ServerRequest, body: Buffer | null): Promise<Buffer> {
    if (body === null) throw new ConnectError(`message larger than ${deps.readMaxBytes} bytes`, Code.ResourceExhausted);
    requireApiKey(deps.keys, apiKeyFrom(req.headers));
    const input = fromBinary(route.method.input, await unwrap(body, req.headers["grpc-encoding"] === "gzip"));
    const entry = await cachedEntry(deps.cache, deps.watch, route.cachePrefix + route.requestKey(input), async () => ({
      body: Buffer.from(toBinary(route.method.output, await route.impl(input))),
      contentType: contentTypeUnaryProto,
    }));
    return entry.body;
  }

  /** The one length-prefixed message of a unary request. */
  async function unwrap(body: Buffer, gzip: boolean): Promise<Uint8Array> {
    if (body.length < 5) throw new ConnectError("protocol error: missing message", Code.InvalidArgument);
    const flags = body[0]!;
    const length = body.readUInt32BE(1);
    if (body.length !== 5 + length) {
      throw new ConnectError("protocol error: a unary request has exactly one message", Code.InvalidArgument);
    }
    const message = body.subarray(5);
    if ((flags & 1) === 0) return message;
    if (!gzip) throw new ConnectError("protocol error: compressed message without grpc-encoding", Code.Internal);
    try {
      return await gunzipAsync(message, { maxOutputLength: deps.readMaxBytes });
    } catch {
      throw new ConnectError("message is not valid gzip or is too large", Code.InvalidArgument);
    }
  }
}

/** The gRPC status each response of this path ended with, for the request log line. */
export const grpcStatusOf = new WeakMap<object, number>();

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

/** A trailers-only response carrying the error (gRPC's form for a call that fails before any message). */
function fail(res: http2.Http2ServerResponse, error: ConnectError): void {
  const stream = res.stream;
  if (stream.destroyed || stream.closed) return;
  grpcStatusOf.set(res, error.code);
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-status": String(error.code),
      "grpc-message": percentEncode(error.rawMessage),
    },
    { endStream: true },
  );
}

/** gRPC's grpc-message encoding: printable ASCII except "%" as is, every other byte as %XX. */
export function percentEncode(message: string): string {
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
