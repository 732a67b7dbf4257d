import type http from "node:http";
import type http2 from "node:http2";
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import { type Admission, type Admitted, rateLimitHeaders } from "../policy/admission.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { echo } from "../../domain/echo.js";
import { apiKeyFrom, type ErrorLogger, type KeyGrant, publicError } from "../policy/guards.js";
import type { HoldKey } from "../policy/held-keys.js";
import { gunzipBounded, MAX_REQUEST_MESSAGE_BYTES, readBody, unwrapEnvelope } from "./body.js";
import { type RpcKind, rpcKindOf, undecodable, writeRpcError } from "./errors.js";
import type { RequestHandler } from "../http/dual-protocol-server.js";
import type { ClientAddresses } from "../policy/client-address.js";
import type { DirectGrpcHandler } from "./grpc-unary.js";

// Every RPC POST (Connect, gRPC-Web, gRPC) passes here before its body is
// read. gRPC unary calls to read-only methods go to the unary pipeline
// (grpc-unary.ts), which admits them as it does REST and Connect GET. Every
// other call meets the API key and rate limit (policy/admission.ts) here, so
// an unauthenticated caller never makes the server read, inflate or parse
// anything. Then:
// - binary messages for connect-node: read (bounded) and decoded once here,
//   because connect-node answers a malformed protobuf message with
//   `internal` (a server fault) where it is the caller's: invalid_argument.
//   The bytes are then handed on unchanged;
// - JSON messages: connect-node, which bounds and parses them itself
//   (readMaxBytes; unknown fields refused like REST's unknown parameters).
// Unknown procedures and content types are answered here (404, 415).

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * A request the gate admitted with a key: the key's grant rides along to the
 * handler's context, and for a write stream, how to admit each next message.
 */
export type AdmittedRequest = AnyRequest & { grant?: KeyGrant; admitNextBatch?: (signal: AbortSignal) => Promise<void> };


export interface RpcGateDeps {
  admission: Admission;
  /** Request message type by procedure path ("/pkg.Service/Method") of the read methods, unary and server-streaming. */
  inputs: ReadonlyMap<string, DescMessage>;
  /**
   * The writes (IngestService): admitted as writes (a key with the ingest
   * scope, the ingest rate limit), their unary messages checked as the
   * reads' are but up to `maxBytes`, and served by a connect-node handler
   * that reads messages that large (the reads' stays at 64 KB).
   */
  ingest: {
    procedures: ReadonlySet<string>;
    inputs: ReadonlyMap<string, DescMessage>;
    /** The client-streaming writes (StreamSales...): each message after the first admitted as a request of its own. */
    streams: ReadonlySet<string>;
    maxBytes: number;
    connectNode: RequestHandler;
  };
  /** The operator's procedures (WebhookService), among `ingest.procedures`: admitted for keys with the admin scope only. */
  admin: ReadonlySet<string>;
  /** The server-streaming reads (the live feeds) connect-node serves here (Connect, gRPC-Web): their keys held while open. */
  feeds: ReadonlySet<string>;
  holdKey: HoldKey;
  /** Procedures served without a key (health, reflection): the address limit, then connect-node. */
  publicProcedures: ReadonlySet<string>;
  grpcUnary: DirectGrpcHandler;
  /** gRPC calls of server-streaming methods (the live feeds): the stream pipeline, which admits them. */
  grpcStream: DirectGrpcHandler;
  connectNode: RequestHandler;
  log: ErrorLogger;
  addresses: ClientAddresses;
}

