import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

// One TCP port for HTTP/1.1 (REST, Connect, gRPC-Web) and cleartext HTTP/2
// with prior knowledge (gRPC, Connect). Node's h2c server does not accept
// HTTP/1.1, so each connection's first bytes are read: the HTTP/2 client
// preface sends it to the HTTP/2 server, anything else to the HTTP/1.1 one.

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export class DualProtocolServer extends net.Server {
  readonly http1: http.Server;
  readonly http2: http2.Http2Server;
  readonly #sessions = new Set<http2.ServerHttp2Session>();

  constructor(handler: RequestHandler) {
    super();
    this.http1 = http.createServer(handler);
    this.http2 = http2.createServer(handler);
    this.http1.on("clientError", (err, socket) => this.emit("clientError", err, socket));
    this.http2.on("session", (session) => {
      this.#sessions.add(session);
      session.once("close", () => this.#sessions.delete(session));
    });
    this.on("connection", (socket: net.Socket) => this.#route(socket));
    // The HTTP/1.1 server never listens itself, but it only tracks its
    // connections (for idle closing and request timeouts) once it has seen
    // "listening".
    this.on("listening", () => this.http1.emit("listening"));
  }

  #route(socket: net.Socket): void {
    // Responses go out as soon as they are written. Node's HTTP/1.1 server
    // sets this itself; its HTTP/2 server does not, and with Nagle's
    // algorithm on, gRPC responses waited for the client's delayed ACKs
    // (measured: 365 calls/s at p50 139 ms, server idle half the time).
    socket.setNoDelay(true);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const isHttp2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isHttp2 && head.length < PREFACE.length) return; // undecided: need more bytes
      socket.off("data", onData);
      socket.off("error", onError);
      socket.pause();
      socket.unshift(head);
      if (isHttp2) {
        // The HTTP/2 session drains the unshifted bytes itself and then reads
        // the socket natively; resuming it here would steal its data.
        this.http2.emit("connection", socket);
      } else {
        this.http1.emit("connection", socket);
        socket.resume();
      }
    };
    const onError = () => socket.destroy();
    socket.on("data", onData);
    socket.on("error", onError);
  }

  // Called by Fastify on close: HTTP/1.1 keep-alive connections that are idle
  // close now; busy ones close after their response.
  closeIdleConnections(): void {
    this.http1.closeIdleConnections();
  }

  closeAllConnections(): void {
    this.http1.closeAllConnections();
    for (const s of this.#sessions) s.destroy();
  }

  // HTTP/2 sessions get a GOAWAY: streams in flight finish, new ones are refused.
  closeHttp2Sessions(): void {
    for (const s of this.#sessions) s.close();
  }

  override close(callback?: (err?: Error) => void): this {
    this.http1.close();
    this.http2.close();
    this.closeHttp2Sessions();
    return super.close(callback);
  }
}
