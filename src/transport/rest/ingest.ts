import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import { isKind } from "../../domain/kinds/index.js";
import { type IngestLine, rejectionsOf, toIngestResponse, tooLarge } from "../../service/ingest-service.js";
import { MAX_BATCH_BYTES } from "../../domain/ingest-limits.js";
import type { ServiceSet } from "../../service/services.js";
import { type Admission, type Admitted, rateLimitHeaders, type Surface } from "../policy/admission.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, errorHeaders, type ErrorLogger, publicError } from "../policy/guards.js";
import { ndjsonRoutes } from "./http-rules.js";
import { NOT_UTF8, parseLine } from "../../domain/kinds/fields.js";
import { NotUtf8, splitLines } from "../../ingest/line-batches.js";
import { compileJsonWriter } from "../../domain/wire/json-writer.js";
import { compileQueryParser, type QueryObject } from "./query.js";

// POST /v1/ingest/KIND: the ingest RPCs' POST rules (http-rules.ts
// ndjsonRoutes), their `records` as NDJSON, one record per line, exactly
// the lines `marketdata import KIND` reads; the request's other fields
// (skipInvalid) as query parameters. Admitted before the body is read (a
// key with the ingest scope, the ingest rate limit), then the batch goes to
// the one ingest path (service/ingest-service.ts). The answer is the /v1
// JSON of IngestResponse; errors are {code, message}, and a batch refused
// for invalid lines also carries accepted, duplicates and rejected.

export const NDJSON_TYPES = ["application/x-ndjson", "application/jsonl"];

export interface IngestRouteDeps {
  services: ServiceSet;
  admission: Admission;
  addresses: ClientAddresses;
}

const JSON_TYPE = "application/json; charset=utf-8";
const WRONG_TYPE = `send the records as NDJSON, one per line, with content-type ${NDJSON_TYPES[0]}`;

function isNdjson(type: string | undefined): boolean {
  return type !== undefined && NDJSON_TYPES.includes(type.split(";")[0]!.trim().toLowerCase());
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers["transfer-encoding"] !== undefined || (headers["content-length"] !== undefined && headers["content-length"] !== "0");
}

export function registerIngestRoutes(app: FastifyInstance, deps: IngestRouteDeps): void {
  const routes = ndjsonRoutes(deps.services.services);
  if (routes.length === 0) return;
  // In a scope of their own: the NDJSON parser and the error form apply to these routes only.
  app.register(async (scope) => {
    // The bytes, not a string: each line is checked to be UTF-8 before it is decoded (a decoder would store U+FFFD).
    scope.addContentTypeParser(NDJSON_TYPES, { parseAs: "buffer", bodyLimit: MAX_BATCH_BYTES }, (_req, body, done) => done(null, body));
    scope.setErrorHandler((err: Error & { statusCode?: number }, request, reply) => {
      // Fastify's own refusals of the body (type, size, framing) are the caller's; anything else is ours.
      const status = err.statusCode ?? 500;
      if (status >= 500) return fail(reply, publicError(err, request.log, request.url));
      const code = status === 413 ? Code.ResourceExhausted : Code.InvalidArgument;
      const message =
        status === 413
          ? `the body exceeds ${MAX_BATCH_BYTES} bytes; split the batch`
          : status === 415
            ? `send the records as NDJSON, one per line, with content-type ${NDJSON_TYPES[0]}`
            : err.message;
      return fail(reply, new ConnectError(message, code), status);
    });
    for (const { method, path, body } of routes) {
      const kind = path.slice(path.lastIndexOf("/") + 1);
      if (!isKind(kind)) throw new Error(`${method.parent.typeName}.${method.name}: ${path} names no importable kind`);
      const parse = compileQueryParser(method.input, body);
      const write = compileJsonWriter(method.output);
      scope.post(path, {
        // Before the body is read: a caller without a write key costs no upload.
        onRequest: admitFirst(deps, "ingest", (request, reply) => {
          // Before any parser reads the body: NDJSON only (a JSON body would be parsed whole by Fastify's own parser).
          if (!isNdjson(request.headers["content-type"]) && hasBody(request.headers)) {
            fail(reply, new ConnectError(WRONG_TYPE, Code.InvalidArgument), 415);
            return false;
          }
          return true;
        }),
        handler: async (request, reply) => {
          try {
            const options = parse(request.query as QueryObject) as unknown as { skipInvalid: boolean; chain: string };
            // A body some other parser took (HTTP/2 need not declare its length up front).
            if (request.body !== undefined && !Buffer.isBuffer(request.body)) return fail(reply, new ConnectError(WRONG_TYPE, Code.InvalidArgument), 415);
            const lines = ndjsonLines(request.body ?? EMPTY);
            const result = await deps.services.ingest.batch(kind, lines, options.skipInvalid, options.chain);
            return reply.header("cache-control", "no-store").type(JSON_TYPE).send(write(toIngestResponse(result)));
          } catch (err) {
            return fail(reply, publicError(err, request.log as ErrorLogger, request.url));
          }
        },
      });
    }
  });
}

/**
 * An onRequest hook of the NDJSON routes: the request admitted (its key,
 * its rate limit: admission.ts) before anything else, refused in their
 * error form; `then`, once admitted, may refuse it too (false: it did).
 */
export function admitFirst(
  deps: { admission: Admission; addresses: ClientAddresses },
  surface: Surface,
  then: (request: FastifyRequest, reply: FastifyReply) => boolean = () => true,
): onRequestHookHandler {
  return (request, reply, done) => {
    const admittedThen = (a: Admitted) => {
      if (a.rate !== undefined) reply.headers(rateLimitHeaders(a.rate));
      if (a.error !== undefined) {
        fail(reply, a.error);
        return;
      }
      if (then(request, reply)) done();
    };
    const admitted = deps.admission.admit(apiKeyFrom(request.headers), deps.addresses.bucketOf(request.raw), surface);
    if (admitted instanceof Promise) admitted.then(admittedThen, (err: unknown) => fail(reply, publicError(err, request.log, request.url)));
    else admittedThen(admitted);
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * The body's non-blank lines, numbered from 1 as an editor would (blank
 * lines count), each parsed, or said to be invalid JSON or not UTF-8 text.
 */
export function ndjsonLines(body: Buffer): IngestLine[] {
  const lines: IngestLine[] = [];
  let line = 0;
  for (const l of splitLines(body)) {
    line += 1;
    if (l instanceof NotUtf8) {
      tooLarge(lines.length + 1, true);
      lines.push({ line, invalid: { field: "record", reason: NOT_UTF8 } });
      continue;
    }
    const text = l.trim();
    if (text === "") continue;
    // Counted before parsing: an oversized batch is refused without parsing it all.
    tooLarge(lines.length + 1, true);
    lines.push({ line, ...parseLine(text) });
  }
  return lines;
}

/** The error form of the NDJSON routes (ingest, export): {code, message}, plus the rejected lines of a batch refused for them. */
export function fail(reply: FastifyReply, error: ConnectError, status = codeToHttpStatus(error.code)): FastifyReply {
  const detail = rejectionsOf(error);
  const body = {
    code: codeToString(error.code),
    message: error.rawMessage,
    ...(detail === undefined ? {} : { accepted: detail.accepted, duplicates: detail.duplicates, rejected: detail.rejected.map((r) => ({ line: r.line, message: r.message })) }),
  };
  return reply.status(status).headers(errorHeaders(error)).header("cache-control", "no-store").type(JSON_TYPE).send(body);
}
