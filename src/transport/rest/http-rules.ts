import { type DescField, type DescMethod, type DescMethodServerStreaming, type DescMethodUnary, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";

// The REST surface of a service, read from its google.api.http annotations.
// Only what the transcoder serves is accepted; anything else in a rule is
// refused at startup rather than silently served differently.

export interface RestRoute {
  method: DescMethodUnary;
  /** Fastify path: `{name}` template variables become `:name`. */
  path: string;
}

/**
 * A POST rule whose body is a repeated message field of the request (the
 * ingest API's `records`): served as NDJSON, one element per line
 * (rest/ingest.ts), the request's other fields as query parameters.
 */
export interface NdjsonRoute extends RestRoute {
  /** The repeated field the lines fill. */
  body: DescField & { fieldKind: "list"; listKind: "message" };
}

/** The GET routes of unary methods: query (and path) parameters in, /v1 JSON out (rest/transcoder.ts). */
export function restRoutes(services: readonly DescService[]): RestRoute[] {
  return httpRules(services).flatMap(({ method, path, verb }) => (verb === "get" && method.methodKind === "unary" ? [{ method, path }] : []));
}

/** A GET rule of a server-streaming method: served as Server-Sent Events, one event per message (rest/sse.ts). */
export interface SseRoute {
  method: DescMethodServerStreaming;
  path: string;
}

/** The GET routes of server-streaming methods (rest/sse.ts). */
export function sseRoutes(services: readonly DescService[]): SseRoute[] {
  return httpRules(services).flatMap(({ method, path, verb }) => (verb === "get" && method.methodKind === "server_streaming" ? [{ method, path }] : []));
}

/** The POST routes that take NDJSON (rest/ingest.ts). */
export function ndjsonRoutes(services: readonly DescService[]): NdjsonRoute[] {
  return httpRules(services).flatMap((r) => (r.verb === "post" ? [{ method: r.method as DescMethodUnary, path: r.path, body: r.body! }] : []));
}

interface HttpRule {
  method: DescMethodUnary | DescMethodServerStreaming;
  path: string;
  verb: "get" | "post";
  body?: NdjsonRoute["body"];
}

function httpRules(services: readonly DescService[]): HttpRule[] {
  const routes: HttpRule[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const where = `${service.typeName}.${method.name}`;
      const rule = getOption(method, http);
      if (rule.pattern.case !== "get" && rule.pattern.case !== "post") {
        throw new Error(`${where}: only GET rules, and POST rules taking NDJSON, are transcoded, got ${rule.pattern.case}`);
      }
      if (!servable(method, rule.pattern.case)) {
        throw new Error(`${where}: only unary methods, and GET rules of server-streaming ones (Server-Sent Events), can have REST routes`);
      }
      let body: NdjsonRoute["body"] | undefined;
      if (rule.pattern.case === "get") {
        if (rule.body !== "") throw new Error(`${where}: a GET rule cannot map a body ("body: ${rule.body}")`);
      } else {
        const field = method.input.fields.find((f) => f.name === rule.body);
        if (field?.fieldKind !== "list" || field.listKind !== "message") {
          throw new Error(`${where}: a POST rule's body must name a repeated message field of ${method.input.typeName} (served as NDJSON), got "${rule.body}"`);
        }
        if (method.methodKind !== "unary") throw new Error(`${where}: a POST rule needs a unary method`);
        body = field as NdjsonRoute["body"];
      }
      if (rule.responseBody !== "") throw new Error(`${where}: response_body is not served`);
      if (rule.additionalBindings.length > 0) throw new Error(`${where}: additional_bindings are not served`);
      const template = rule.pattern.value;
      const vars = [...template.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]!);
      for (const v of vars) {
        if (!/^[a-z_][a-z0-9_]*$/.test(v)) {
          throw new Error(`${where}: path variable {${v}} is not served (only {field}, no =pattern or nested field)`);
        }
      }
      if (/\*|:[a-z]/i.test(template.replace(/\{[^}]*\}/g, ""))) {
        throw new Error(`${where}: wildcards and verbs in path templates are not served (${template})`);
      }
      routes.push({
        method,
        path: template.replace(/\{([^}=]+)\}/g, ":$1"),
        verb: rule.pattern.case,
        ...(body === undefined ? {} : { body }),
      });
    }
  }
  return routes;
}

function servable(method: DescMethod, verb: "get" | "post"): method is DescMethodUnary | DescMethodServerStreaming {
  return method.methodKind === "unary" || (method.methodKind === "server_streaming" && verb === "get");
}
