import { type DescField, type DescMethodUnary, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
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

/** The GET routes: query (and path) parameters in, /v1 JSON out (rest/transcoder.ts). */
export function restRoutes(services: readonly DescService[]): RestRoute[] {
  return httpRules(services).filter((r): r is RestRoute & { verb: "get" } => r.verb === "get").map(({ method, path }) => ({ method, path }));
}

/** The POST routes that take NDJSON (rest/ingest.ts). */
export function ndjsonRoutes(services: readonly DescService[]): NdjsonRoute[] {
  return httpRules(services).flatMap((r) => (r.verb === "post" ? [{ method: r.method, path: r.path, body: r.body! }] : []));
}

interface HttpRule extends RestRoute {
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
      if (method.methodKind !== "unary") throw new Error(`${where}: only unary methods can have REST routes`);
      let body: NdjsonRoute["body"] | undefined;
      if (rule.pattern.case === "get") {
        if (rule.body !== "") throw new Error(`${where}: a GET rule cannot map a body ("body: ${rule.body}")`);
      } else {
        const field = method.input.fields.find((f) => f.name === rule.body);
        if (field?.fieldKind !== "list" || field.listKind !== "message") {
          throw new Error(`${where}: a POST rule's body must name a repeated message field of ${method.input.typeName} (served as NDJSON), got "${rule.body}"`);
        }
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
        method: method as DescMethodUnary,
        path: template.replace(/\{([^}=]+)\}/g, ":$1"),
        verb: rule.pattern.case,
        ...(body === undefined ? {} : { body }),
      });
    }
  }
  return routes;
}
