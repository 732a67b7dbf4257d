import type { FastifyInstance } from "fastify";
import { echo } from "../../domain/echo.js";

// A GET (or HEAD) to no route answers in the API's own error form, the
// Connect error shape every other error shares, rather than Fastify's
// `{"statusCode","error","message"}`. The path is quoted and capped like any
// echo; the query string is left out (it may hold anything). Under a /v1
// route (a trailing slash, a path below it: /v1/asset/sales/x), the body
// carries that route's success flag at 0, as its other errors do: a caller
// reading `success` or `successful` first reads a failure.

/** The success flag of the /v1 route `path` is, or lies below (segment by segment); undefined when none. */
export function flagOfPath(path: string, flags: ReadonlyMap<string, string>): string | undefined {
  for (let p = path.replace(/\/+$/, ""); p.startsWith("/v1/"); p = p.slice(0, p.lastIndexOf("/"))) {
    const flag = flags.get(p);
    if (flag !== undefined) return flag;
  }
  return undefined;
}

export function registerNotFound(app: FastifyInstance, flags: ReadonlyMap<string, string> = new Map()): void {
  app.setNotFoundHandler((request, reply) => {
    const url = request.url;
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    const flag = flagOfPath(path, flags);
    return reply
      .code(404)
      .header("cache-control", "no-store")
      .type("application/json; charset=utf-8")
      .send({ ...(flag === undefined ? {} : { [flag]: 0 }), code: "not_found", message: `no route ${request.method} ${echo(path)}` });
  });
}
