import type { DescMessage, DescMethodUnary, Message } from "@bufbuild/protobuf";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ServiceSet } from "../../service/services.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { FastifyExchange, type ErrorForm } from "../unary/fastify-exchange.js";
import { compileUnary, type UnaryCodec, type UnaryDeps } from "../unary/pipeline.js";
import { restRoutes } from "./http-rules.js";
import { compileJsonWriter } from "./json-writer.js";
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
    decode: (input) => parse(input.query, input.params),
    encode: (output: Message) => ({ body: Buffer.from(write(output)), contentType: JSON_TYPE }),
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

export function registerRestRoutes(app: FastifyInstance, deps: RestDeps): void {
  for (const { method, path } of restRoutes(deps.services.services)) {
    const run = compileUnary(deps, method, restCodec(method));
    const errorForm = restErrorForm(method.output);
    // Not an async function: a cached answer to a request admitted in-process is sent synchronously.
    app.get(path, (request, reply) => run(new FastifyExchange(request, reply, deps.addresses, readRest, errorForm, true)));
  }
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
