import type http from "node:http";
import type http2 from "node:http2";
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";

// Reading an RPC request body that this project decodes itself (the direct
// gRPC path; the check of binary messages before connect-node): bounded in
// size, and inflated with a bound on the output, so that neither a large
// body nor a small gzip bomb can take memory.

const gunzipAsync = promisify(gunzip);

/**
 * The largest request message any protocol accepts, before and after
 * decompression. The largest real request (ListScores with its maximum of
 * contract addresses) is a few KB.
 */
export const MAX_REQUEST_MESSAGE_BYTES = 64 * 1024;

/** The whole body; rejects with resource_exhausted past `maxBytes` (the rest is read and dropped). */
export function readBody(req: http.IncomingMessage | http2.Http2ServerRequest, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size <= maxBytes) {
        chunks.push(c);
        return;
      }
      cleanup();
      chunks.length = 0;
      req.resume();
      reject(new ConnectError(`request body larger than ${maxBytes} bytes`, Code.ResourceExhausted));
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new ConnectError(`request body not received: ${err.message}`, Code.Canceled));
    };
    const onAborted = () => onError(new Error("aborted"));
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}

/** Inflates a gzip message, refusing output past `maxBytes`. */
export async function gunzipBounded(data: Uint8Array, maxBytes: number): Promise<Buffer> {
  try {
    return await gunzipAsync(data, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw new ConnectError(`message larger than ${maxBytes} bytes after decompression`, Code.ResourceExhausted);
    }
    throw new ConnectError("message is not valid gzip", Code.InvalidArgument);
  }
}

/** The one length-prefixed message of a unary gRPC or gRPC-Web request body. */
export async function unwrapEnvelope(body: Buffer, gzip: boolean, maxBytes: number): Promise<Uint8Array> {
  if (body.length < 5) throw new ConnectError("protocol error: missing message", Code.InvalidArgument);
  const flags = body[0]!;
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) {
    throw new ConnectError("protocol error: a unary request has exactly one message", Code.InvalidArgument);
  }
  const message = body.subarray(5);
  if ((flags & 1) === 0) return message;
  if (!gzip) throw new ConnectError("protocol error: compressed message without grpc-encoding", Code.InvalidArgument);
  return gunzipBounded(message, maxBytes);
}
