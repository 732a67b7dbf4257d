import type { FastifyInstance } from "fastify";
import { echo } from "../../domain/echo.js";

// A GET (or HEAD) to no route answers in the API's own error form, the
// Connect error shape every other error shares, rather than Fastify's
// `{"statusCode","error","message"}`. The path is quoted and capped like any
// echo; the query string is left out (it may hold anything).

export function registerNotFound(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => {
    const url = request.url;
    const query = url.indexOf("?");
    const path = query < 0 ? url : url.slice(0, query);
    return reply
      .code(404)
      .header("cache-control", "no-store")
      .type("application/json; charset=utf-8")
      .send({ code: "not_found", message: `no route ${request.method} ${echo(path)}` });
  });
}
