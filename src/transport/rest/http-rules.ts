import { type DescMethodUnary, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";

// The REST surface of a service, read from its google.api.http annotations.
// Only what the transcoder serves is accepted; anything else in a rule is
// refused at startup rather than silently served differently.

export interface RestRoute {
  method: DescMethodUnary;
  /** Fastify path: `{name}` template variables become `:name`. */
  path: string;
}

export function restRoutes(services: readonly DescService[]): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const where = `${service.typeName}.${method.name}`;
      const rule = getOption(method, http);
      if (rule.pattern.case !== "get") {
        throw new Error(`${where}: only GET rules are transcoded, got ${rule.pattern.case}`);
      }
      if (method.methodKind !== "unary") throw new Error(`${where}: only unary methods can have REST routes`);
      if (rule.body !== "") throw new Error(`${where}: a GET rule cannot map a body ("body: ${rule.body}")`);
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
      routes.push({ method: method as DescMethodUnary, path: template.replace(/\{([^}=]+)\}/g, ":$1") });
    }
  }
  return routes;
}
