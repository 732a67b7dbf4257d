import type { DescMessage, Message } from "@bufbuild/protobuf";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ServiceSet } from "../../service/services.js";
import { cacheKeyPrefix, compileRequestKey, ParsedKeyMemo, sendCached } from "../cache/cached-response.js";
import type { DataVersionWatch, ResponseCache } from "../cache/freshness.js";
import { type Admission, type Admitted, rateLimitHeaders } from "../policy/admission.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, publicError } from "../policy/guards.js";
import { restRoutes } from "./http-rules.js";
import { compileJsonWriter } from "./json-writer.js";
import { compileQueryParser, type QueryObject } from "./query.js";

// Serves every RPC that has a google.api.http rule as a /v1 JSON endpoint.
// A request is parsed into its request message and handed to the service
// implementation in-process, with no serialization in between. The checks
// the RPC interceptors make (API key and rate limit first, error masking) are the same
// functions (policy/admission.ts, policy/guards.ts), so every protocol authenticates, validates and
// fails alike. Parser and writer are compiled per method at startup.

export interface RestDeps {
  services: ServiceSet;
  admission: Admission;
  cache: ResponseCache;
  watch: DataVersionWatch;
  addresses: ClientAddresses;
}

export function registerRestRoutes(app: FastifyInstance, deps: RestDeps): void {
  for (const { method, path } of restRoutes(deps.services.services)) {
    const parse = compileQueryParser(method.input);
    const write = compileJsonWriter(method.output);
    const requestKey = compileRequestKey(method.input);
    const impl = deps.services.unary(method);
    const flag = successFlag(method.output);
    const procedure = `/${method.parent.typeName}/${method.name}`;
    const cachePrefix = cacheKeyPrefix("rest", procedure);

    const parsedKeys = new ParsedKeyMemo();
    const fail = (request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply => {
      const error = publicError(err, request.log, procedure);
      return reply
        .status(codeToHttpStatus(error.code))
        .type("application/json; charset=utf-8")
        .send({ ...(flag ? { [flag]: 0 } : {}), code: codeToString(error.code), message: error.rawMessage });
    };

    const serve = (request: FastifyRequest, reply: FastifyReply, admitted: Admitted): FastifyReply | Promise<FastifyReply> => {
      if (admitted.rate !== undefined) reply.headers(rateLimitHeaders(admitted.rate));
      try {
        if (admitted.error !== undefined) throw admitted.error;
        const parseRequest = () => parse(request.query as QueryObject, request.params as Record<string, string> | undefined);
        const url = request.url;
        let key = parsedKeys.get(url);
        const remembered = key !== undefined;
        let input: Message | undefined;
        if (key === undefined) {
          input = parseRequest();
          key = cachePrefix + requestKey(input);
        }
        const result = sendCached(request, reply, deps.cache, deps.watch, key, async () => {
          input ??= parseRequest();
          return { body: Buffer.from(write(await impl(input))), contentType: "application/json; charset=utf-8" };
        });
        // Remembered once answered: a URL that failed validation never is.
        if (!(result instanceof Promise)) {
          if (!remembered) parsedKeys.set(url, key);
          return result;
        }
        return result.then(
          (r) => {
            if (!remembered) parsedKeys.set(url, key);
            return r;
          },
          (err: unknown) => fail(request, reply, err),
        );
      } catch (err) {
        return fail(request, reply, err);
      }
    };

    // Not an async function: with limits counted in-process, a cached answer is sent synchronously.
    app.get(path, (request: FastifyRequest, reply: FastifyReply) => {
      const admitted = deps.admission.admit(apiKeyFrom(request.headers), deps.addresses.bucketOf(request.raw));
      return admitted instanceof Promise
        ? admitted.then((a) => serve(request, reply, a), (err: unknown) => fail(request, reply, err))
        : serve(request, reply, admitted);
    });
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
