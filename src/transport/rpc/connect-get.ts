import { gunzipSync } from "node:zlib";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, contentTypeUnaryJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { readOnlyUnaryMethods } from "../../service/services.js";
import type { ClientAddresses } from "../policy/client-address.js";
import type { QueryObject } from "../rest/query.js";
import { type ErrorForm, FastifyExchange } from "../unary/fastify-exchange.js";
import { compileUnary, type UnaryDeps } from "../unary/pipeline.js";
import { MAX_REQUEST_MESSAGE_BYTES } from "./body.js";
import { jsonCodec, protoCodec } from "./codecs.js";

// Connect's GET form of unary calls (methods marked NO_SIDE_EFFECTS):
// `GET /pkg.Service/Method?encoding=proto|json&message=...[&base64=1][&compression=gzip]`.
// Served here rather than by connect-node so that it goes through the unary
// pipeline (unary/pipeline.ts) with REST and gRPC: the in-process call, the
// response cache and conditional requests (ETag / 304): a Connect GET is
// cacheable HTTP. Connect POST, gRPC-Web and gRPC other than unary binary go
// to connect-node (entry.ts, rpc/gate.ts). Responses are never compressed.

export interface ConnectGetDeps extends UnaryDeps {
  addresses: ClientAddresses;
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The message bytes a Connect GET carries in its query. */
function readMessage(request: FastifyRequest): Uint8Array {
  const q = request.query as QueryObject;
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

/** Connect's error form: the code's HTTP status and its JSON error body. */
const connectErrorForm: ErrorForm = (error) => ({
  status: codeToHttpStatus(error.code),
  contentType: contentTypeUnaryJson,
  body: Buffer.from(errorToJsonBytes(error, {})),
});

export function registerConnectGetRoutes(app: FastifyInstance, deps: ConnectGetDeps): void {
  for (const { method, procedure } of readOnlyUnaryMethods(deps.services.services)) {
    const proto = compileUnary(deps, method, protoCodec(method));
    const json = compileUnary(deps, method, jsonCodec(method));
    app.get(procedure, (request, reply) => {
      const encoding = single((request.query as QueryObject).encoding);
      if (encoding !== "proto" && encoding !== "json") return reply.code(415).send();
      const run = encoding === "proto" ? proto : json;
      return run(new FastifyExchange(request, reply, deps.addresses, readMessage, connectErrorForm, false));
    });
  }
}
