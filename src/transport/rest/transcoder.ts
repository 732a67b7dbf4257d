import type { DescMessage, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { restRoutes } from "./http-rules.js";
import { toRestJson } from "./json-dialect.js";
import { parseQuery, queryFields } from "./query.js";

// Serves every RPC that has a google.api.http rule as a /v1 JSON endpoint.
// Requests go through `transport` (an in-process router transport over the
// same routes and interceptors as the RPC protocols), so authentication,
// validation and error handling are the same code on every protocol.

const FORWARDED_HEADERS = ["x-api-key"];

export function registerRestRoutes(
  app: FastifyInstance,
  services: readonly DescService[],
  transport: Transport,
): void {
  for (const { method, path } of restRoutes(services)) {
    const fields = queryFields(method.input);
    const flag = successFlag(method.output);
    app.get(path, async (request: FastifyRequest, reply: FastifyReply) => {
      try {
        const url = new URL(request.url, "http://localhost");
        const pathParams = Object.entries((request.params ?? {}) as Record<string, string>);
        const input = parseQuery(method.input, fields, [...pathParams, ...url.searchParams]);
        const headers = new Headers();
        for (const name of FORWARDED_HEADERS) {
          const value = request.headers[name];
          if (typeof value === "string") headers.set(name, value);
        }
        const response = await transport.unary(method, request.signal, undefined, headers, input, undefined);
        return reply.type("application/json").send(toRestJson(method.output, response.message));
      } catch (err) {
        const error = ConnectError.from(err);
        // Anything unexpected was already logged by the error interceptor, or
        // happened before the call (a bug here); either way its text stays hidden.
        const known = err instanceof ConnectError;
        if (!known) request.log.error({ err }, "REST transcoding failed");
        const code = known ? error.code : Code.Internal;
        const message = known ? error.rawMessage : "internal error";
        return reply
          .status(codeToHttpStatus(code))
          .type("application/json")
          .send({ ...(flag ? { [flag]: 0 } : {}), code: codeToString(code), message });
      }
    });
  }
}

/** The response's success flag field (`successful` or `success`), by JSON name. */
function successFlag(output: DescMessage): string | undefined {
  return output.fields.find((f) => f.jsonName === "successful" || f.jsonName === "success")?.jsonName;
}
