import { type DescMethodUnary, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";

// The REST surface of a service, read from its google.api.http annotations.

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
      const rule = getOption(method, http);
      if (rule.pattern.case !== "get") {
        throw new Error(`${service.typeName}.${method.name}: only GET rules are transcoded, got ${rule.pattern.case}`);
      }
      if (method.methodKind !== "unary") {
        throw new Error(`${service.typeName}.${method.name}: only unary methods can have REST routes`);
      }
      routes.push({ method: method as DescMethodUnary, path: rule.pattern.value.replace(/\{([^}=]+)\}/g, ":$1") });
    }
  }
  return routes;
}
