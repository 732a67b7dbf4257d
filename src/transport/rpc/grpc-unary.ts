import type http2 from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { readOnlyUnaryMethods } from "../../service/services.js";
import type { CachedResponse } from "../cache/freshness.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, type ErrorLogger } from "../policy/guards.js";
import { compileUnary, type UnaryDeps, type UnaryExchange, type UnaryPipeline } from "../unary/pipeline.js";
import { readBody, unwrapEnvelope } from "./body.js";
import { protoCodec } from "./codecs.js";
import { grpcStatusOf, writeRpcError } from "./errors.js";

// gRPC unary calls to read-only methods (NO_SIDE_EFFECTS), served by the
// unary pipeline (unary/pipeline.ts) rather than connect-node's general
// machinery. A profile of connect-node's gRPC path under load put most of a
// call's CPU in its generic layers (async iterables, linked abort
// controllers, DOMExceptions, header objects) and in re-encoding the same
// response on every call. Here a call is: admitted before its body is read,
// the one length-prefixed message read and decoded (protobuf binary, the
// codec Connect GET's binary encoding uses, so both share cache entries),
// then one DATA frame and the trailers. Anything else (other content types,
// client streaming, compression other than gzip, gRPC-Web, Connect POST)
// goes to connect-node, which remains the reference: the e2e suite runs
// every protocol against the same expectations.

export interface GrpcUnaryDeps extends UnaryDeps {
  addresses: ClientAddresses;
  log: ErrorLogger;
  readMaxBytes: number;
}

/** A path of its own for some gRPC calls (this file's, and rpc/grpc-stream.ts's), taken before connect-node. */
export interface DirectGrpcHandler {
  /** True when this request is a gRPC call this handler serves. */
  accepts(req: http2.Http2ServerRequest): boolean;
  /** Serves it, its admission included. */
  handle(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void;
}

const CONTENT_TYPES = new Set(["application/grpc", "application/grpc+proto"]);

/** A gRPC call (protobuf, uncompressed or gzip) of one of `procedures`: what this file's path and rpc/grpc-stream.ts serve themselves. */
export function isGrpcCallOf(req: http2.Http2ServerRequest, procedures: { has(procedure: string): boolean }): boolean {
  const type = req.headers["content-type"];
  const encoding = req.headers["grpc-encoding"];
  return (
    req.method === "POST" &&
    typeof type === "string" &&
    CONTENT_TYPES.has(type) &&
    (encoding === undefined || encoding === "identity" || encoding === "gzip") &&
    procedures.has(req.url)
  );
}
const GRPC = { protocol: "grpc", binary: true } as const;

export function createGrpcUnaryHandler(deps: GrpcUnaryDeps): DirectGrpcHandler {
  const routes = new Map<string, UnaryPipeline<Uint8Array, void>>();
  for (const { method, procedure } of readOnlyUnaryMethods(deps.services.services)) {
    routes.set(procedure, compileUnary(deps, method, protoCodec(method)));
  }

  return {
    accepts: (req) => isGrpcCallOf(req, routes),

    handle(req, res) {
      void routes.get(req.url)!(new GrpcExchange(req, res, deps));
    },
  };
}

/** One gRPC unary call on an HTTP/2 stream. */
class GrpcExchange implements UnaryExchange<Uint8Array, void> {
  readonly apiKey: string | undefined;
  readonly bucket: string;
  readonly url = undefined;
  readonly log: ErrorLogger;
  readonly #req: http2.Http2ServerRequest;
  readonly #res: http2.Http2ServerResponse;
  readonly #readMaxBytes: number;
  #headers: Record<string, string> = {};

  constructor(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, deps: GrpcUnaryDeps) {
    this.#req = req;
    this.#res = res;
    this.#readMaxBytes = deps.readMaxBytes;
    this.log = deps.log;
    this.apiKey = apiKeyFrom(req.headers);
    this.bucket = deps.addresses.bucketOf(req);
  }

  async input(): Promise<Uint8Array> {
    const body = await readBody(this.#req, this.#readMaxBytes + 5);
    return unwrapEnvelope(body, this.#req.headers["grpc-encoding"] === "gzip", this.#readMaxBytes);
  }

  setHeaders(headers: Record<string, string>): void {
    this.#headers = headers;
  }

  send(entry: CachedResponse): void {
    const res = this.#res;
    if (res.stream.destroyed || res.stream.closed) return;
    grpcStatusOf.set(res, 0);
    const prefix = Buffer.allocUnsafe(5);
    prefix[0] = 0;
    prefix.writeUInt32BE(entry.body.length, 1);
    // Node's compatibility response sends the trailers when the stream asks for them.
    res.addTrailers({ "grpc-status": "0" });
    res.writeHead(200, { ...this.#headers, "content-type": "application/grpc+proto" });
    res.write(prefix);
    res.end(entry.body);
  }

  /** A trailers-only response; a body not read (a refused call) is read and dropped. */
  fail(error: ConnectError): void {
    writeRpcError(this.#res, GRPC, error, this.#headers);
    if (!this.#req.readableEnded) this.#req.resume();
  }
}
