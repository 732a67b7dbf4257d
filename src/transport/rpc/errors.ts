import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { errorHeaders } from "../policy/guards.js";
import { ECHO_LIMIT } from "../../domain/echo.js";

// Errors written by this project's own RPC paths (admission before the body,
// malformed messages, the direct gRPC path) in each protocol's own form, so
// that a caller cannot tell them from connect-node's.

export type RpcProtocol = "connect" | "grpc-web" | "grpc";

export interface RpcKind {
  protocol: RpcProtocol;
  /** Protobuf binary messages (JSON otherwise). */
  binary: boolean;
}

/** The RPC protocol of a POST's content type; undefined for anything connect-node should judge. */
export function rpcKindOf(contentType: string | undefined): RpcKind | undefined {
  if (contentType === undefined) return undefined;
  const type = contentType.split(";", 1)[0]!.trim().toLowerCase();
  switch (type) {
    case "application/json":
      return { protocol: "connect", binary: false };
    case "application/proto":
    // Connect's streaming calls (StreamSales, StreamListings); refused ones
    // are answered by HTTP status, which Connect clients map to the code.
    case "application/connect+proto":
      return { protocol: "connect", binary: true };
    case "application/connect+json":
      return { protocol: "connect", binary: false };
    case "application/grpc-web":
    case "application/grpc-web+proto":
      return { protocol: "grpc-web", binary: true };
    case "application/grpc-web+json":
      return { protocol: "grpc-web", binary: false };
    case "application/grpc":
    case "application/grpc+proto":
      return { protocol: "grpc", binary: true };
    case "application/grpc+json":
      return { protocol: "grpc", binary: false };
    default:
      return undefined;
  }
}

/** The error of a request message that does not decode: the caller's fault. */
export function undecodable(typeName: string, err: unknown): ConnectError {
  // The decoder's reason can quote the caller's input: capped like any echo.
  const reason = (err instanceof Error ? err.message : String(err)).slice(0, ECHO_LIMIT);
  return new ConnectError(`cannot decode ${typeName}: ${reason}`, Code.InvalidArgument);
}

/** The gRPC status each response of this project's gRPC paths ended with, for the request log line. */
export const grpcStatusOf = new WeakMap<object, number>();

type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Writes `error` as the protocol prescribes: Connect as an HTTP status with
 * a JSON body; gRPC and gRPC-Web as a trailers-only response (status 200,
 * grpc-status in the headers). `close` says the request body was left
 * unread: an HTTP/1.1 connection ends after the response.
 */
export function writeRpcError(
  res: AnyResponse,
  kind: RpcKind,
  error: ConnectError,
  headers: Record<string, string> = {},
  close = false,
  /** Overrides the Connect protocol's status for the code (404 for an unknown procedure). */
  httpStatus?: number,
): void {
  if (res.headersSent || res.destroyed) return;
  const h1 = close && !("stream" in res) ? { connection: "close" } : {};
  if (kind.protocol === "connect") {
    const body = Buffer.from(errorToJsonBytes(error, {}));
    res.writeHead(httpStatus ?? codeToHttpStatus(error.code), { ...headers, ...errorHeaders(error), ...h1, "content-type": "application/json", "content-length": body.length });
    res.end(body);
    return;
  }
  grpcStatusOf.set(res, error.code);
  const grpcHeaders = {
    ...headers,
    "content-type": kind.protocol === "grpc" ? "application/grpc+proto" : "application/grpc-web+proto",
    "grpc-status": String(error.code),
    "grpc-message": percentEncode(error.rawMessage),
  };
  if ("stream" in res) {
    // A single HEADERS frame that ends the stream: gRPC's trailers-only form.
    if (res.stream.destroyed || res.stream.closed) return;
    res.stream.respond({ ":status": 200, ...grpcHeaders }, { endStream: true });
    return;
  }
  res.writeHead(200, { ...grpcHeaders, ...h1, "content-length": 0 });
  res.end();
}

/** gRPC's grpc-message encoding: printable ASCII except "%" as is, every other byte as %XX. */
export function percentEncode(message: string): string {
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