export function createRpcGate(deps: RpcGateDeps): RequestHandler {
  const pass = (req: AnyRequest, res: AnyResponse, kind: RpcKind, admitted: Admitted, write: boolean): void => {
    // A response sent before the whole body was read (refused, too large):
    // the rest is read and dropped, so the connection or stream can end
    // (bounded by the request timeout), and no flow-control window stays full.
    res.once("finish", () => {
      if (!req.readableEnded) req.resume();
    });
    const rate = rateLimitHeaders(admitted.rate);
    if (admitted.error !== undefined) {
      refuse(req, res, kind, admitted.error, rate);
      return;
    }
    for (const [name, value] of Object.entries(rate)) res.setHeader(name, value);
    // For the handler's context (server.ts contextValues): streams are counted per key.
    const grant = admitted.grant;
    if (grant !== undefined) {
      const key = apiKeyFrom(req.headers)!;
      (req as AdmittedRequest).grant = grant;
      const url = req.url ?? "";
      if (deps.ingest.streams.has(url)) {
        const bucket = deps.addresses.bucketOf(req);
        (req as AdmittedRequest).admitNextBatch = (signal) => deps.admission.admitMessage(key, bucket, signal);
      } else if (deps.feeds.has(url)) {
        // A revoked key ends the feed (held-keys.ts); released when the call ends.
        res.once("close", deps.holdKey(key, grant));
      }
    }
    const connectNode = write ? deps.ingest.connectNode : deps.connectNode;
    const maxBytes = write ? deps.ingest.maxBytes : MAX_REQUEST_MESSAGE_BYTES;
    // A Connect body declared larger than the bound is refused before it is read: 413 Content Too Large (with
    // the Connect code resource_exhausted in the body), not the code's 429, which tells clients to retry.
    if (kind.protocol === "connect" && Number(req.headers["content-length"]) > maxBytes + 5) {
      refuse(req, res, kind, tooLarge(maxBytes), {}, 413);
      return;
    }
    const input = (write ? deps.ingest.inputs : deps.inputs).get(req.url ?? "");
    if (!kind.binary || input === undefined) {
      connectNode(req, res);
      return;
    }
    checkBinary(req, res, kind, input, maxBytes, connectNode);
  };

  const checkBinary = (req: AnyRequest, res: AnyResponse, kind: RpcKind, input: DescMessage, maxBytes: number, connectNode: RequestHandler): void => {
    readBody(req, maxBytes + 5).then(
      async (body) => {
        const message = await messageOf(req, kind, body, maxBytes).catch(() => undefined);
        // A body this path cannot take apart (envelope, compression) is left to connect-node's own errors.
        if (message !== undefined) {
          try {
            fromBinary(input, message);
          } catch (err) {
            writeRpcError(res, kind, undecodable(input.typeName, err));
            return;
          }
        }
        replayBody(req, body);
        connectNode(req, res);
      },
      (err: unknown) => {
        const error = publicError(err, deps.log, req.url ?? "");
        refuse(req, res, kind, error, {}, kind.protocol === "connect" && error.code === Code.ResourceExhausted ? 413 : undefined);
      },
    );
  };

  /** Health and reflection: no key, but the caller's address limit (a small request can ask for a large answer). */
  const passPublic = (req: AnyRequest, res: AnyResponse, kind: RpcKind | undefined): void => {
    const admitted = deps.admission.admitAddress(deps.addresses.bucketOf(req));
    const then = (a: Admitted) => {
      if (a.error !== undefined) {
        refuse(req, res, kind ?? { protocol: "connect", binary: false }, a.error, rateLimitHeaders(a.rate));
        return;
      }
      deps.connectNode(req, res);
    };
    if (admitted instanceof Promise) admitted.then(then, (err: unknown) => refuse(req, res, kind ?? { protocol: "connect", binary: false }, publicError(err, deps.log, req.url ?? "")));
    else then(admitted);
  };

  return (req, res) => {
    const kind = rpcKindOf(req.headers["content-type"]);
    if (deps.publicProcedures.has(req.url ?? "")) {
      passPublic(req, res, kind);
      return;
    }
    const write = deps.ingest.procedures.has(req.url ?? "");
    if (!write && !deps.inputs.has(req.url ?? "")) {
      // No such procedure (or a POST to a REST path): answered here, in the
      // caller's protocol (Connect's JSON error form when it is unknown).
      refuse(req, res, kind ?? { protocol: "connect", binary: false }, new ConnectError(`unknown procedure ${echo(req.url ?? "")}`, Code.Unimplemented), {}, 404);
      return;
    }
    if (kind === undefined) {
      const type = echo(req.headers["content-type"] ?? "");
      refuse(req, res, { protocol: "connect", binary: false }, new ConnectError(`unsupported content type ${type}; ${SUPPORTED}`, Code.InvalidArgument), {}, 415);
      return;
    }
    if (req.httpVersionMajor === 2) {
      // The unary pipeline (unary/pipeline.ts) and the stream pipeline (stream/pipeline.ts) admit them, as they do REST.
      for (const direct of [deps.grpcUnary, deps.grpcStream]) {
        if (direct.accepts(req as http2.Http2ServerRequest)) {
          direct.handle(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse);
          return;
        }
      }
    }
    const surface = deps.admin.has(req.url ?? "") ? "admin" : write ? "ingest" : "read";
    const admitted = deps.admission.admit(apiKeyFrom(req.headers), deps.addresses.bucketOf(req), surface);
    if (admitted instanceof Promise) {
      admitted.then(
        (a) => pass(req, res, kind, a, write),
        (err: unknown) => refuse(req, res, kind, publicError(err, deps.log, req.url ?? "")),
      );
    } else {
      pass(req, res, kind, admitted, write);
    }
  };
}

