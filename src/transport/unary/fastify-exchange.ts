import type { ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { CACHE_CONTROL, matchesIfNoneMatch } from "../cache/cached-response.js";
import type { CachedResponse } from "../cache/freshness.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, errorHeaders } from "../policy/guards.js";
import type { UnaryExchange } from "./pipeline.js";

// A unary call carried by a GET that Fastify routed (REST /v1 and Connect
// GET): a 200 carries a strong ETag and is revalidated with If-None-Match
// (304); an error is written in the protocol's own form (its ErrorForm).
// A class rather than a closure per request: its methods are shared.

/** How a protocol writes an error: status, content type and body. */
export type ErrorForm = (error: ConnectError) => { status: number; contentType: string; body: Buffer | string | object };

export class FastifyExchange<In> implements UnaryExchange<In, FastifyReply> {
  readonly apiKey: string | undefined;
  readonly bucket: string;
  readonly url: string | undefined;
  readonly #request: FastifyRequest;
  readonly #reply: FastifyReply;
  readonly #read: (request: FastifyRequest) => In;
  readonly #errorForm: ErrorForm;

  constructor(
    request: FastifyRequest,
    reply: FastifyReply,
    addresses: ClientAddresses,
    read: (request: FastifyRequest) => In,
    errorForm: ErrorForm,
    /** Remember this request's cache key under its URL (ParsedKeyMemo). */
    byUrl: boolean,
  ) {
    this.#request = request;
    this.#reply = reply;
    this.#read = read;
    this.#errorForm = errorForm;
    this.apiKey = apiKeyFrom(request.headers);
    this.bucket = addresses.bucketOf(request.raw);
    this.url = byUrl ? request.url : undefined;
  }

  get log(): FastifyRequest["log"] {
    return this.#request.log;
  }

  input(): In {
    return this.#read(this.#request);
  }

  setHeaders(headers: Record<string, string>): void {
    this.#reply.headers(headers);
  }

  send(entry: CachedResponse): FastifyReply {
    const reply = this.#reply.header("etag", entry.etag).header("cache-control", CACHE_CONTROL);
    if (matchesIfNoneMatch(this.#request.headers["if-none-match"], entry.etag)) return reply.code(304).send();
    return reply.type(entry.contentType).send(entry.body);
  }

  fail(error: ConnectError): FastifyReply {
    const { status, contentType, body } = this.#errorForm(error);
    return this.#reply.status(status).headers(errorHeaders(error)).type(contentType).send(body);
  }
}
