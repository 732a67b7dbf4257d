import type { DescMessage, DescMethodUnary, Message } from "@bufbuild/protobuf";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type http from "node:http";
import type http2 from "node:http2";
import querystring from "node:querystring";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { ServiceSet } from "../../service/services.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { FastifyExchange, type ErrorForm } from "../unary/fastify-exchange.js";
import { NodeExchange, type Sent } from "../unary/node-exchange.js";
import { compileUnary, type UnaryCodec, type UnaryDeps } from "../unary/pipeline.js";
import { restRoutes } from "./http-rules.js";
import { compileJsonWriter } from "../../domain/wire/json-writer.js";
import { spliceJson } from "../../domain/wire/fragments.js";
import { compileQueryParser, type QueryObject } from "./query.js";

// Serves every RPC that has a google.api.http rule as a /v1 JSON endpoint,
// through the one unary pipeline (unary/pipeline.ts) with REST's codec: the
// query (and path) parameters parsed into the request message, the response
// written in the /v1 JSON dialect, errors as {flag: 0, code, message} with
// the code's HTTP status. Parser and writer are compiled per method at
// startup; the service is called in-process, with no serialization between.

export interface RestDeps extends UnaryDeps {
  addresses: ClientAddresses;
}

interface RestInput {
  query: QueryObject;
  params: Record<string, string> | undefined;
}

const JSON_TYPE = "application/json; charset=utf-8";

/** REST's codec of one method. */
function restCodec(method: DescMethodUnary): UnaryCodec<RestInput> {
  const parse = compileQueryParser(method.input);
  const write = compileJsonWriter(method.output);
  return {
    encoding: "rest",
    wire: "json",
    decode: (input) => parse(input.query, input.params),
    encode: (output: Message) => ({ body: Buffer.from(spliceJson(output, write(output))), contentType: JSON_TYPE }),
  };
}

/** REST's error form: the family's success flag at 0, the code's name and the message. */
function restErrorForm(output: DescMessage): ErrorForm {
  const flag = successFlag(output);
  return (error) => ({
    status: codeToHttpStatus(error.code),
    contentType: JSON_TYPE,
    body: { ...(flag ? { [flag]: 0 } : {}), code: codeToString(error.code), message: error.rawMessage },
  });
}

const readRest = (request: FastifyRequest): RestInput => ({
  query: request.query as QueryObject,
  params: request.params as Record<string, string> | undefined,
});

/** The same input from Node's own request (a raw GET whose remembered key was forgotten meanwhile: rare). */
const readRaw = (req: http.IncomingMessage | http2.Http2ServerRequest): RestInput => {
  const url = req.url ?? "";
  const q = url.indexOf("?");
  return { query: (q < 0 ? {} : { ...querystring.parse(url.slice(q + 1)) }) as QueryObject, params: undefined };
};

/** A /v1 path's pipeline for GETs answered before, without Fastify (unary/node-exchange.ts). */
export interface RawGet {
  knows(url: string): boolean;
  serve(req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse, log: Logger, reqId: string, sent: Sent): void;
}

/** Registers every /v1 route with Fastify; returns the same routes by path, for the GETs they answered before. */
export function registerRestRoutes(app: FastifyInstance, deps: RestDeps): Map<string, RawGet> {
  const raw = new Map<string, RawGet>();
  for (const { method, path } of restRoutes(deps.services.services)) {
    // One pipeline for both exchanges: R is what each one's send returns.
    const run = compileUnary<RestInput, unknown>(deps, method, restCodec(method));
    const errorForm = restErrorForm(method.output);
    // Not an async function: a cached answer to a request admitted in-process is sent synchronously.
    app.get(path, (request, reply) => run(new FastifyExchange(request, reply, deps.addresses, readRest, errorForm, true)));
    raw.set(path, {
      knows: run.knows,
      serve: (req, res, log, reqId, sent) => void run(new NodeExchange(req, res, deps.addresses, readRaw, errorForm, log, reqId, sent)),
    });
  }
  return raw;
}

/** Each /v1 path's success flag field, for answers written before routing (http/url-limit.ts). */
export function successFlags(services: ServiceSet): Map<string, string> {
  const flags = new Map<string, string>();
  for (const { method, path } of restRoutes(services.services)) {
    const flag = successFlag(method.output);
    if (flag !== undefined) flags.set(path, flag);
  }
  return flags;
}

/** The response's success flag field (`successful` or `success`), by JSON name. */
function successFlag(output: DescMessage): string | undefined {
  return output.fields.find((f) => f.jsonName === "successful" || f.jsonName === "success")?.jsonName;
}