const SUPPORTED =
  "use application/json or application/proto (Connect), application/grpc-web[+proto|+json] (gRPC-Web) or application/grpc[+proto|+json] (gRPC)";

/** A refused request's unread body up to this size is read and dropped, keeping the connection. */
const DRAIN_MAX_BYTES = 1024 * 1024;

/**
 * Answers with `error` before (all of) the body was read. A small declared
 * body is read and dropped, so the connection stays usable and the client
 * is not cut off mid-upload; a larger or undeclared one closes an HTTP/1.1
 * connection after the answer (HTTP/2 streams just drop the rest).
 */
function tooLarge(maxBytes: number): ConnectError {
  return new ConnectError(`request body larger than ${maxBytes} bytes`, Code.ResourceExhausted);
}

function refuse(
  req: AnyRequest,
  res: AnyResponse,
  kind: RpcKind,
  error: ConnectError,
  headers: Record<string, string> = {},
  httpStatus?: number,
): void {
  const unread = req.headers["content-length"] !== "0" && !req.readableEnded;
  const declared = Number(req.headers["content-length"]);
  const drain = Number.isFinite(declared) && declared <= DRAIN_MAX_BYTES;
  writeRpcError(res, kind, error, headers, unread && !drain && req.httpVersionMajor === 1, httpStatus);
  if (unread) req.resume();
}

/** The message bytes of a unary request body, decompressed. */
async function messageOf(req: AnyRequest, kind: RpcKind, body: Buffer, maxBytes: number): Promise<Uint8Array> {
  if (kind.protocol !== "connect") {
    return unwrapEnvelope(body, req.headers["grpc-encoding"] === "gzip", maxBytes);
  }
  // Connect's streaming calls (a Watch) envelope their one request message too.
  if (req.headers["content-type"]?.toLowerCase().startsWith("application/connect+") === true) {
    return unwrapEnvelope(body, req.headers["connect-content-encoding"] === "gzip", maxBytes);
  }
  const encoding = req.headers["content-encoding"] ?? "identity";
  if (encoding === "identity") return body;
  if (encoding === "gzip") return gunzipBounded(body, maxBytes);
  throw new Error(`unsupported encoding ${encoding}`);
}

/**
 * Hands the body already read to connect-node, which reads a request with
 * `for await`: the request's own async iterator is replaced by one that
 * yields the same bytes.
 */
function replayBody(req: AnyRequest, body: Buffer): void {
  Object.defineProperty(req, Symbol.asyncIterator, {
    configurable: true,
    value: async function* replay() {
      if (body.length > 0) yield body;
    },
  });
}
