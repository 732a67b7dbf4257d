import type http2 from "node:http2";
import { type DescMethodServerStreaming, fromBinary, toBinary } from "@bufbuild/protobuf";
import { serverStreamingMethods } from "../../service/services.js";
import type { ClientAddresses } from "../policy/client-address.js";
import { apiKeyFrom, type ErrorLogger } from "../policy/guards.js";
import { compileStream, type StreamCodec, type StreamDeps, type StreamPipeline } from "../stream/pipeline.js";
import { readBody, unwrapEnvelope } from "./body.js";
import { grpcStatusOf, percentEncode, undecodable, writeRpcError } from "./errors.js";
import { type DirectGrpcHandler, isGrpcCallOf } from "./grpc-unary.js";

// gRPC calls to server-streaming methods (the live feeds) through the stream
// pipeline (stream/pipeline.ts) rather than connect-node's general
// machinery: a heap snapshot of 2,000 idle WatchSales streams through
// connect-node held 40 KB each (15 async generators, 21 promises and 97
// closures a stream, its layers of async-iterable transforms), against a
// target of 20 KB per idle subscriber. Here a call is: admitted before its
// body is read, its one length-prefixed message read and decoded, then one
// length-prefixed message per DATA frame, and the trailers (the error and
// its metadata, the resume token, when it ends with one). gRPC-Web and
// Connect streams stay with connect-node.

export interface GrpcStreamDeps extends StreamDeps {
  addresses: ClientAddresses;
  log: ErrorLogger;
  readMaxBytes: number;
}

const GRPC = { protocol: "grpc", binary: true } as const;

/** A call's body, and whether its message is gzip-compressed (grpc-encoding). */
interface GrpcInput {
  body: Buffer;
  gzip: boolean;
}

function grpcCodec(method: DescMethodServerStreaming, readMaxBytes: number): StreamCodec<GrpcInput> {
  return {
    async decode({ body, gzip }) {
      const bytes = await unwrapEnvelope(body, gzip, readMaxBytes);
      try {
        return fromBinary(method.input, bytes);
      } catch (err) {
        throw undecodable(method.input.typeName, err);
      }
    },
    headers: { "content-type": "application/grpc+proto" },
    message(m) {
      const bytes = toBinary(method.output, m);
      const framed = Buffer.allocUnsafe(5 + bytes.length);
      framed[0] = 0;
      framed.writeUInt32BE(bytes.length, 1);
      framed.set(bytes, 5);
      return framed;
    },
    finish(res, error) {
      const trailers: Record<string, string> = { "grpc-status": String(error?.code ?? 0) };
      if (error !== undefined) {
        trailers["grpc-message"] = percentEncode(error.rawMessage);
        error.metadata.forEach((value, name) => {
          trailers[name] = value;
        });
      }
      grpcStatusOf.set(res, error?.code ?? 0);
      (res as http2.Http2ServerResponse).addTrailers(trailers);
      res.end();
    },
    fail(res, error, headers) {
      writeRpcError(res, GRPC, error, headers);
    },
  };
}

export function createGrpcStreamHandler(deps: GrpcStreamDeps): DirectGrpcHandler {
  const routes = new Map<string, StreamPipeline<GrpcInput>>();
  for (const { method, procedure } of serverStreamingMethods(deps.services.services)) {
    routes.set(procedure, compileStream(deps, method, grpcCodec(method, deps.readMaxBytes)));
  }
  return {
    accepts: (req) => isGrpcCallOf(req, routes),
    handle(req, res) {
      void routes.get(req.url)!({
        req,
        res,
        apiKey: apiKeyFrom(req.headers),
        bucket: deps.addresses.bucketOf(req),
        log: deps.log,
        input: async () => ({ body: await readBody(req, deps.readMaxBytes + 5), gzip: req.headers["grpc-encoding"] === "gzip" }),
      });
    },
  };
}
