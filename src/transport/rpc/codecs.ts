import { type DescMethodUnary, fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import { contentTypeUnaryJson, contentTypeUnaryProto } from "@connectrpc/connect/protocol-connect";
import type { UnaryCodec } from "../unary/pipeline.js";
import { undecodable } from "./errors.js";
import { jsonMessageText } from "./json-text.js";
import { spliceBinary } from "../../domain/wire/fragments.js";

// The RPC protocols' codecs for the unary pipeline (unary/pipeline.ts): a
// message's bytes, once the protocol has taken them out of its framing
// (Connect GET's query parameter, gRPC's length prefix). A message that does
// not decode is the caller's mistake: invalid_argument. Binary takes a list's
// ready rows (domain/wire/fragments.ts); Connect's JSON, whole messages.

/** Protobuf binary: Connect GET with encoding=proto, and gRPC (whose response bytes are the same). */
export function protoCodec(method: DescMethodUnary): UnaryCodec<Uint8Array> {
  return {
    encoding: "connect-proto",
    wire: "binary",
    decode(bytes) {
      try {
        return fromBinary(method.input, bytes);
      } catch (err) {
        throw undecodable(method.input.typeName, err);
      }
    },
    encode: (output) => ({ body: Buffer.from(spliceBinary(output, toBinary(method.output, output))), contentType: contentTypeUnaryProto }),
  };
}

/** Protobuf JSON: Connect GET with encoding=json. Unknown fields are refused, like REST's unknown parameters; the text as json-text.ts takes it. */
export function jsonCodec(method: DescMethodUnary): UnaryCodec<Uint8Array> {
  return {
    encoding: "connect-json",
    decode(bytes) {
      try {
        return fromJsonString(method.input, jsonMessageText.decode(bytes), { ignoreUnknownFields: false });
      } catch (err) {
        throw undecodable(method.input.typeName, err);
      }
    },
    encode: (output) => ({ body: Buffer.from(toJsonString(method.output, output)), contentType: contentTypeUnaryJson }),
  };
}
