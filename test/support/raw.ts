import http2 from "node:http2";
import net from "node:net";

// Raw clients for what well-behaved clients never send: hand-made gRPC
// frames, sockets that stall, partial prefaces.

export interface RawResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One HTTP/2 (h2c) POST with the given headers and body; resolves with status, headers and trailers merged, and body. */
export function h2Post(baseUrl: string, path: string, headers: Record<string, string>, body: Buffer): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, ...headers });
    const chunks: Buffer[] = [];
    let status = 0;
    let all: Record<string, string | string[] | undefined> = {};
    req.on("response", (h) => {
      status = Number(h[":status"]);
      all = { ...all, ...h };
    });
    req.on("trailers", (t) => {
      all = { ...all, ...t };
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", (err) => {
      session.close();
      reject(err);
    });
    req.on("end", () => {
      session.close();
      resolve({ status, headers: all, body: Buffer.concat(chunks) });
    });
    req.end(body);
  });
}

/** A gRPC / gRPC-Web length-prefixed message. */
export function envelope(message: Uint8Array, flags = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flags;
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** Opens a TCP connection, writes `bytes` (if any), and resolves with how long until the server closed it. */
export function timeUntilClosed(port: number, bytes: Buffer | string | undefined, limitMs: number): Promise<number | "open"> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(port, "127.0.0.1", () => {
      if (bytes !== undefined) socket.write(bytes);
    });
    socket.on("data", () => {});
    socket.on("error", () => {});
    const timer = setTimeout(() => {
      socket.destroy();
      resolve("open");
    }, limitMs);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(performance.now() - started);
    });
  });
}

/** Opens a TCP connection that stays silent; destroyed by `close()`. */
export function idleSocket(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(socket));
    socket.on("error", reject);
  });
}

export const H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/** An empty SETTINGS frame (length 0, type 4, flags 0, stream 0). */
export const H2_EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

/** The grpc-status of a gRPC-Web response: from its headers (trailers-only) or its trailer frame. */
export function grpcWebStatus(headers: Headers, body: Buffer): string | undefined {
  const inHeaders = headers.get("grpc-status");
  if (inHeaders !== null) return inHeaders;
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at]!;
    const length = body.readUInt32BE(at + 1);
    const frame = body.subarray(at + 5, at + 5 + length);
    if ((flags & 0x80) !== 0) return /grpc-status:\s*(\d+)/i.exec(frame.toString())?.[1];
    at += 5 + length;
  }
  return undefined;
}
