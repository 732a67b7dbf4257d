import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type stream from "node:stream";

// One TCP port for HTTP/1.1 (REST, Connect, gRPC-Web) and cleartext HTTP/2
// with prior knowledge (gRPC, Connect). Node's h2c server does not accept
// HTTP/1.1, so each connection's first bytes are read: the HTTP/2 client
// preface sends it to the HTTP/2 server, anything else to the HTTP/1.1 one.

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** Every phase of a connection is bounded (milliseconds). */
export interface ConnectionTimeouts {
  /** From accept to the bytes that tell HTTP/1.1 from HTTP/2, and to a request's complete headers. */
  headersMs: number;
  /** A whole request, body included (HTTP/1.1), or a whole HTTP/2 stream. */
  requestMs: number;
  /** An idle HTTP/1.1 keep-alive connection. */
  keepAliveMs: number;
  /** An HTTP/2 session without any activity (with a stream open: without an answer to a PING). */
  idleMs: number;
  /** On close: how long idle keep-alive connections may still send a request (answered, then closed). */
  drainMs: number;
  /** On close: after this, every remaining connection is destroyed. */
  shutdownMs: number;
  /** HTTP/2 paths (without the query) whose streams may outlive requestMs (health Watch, the live feeds); the session's own timeouts still apply. */
  longLivedPaths?: ReadonlySet<string>;
}

/** Concurrent streams one HTTP/2 client may open (Node's default is unbounded). */
const MAX_CONCURRENT_STREAMS = 100;
/**
 * Memory one HTTP/2 session may hold, in MB, before Node refuses its new
 * streams with ENHANCE_YOUR_CALM (Node's default: 10). One ingest batch may
 * be 16 MiB (domain/ingest-limits.ts), and a writer streams several.
 */
const MAX_SESSION_MEMORY_MB = 64;

/**
 * A request Node could not parse (headers past 16 KB, bad syntax) or that
 * timed out: answered in the service's error form and with
 * "connection: close", so the client does not reuse a connection that is
 * about to end (Fastify's own handler omits it, and keep-alive clients then
 * lose their next request on the dead socket).
 */
function answerClientError(err: NodeJS.ErrnoException, socket: stream.Duplex): void {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "invalid_argument", "request headers too large"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "deadline_exceeded", "request not received in time"]
        : [400, "invalid_argument", "malformed HTTP request"];
  const body = JSON.stringify({ code, message });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

export class DualProtocolServer extends net.Server {
  readonly http1: http.Server;
  readonly http2: http2.Http2Server;
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  /** Accepted sockets whose protocol is not known yet. */
  readonly #undecided = new Set<net.Socket>();
  /** Every open socket, whatever became of it: the shutdown deadline destroys what is left. */
  readonly #sockets = new Set<net.Socket>();
  readonly #timeouts: ConnectionTimeouts;
  /** Streams open on each HTTP/2 session. */
  readonly #openStreams = new WeakMap<http2.Http2Session, number>();
  #closing = false;

