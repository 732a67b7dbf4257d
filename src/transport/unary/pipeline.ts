import type { DescMethodUnary, Message } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { CLOCK_DEPENDENT_PROCEDURES, type ServiceSet } from "../../service/services.js";
import {
  type CacheEncoding,
  cachedEntry,
  cacheKeyPrefix,
  compileCollectionsOf,
  compileRequestKey,
  type Encoded,
  ParsedKeyMemo,
} from "../cache/cached-response.js";
import { type CachedResponse, type DataVersionWatch, ResponseCache } from "../cache/freshness.js";
import { type Admission, type Admitted, rateLimitHeaders } from "../policy/admission.js";
import { type ErrorLogger, publicError } from "../policy/guards.js";
import type { WireForm } from "../../domain/wire/fragments.js";
import type { LocalCall } from "../../service/local-call.js";

// The one path of a unary read call, whatever protocol carried it:
//
//   admit -> decode -> cache (or call -> encode) -> answer | error form
//
// What differs between protocols is confined to two small objects. A codec
// (rest/transcoder.ts, rpc/codecs.ts) turns what the protocol carries into the request message
// and the response message into bytes: REST's query parameters and /v1 JSON,
// Connect's JSON, protobuf binary (Connect GET and gRPC). An exchange is one
// request on one transport: where its key and address come from, how its
// input is read once admitted (gRPC reads its body only then), and how an
// answer or an error is written in the protocol's own form
// (unary/fastify-exchange.ts for REST and Connect GET, rpc/grpc-unary.ts for
// gRPC). Admission, the cache key, the response cache, the in-process call
// and error masking are written here once.

export interface UnaryCodec<In> {
  /** The cache's namespace for the bytes this codec writes (gRPC and Connect's binary GET share theirs). */
  readonly encoding: CacheEncoding;
  /** The form of ready list rows its encode() splices (domain/wire/fragments.ts); none: whole messages. */
  readonly wire?: WireForm;
  /** The request message; throws a ConnectError for the caller's mistakes. */
  decode(input: In): Message;
  encode(output: Message): Encoded;
}

export interface UnaryExchange<In, R> {
  readonly apiKey: string | undefined;
  /** The client address's rate-limit bucket (policy/client-address.ts). */
  readonly bucket: string;
  /** Set for GETs: the URL, under which the request's cache key is remembered once it was answered. */
  readonly url: string | undefined;
  readonly log: ErrorLogger;
  /** The protocol's request, read once the call is admitted. */
  input(): In | Promise<In>;
  /** Headers of the answer, success or error (the rate-limit state). */
  setHeaders(headers: Record<string, string>): void;
  send(entry: CachedResponse): R;
  fail(error: ConnectError): R;
}

export interface UnaryDeps {
  services: ServiceSet;
  admission: Admission;
  cache: ResponseCache;
  watch: DataVersionWatch;
}

export interface UnaryPipeline<In, R> {
  (exchange: UnaryExchange<In, R>): R | Promise<R>;
  /** Whether a GET of `url` was answered before and its cache key is remembered (unary/node-exchange.ts answers those without Fastify). */
  knows(url: string): boolean;
}

/**
 * The pipeline of one method for one codec, compiled at startup. A cached
 * answer to a request admitted in-process is written synchronously: no
 * promise for the transport to wait on.
 */
export function compileUnary<In, R>(deps: UnaryDeps, method: DescMethodUnary, codec: UnaryCodec<In>): UnaryPipeline<In, R> {
  const impl = deps.services.unary(method);
  // What the method is told of this codec: the form of ready rows it splices.
  const call: LocalCall | undefined = codec.wire === undefined ? undefined : { wire: codec.wire };
  const requestKey = compileRequestKey(method.input);
  const collectionsOf = compileCollectionsOf(method.input);
  const procedure = `/${method.parent.typeName}/${method.name}`;
  const prefix = cacheKeyPrefix(codec.encoding, procedure);
  // URL -> cache key, for GETs: a repeated URL skips decoding (bounded; ParsedKeyMemo).
  let urls: ParsedKeyMemo | undefined;
  // A clock-dependent answer is never kept: an empty cache of its own.
  const cache = CLOCK_DEPENDENT_PROCEDURES.has(procedure) ? new ResponseCache(0, deps.watch) : deps.cache;
  // With the cache off (--cache-mb 0) no key is ever looked up: none is made.
  const caching = cache.enabled;

  const fail = (x: UnaryExchange<In, R>, err: unknown): R => x.fail(publicError(err, x.log, procedure));

  const answer = (x: UnaryExchange<In, R>, key: string, message: Message | undefined, remember: boolean): R | Promise<R> => {
    const entry = cachedEntry(cache, deps.watch, key, async (stampBeforeRead) => {
      const input = message ?? codec.decode(await x.input());
      stampBeforeRead(collectionsOf(input));
      return codec.encode(await impl(input, call));
    });
    // Remembered once answered: a URL that failed validation never is.
    if (!(entry instanceof Promise)) {
      if (remember) (urls ??= new ParsedKeyMemo()).set(x.url!, key);
      return x.send(entry);
    }
    return entry.then(
      (e) => {
        if (remember) (urls ??= new ParsedKeyMemo()).set(x.url!, key);
        return x.send(e);
      },
      (err: unknown) => fail(x, err),
    );
  };

  const decoded = (x: UnaryExchange<In, R>, input: In): R | Promise<R> => {
    const message = codec.decode(input);
    if (!caching) return answer(x, "", message, false);
    return answer(x, prefix + requestKey(message), message, x.url !== undefined);
  };

  const admitted = (x: UnaryExchange<In, R>, a: Admitted): R | Promise<R> => {
    if (a.rate !== undefined) x.setHeaders(rateLimitHeaders(a.rate));
    try {
      if (a.error !== undefined) throw a.error;
      const known = x.url === undefined ? undefined : urls?.get(x.url);
      if (known !== undefined) return answer(x, known, undefined, false);
      const input = x.input();
      if (input instanceof Promise) {
        return input.then(
          (i) => {
            try {
              return decoded(x, i);
            } catch (err) {
              return fail(x, err);
            }
          },
          (err: unknown) => fail(x, err),
        );
      }
      return decoded(x, input);
    } catch (err) {
      return fail(x, err);
    }
  };

  const pipeline = (x: UnaryExchange<In, R>): R | Promise<R> => {
    const a = deps.admission.admit(x.apiKey, x.bucket);
    return a instanceof Promise ? a.then((v) => admitted(x, v), (err: unknown) => fail(x, err)) : admitted(x, a);
  };
  return Object.assign(pipeline, { knows: (url: string) => urls?.has(url) === true });
}
