import { gunzipSync } from "node:zlib";
import { fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, contentTypeUnaryJson, contentTypeUnaryProto, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance } from "fastify";
import { readOnlyUnaryMethods, type ServiceSet } from "../../service/services.js";
import { cacheKeyPrefix, compileRequestKey, sendCached } from "../cache/cached-response.js";
import type { DataVersionWatch, ResponseCache } from "../cache/freshness.js";
import { type Admission, rateLimitHeaders } from "../policy/admission.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, publicError } from "../policy/guards.js";
import type { QueryObject } from "../rest/query.js";
import { MAX_REQUEST_MESSAGE_BYTES } from "./body.js";
import { undecodable } from "./errors.js";

// Connect's GET form of unary calls (methods marked NO_SIDE_EFFECTS):
// `GET /pkg.Service/Method?encoding=proto|json&message=...[&base64=1][&compression=gzip]`.
// Served here rather than by connect-node so that it shares the REST path's
// in-process call, response cache and conditional requests (ETag / 304):
// a Connect GET is cacheable HTTP. Connect POST, gRPC and gRPC-Web go to
// connect-node directly (entry.ts, rpc/gate.ts). Responses are never compressed.


export interface ConnectGetDeps {
  services: ServiceSet;
  admission: Admission;
  cache: ResponseCache;
  watch: DataVersionWatch;
  addresses: ClientAddresses;
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function decodeMessage(q: QueryObject): Uint8Array {
  const message = single(q.message) ?? "";
  let bytes: Uint8Array;
  try {
    bytes = single(q.base64) === "1" ? base64Decode(message) : Buffer.from(message, "utf8");
  } catch {
    throw new ConnectError("message is not valid base64", Code.InvalidArgument);
  }
  const compression = single(q.compression) ?? "identity";
  if (compression === "identity") return bytes;
  if (compression !== "gzip") {
    throw new ConnectError(`server does not support compression "${compression}"; use gzip or identity`, Code.Unimplemented);
  }
  try {
    return gunzipSync(bytes, { maxOutputLength: MAX_REQUEST_MESSAGE_BYTES });
  } catch {
    throw new ConnectError("message is not valid gzip or is too large", Code.InvalidArgument);
  }
}

export function registerConnectGetRoutes(app: FastifyInstance, deps: ConnectGetDeps): void {
  for (const { method, procedure } of readOnlyUnaryMethods(deps.services.services)) {
    const impl = deps.services.unary(method);
    const requestKey = compileRequestKey(method.input);

    app.get(procedure, async (request, reply) => {
      const q = request.query as QueryObject;
      const encoding = single(q.encoding);
      if (encoding !== "proto" && encoding !== "json") {
        return reply.code(415).send();
      }
      const binary = encoding === "proto";
      try {
        const admitted = await deps.admission.admit(apiKeyFrom(request.headers), deps.addresses.bucketOf(request.raw));
        if (admitted.rate !== undefined) reply.headers(rateLimitHeaders(admitted.rate));
        if (admitted.error !== undefined) throw admitted.error;
        const bytes = decodeMessage(q);
        let input;
        try {
          input = binary
            ? fromBinary(method.input, bytes)
            : fromJsonString(method.input, Buffer.from(bytes).toString("utf8"), { ignoreUnknownFields: false });
        } catch (err) {
          throw undecodable(method.input.typeName, err);
        }
        const key = cacheKeyPrefix(`connect-${encoding}`, procedure) + requestKey(input);
        return await sendCached(request, reply, deps.cache, deps.watch, key, async () => {
          const output = await impl(input);
          return binary
            ? { body: Buffer.from(toBinary(method.output, output)), contentType: contentTypeUnaryProto }
            : { body: Buffer.from(toJsonString(method.output, output)), contentType: contentTypeUnaryJson };
        });
      } catch (err) {
        const error = publicError(err, request.log, procedure);
        return reply
          .code(codeToHttpStatus(error.code))
          .type(contentTypeUnaryJson)
          .send(Buffer.from(errorToJsonBytes(error, {})));
      }
    });
  }
}