  constructor(handler: RequestHandler, timeouts: ConnectionTimeouts) {
    super();
    this.#timeouts = timeouts;
    const serve: RequestHandler = (req, res) => {
      // While closing, each HTTP/1.1 response ends its connection.
      if (this.#closing && req.httpVersionMajor === 1) res.setHeader("connection", "close");
      handler(req, res);
    };
    this.http1 = http.createServer(
      {
        headersTimeout: timeouts.headersMs,
        requestTimeout: timeouts.requestMs,
        keepAliveTimeout: timeouts.keepAliveMs,
        // How often the two timeouts above are checked (Node's default: 30 s).
        connectionsCheckingInterval: Math.max(100, Math.min(1000, timeouts.headersMs / 2)),
      },
      serve,
    );
    this.http2 = http2.createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS }, maxSessionMemory: MAX_SESSION_MEMORY_MB }, serve);
    // A session without activity for idleMs: closed when it has no open
    // stream; while a stream is open (a quiet health Watch), kept as long as
    // its client answers a PING within idleMs. Node's default (no listener)
    // destroys the session whatever it carries, cutting a Watch without
    // trailers every idleMs.
    this.http2.setTimeout(timeouts.idleMs);
    this.http2.on("timeout", (session: http2.Http2Session) => this.#onIdle(session));
    this.http2.on("stream", (stream, headers) => {
      const session = stream.session;
      if (session !== undefined) {
        this.#openStreams.set(session, (this.#openStreams.get(session) ?? 0) + 1);
        stream.once("close", () => this.#openStreams.set(session, (this.#openStreams.get(session) ?? 1) - 1));
      }
      if (timeouts.longLivedPaths?.has((headers[":path"] ?? "").split("?", 1)[0]!)) return;
      const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), timeouts.requestMs);
      stream.once("close", () => clearTimeout(timer));
    });
    this.http1.on("clientError", answerClientError);
    this.http2.on("session", (session) => {
      this.#sessions.add(session);
      session.once("close", () => this.#sessions.delete(session));
      // A connection accepted just before close() that spoke HTTP/2 after it: a GOAWAY, as the others got.
      if (this.#closing) session.close();
    });
    this.on("connection", (socket: net.Socket) => this.#route(socket));
    // The HTTP/1.1 server never listens itself, but it only tracks its
    // connections (for idle closing and request timeouts) once it has seen
    // "listening".
    this.on("listening", () => this.http1.emit("listening"));
  }

  /** An HTTP/2 session was idle for idleMs: see the "timeout" listener. */
  #onIdle(session: http2.Http2Session): void {
    if (session.destroyed || session.closed) return;
    if ((this.#openStreams.get(session) ?? 0) === 0) {
      session.destroy();
      return;
    }
    // The PING's answer is activity: the idle timer starts again.
    const deadline = setTimeout(() => session.destroy(), this.#timeouts.idleMs);
    deadline.unref();
    let sent = false;
    try {
      sent = session.ping((err) => {
        clearTimeout(deadline);
        if (err !== null) session.destroy();
      });
    } catch {
      // Not yet connected, or closing: nothing to keep.
    }
    if (!sent) {
      clearTimeout(deadline);
      session.destroy();
    }
  }

  #route(socket: net.Socket): void {
    // Responses go out as soon as they are written. Node's HTTP/1.1 server
    // sets this itself; its HTTP/2 server does not, and with Nagle's
    // algorithm on, gRPC responses waited for the client's delayed ACKs
    // (each call tens of milliseconds, the server idle half the time).
    socket.setNoDelay(true);
    // A client that never says which protocol it speaks is dropped.
    this.#undecided.add(socket);
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
    socket.setTimeout(this.#timeouts.headersMs, () => socket.destroy());
    socket.once("close", () => this.#undecided.delete(socket));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const isHttp2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isHttp2 && head.length < PREFACE.length) return; // undecided: need more bytes
      socket.off("data", onData);
      socket.off("error", onError);
      this.#undecided.delete(socket);
      socket.setTimeout(0);
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

  // Called by Fastify on close. Idle keep-alive connections are not closed
  // at once: a client may have written a request on one already, and would
  // see a reset. They get drainMs to send it (answered, with
  // "connection: close"); close() then closes those still idle.
  closeIdleConnections(): void {}

  closeAllConnections(): void {
    this.http1.closeAllConnections();
    for (const s of this.#sessions) s.destroy();
    for (const s of this.#sockets) s.destroy();
  }

  // HTTP/2 sessions get a GOAWAY: streams in flight finish, new ones are refused.
  closeHttp2Sessions(): void {
    for (const s of this.#sessions) s.close();
  }

  /**
   * Stops accepting connections; `callback` runs once every connection has
   * ended: busy HTTP/1.1 connections after their response, idle ones after
   * drainMs, HTTP/2 sessions after their streams in flight (GOAWAY), and
   * whatever remains at shutdownMs, destroyed.
   */
  override close(callback?: (err?: Error) => void): this {
    this.#closing = true;
    this.closeHttp2Sessions();
    this.http2.close();
    // A connection accepted but not yet spoken on may carry a request already on
    // its way (a keep-alive client reconnecting after "connection: close"):
    // destroyed now, that client saw a reset. It gets drainMs too, its request
    // answered with "connection: close"; one still silent then is destroyed.
    const drain = setTimeout(() => {
      for (const s of this.#undecided) s.destroy();
      this.http1.close();
    }, Math.min(this.#timeouts.drainMs, this.#timeouts.shutdownMs));
    const deadline = setTimeout(() => this.closeAllConnections(), this.#timeouts.shutdownMs);
    return super.close((err) => {
      clearTimeout(drain);
      clearTimeout(deadline);
      this.http1.close();
      callback?.(err);
    });
  }
}
