import type http from "node:http";
import type http2 from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { CACHE_CONTROL, matchesIfNoneMatch } from "../cache/cached-response.js";
import type { CachedResponse } from "../cache/freshness.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, errorHeaders } from "../policy/guards.js";
import type { ErrorForm } from "./fastify-exchange.js";
import type { UnaryExchange } from "./pipeline.js";

// A GET the server answered before, answered again without Fastify: Node's
// own request and response, through the same pipeline (unary/pipeline.ts)
// as FastifyExchange, writing the same headers and the same error form.
// Only a URL whose cache key the pipeline remembers takes this way
// (RawGets.serve): its parameters were parsed, checked and routed once, by
// Fastify, so nothing of Fastify's is needed to answer it (routing, the
// request and reply objects, the query parser, a child logger, the hook
// runner: a fifth of a cached answer's CPU in a profile). Anything else goes
// to Fastify as before. The request log line and the metrics are written by
// the caller (entry.ts) when the answer is sent.

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** What a raw answer reports when sent: its status (entry.ts logs and observes it). */
export type Sent = (status: number) => void;

export class NodeExchange<In> implements UnaryExchange<In, void> {
  readonly apiKey: string | undefined;
  readonly bucket: string;
  readonly url: string;
  readonly #req: Req;
  readonly #res: Res;
  readonly #read: (req: Req) => In;
  readonly #errorForm: ErrorForm;
  readonly #root: Logger;
  readonly #reqId: string;
  readonly #sent: Sent;
  #log: Logger | undefined;

  constructor(req: Req, res: Res, addresses: ClientAddresses, read: (req: Req) => In, errorForm: ErrorForm, root: Logger, reqId: string, sent: Sent) {
    this.#req = req;
    this.#res = res;
    this.#read = read;
    this.#errorForm = errorForm;
    this.#root = root;
    this.#reqId = reqId;
    this.#sent = sent;
    this.apiKey = apiKeyFrom(req.headers);
    this.bucket = addresses.bucketOf(req);
    this.url = req.url ?? "";
  }

  /** The request's logger, made only when something is logged (an error): a child per request costs every answer. */
  get log(): Logger {
    return (this.#log ??= this.#root.child({ reqId: this.#reqId }));
  }

  input(): In {
    return this.#read(this.#req);
  }

  setHeaders(headers: Record<string, string>): void {
    for (const [name, value] of Object.entries(headers)) this.#res.setHeader(name, value);
  }

  send(entry: CachedResponse): void {
    const res = this.#res;
    res.setHeader("etag", entry.etag);
    res.setHeader("cache-control", CACHE_CONTROL);
    if (matchesIfNoneMatch(this.#req.headers["if-none-match"] as string | undefined, entry.etag)) {
      res.statusCode = 304;
      res.end();
    } else {
      res.statusCode = 200;
      res.setHeader("content-type", entry.contentType);
      res.setHeader("content-length", entry.body.length);
      res.end(entry.body);
    }
    this.#sent(res.statusCode);
  }

  fail(error: ConnectError): void {
    const { status, contentType, body } = this.#errorForm(error);
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
    const res = this.#res;
    res.statusCode = status;
    for (const [name, value] of Object.entries(errorHeaders(error))) res.setHeader(name, value);
    res.setHeader("content-type", contentType);
    res.setHeader("content-length", bytes.length);
    res.end(bytes);
    this.#sent(status);
  }
}
