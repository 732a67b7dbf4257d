import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { echo } from "../../domain/echo.js";
import type { ExportKind } from "../../domain/export-kinds.js";
import type { ExportRequest } from "../../service/export.js";
import type { ServiceSet } from "../../service/services.js";
import type { Admission } from "../policy/admission.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, publicError } from "../policy/guards.js";
import { admitFirst, fail, NDJSON_TYPES } from "./ingest.js";

// GET /v1/export/KIND: a chunk of a collection's records as the import's
// NDJSON (service/export.ts), for `marketdata import KIND` on another
// instance. The chunk is read whole first, so its headers can say where the
// next one starts (EXPORT_POSITION_HEADER) and whether the export reached
// the end (EXPORT_DONE_HEADER). Admitted as a read; each further page of
// EXPORT_PAGE records counts as one more read of the key's limit, and over
// it the read waits for the window rather than failing half way. Errors
// are the NDJSON routes' {code, message}.

export const EXPORT_PATH = "/v1/export/:kind";
export const EXPORT_POSITION_HEADER = "x-export-position";
export const EXPORT_DONE_HEADER = "x-export-done";

export interface ExportRouteDeps {
  services: ServiceSet;
  admission: Admission;
  addresses: ClientAddresses;
}

const QUERY_PARAMS = ["contractAddress", "chain", "position", "limit"] as const;

/** The request of a query: each parameter once, `limit` a whole number. */
function exportRequest(kind: string, query: Record<string, unknown>): ExportRequest {
  for (const name of Object.keys(query)) {
    if (!(QUERY_PARAMS as readonly string[]).includes(name)) throw new ConnectError(`unknown query parameter ${echo(name)}; this endpoint takes ${QUERY_PARAMS.join(", ")}`, Code.InvalidArgument);
  }
  const one = (name: (typeof QUERY_PARAMS)[number]): string => {
    const v = query[name];
    if (v === undefined) return "";
    if (typeof v !== "string") throw new ConnectError(`${name} must be given once`, Code.InvalidArgument);
    return v;
  };
  const limit = one("limit");
  if (limit !== "" && !/^[0-9]{1,9}$/.test(limit)) throw new ConnectError(`limit must be a whole number, got ${echo(limit)}`, Code.InvalidArgument);
  return { kind: kind as ExportKind, contractAddress: one("contractAddress"), chain: one("chain"), position: one("position"), limit: limit === "" ? 0 : Number(limit) };
}

export function registerExportRoutes(app: FastifyInstance, deps: ExportRouteDeps): void {
  app.get(EXPORT_PATH, {
    onRequest: admitFirst(deps, "read"),
    handler: async (request, reply) => {
      // The caller gone: a read held back for the rate limit stops waiting (the response's close: once per request).
      const ended = new AbortController();
      reply.raw.once("close", () => ended.abort());
      try {
        const req = exportRequest((request.params as { kind: string }).kind, request.query as Record<string, unknown>);
        const key = apiKeyFrom(request.headers);
        const bucket = deps.addresses.bucketOf(request.raw);
        const chunk = await deps.services.export.chunk(req, () => deps.admission.admitMessage(key, bucket, ended.signal, "read"));
        return reply
          .header("cache-control", "no-store")
          .header(EXPORT_POSITION_HEADER, chunk.position)
          .header(EXPORT_DONE_HEADER, String(chunk.done))
          .type(`${NDJSON_TYPES[0]}; charset=utf-8`)
          .send(chunk.lines.length === 0 ? "" : `${chunk.lines.join("\n")}\n`);
      } catch (err) {
        return fail(reply, publicError(err, request.log, request.url));
      }
    },
  });
}
