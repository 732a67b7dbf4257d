import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { ListSalesRequestSchema, ListSalesResponseSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { clientsFor, transportFor, useFixtureServer } from "../support/server.js";

// gRPC from another implementation than connect-node's: @grpc/grpc-js, the
// client most gRPC users have. Unary read-only calls take the server's own
// gRPC path (transport/grpc-unary.ts); its answers must be connect-node's.

const t = useFixtureServer(buildFixture);
const clients: grpc.Client[] = [];
afterAll(() => clients.forEach((c) => c.close()));

function call(request: object, key: string | undefined, options: grpc.ChannelOptions = {}, path = "/marketdata.v1.AssetService/ListSales") {
  const client = new grpc.Client(t.server.baseUrl.replace("http://", ""), grpc.credentials.createInsecure(), options);
  clients.push(client);
  const md = new grpc.Metadata();
  if (key !== undefined) md.set("x-api-key", key);
  const bytes = Buffer.from(toBinary(ListSalesRequestSchema, create(ListSalesRequestSchema, request)));
  return new Promise<{ err: grpc.ServiceError | null; body?: Buffer }>((resolve) =>
    client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, bytes, md, (err, body) => resolve({ err, body })),
  );
}

describe("a @grpc/grpc-js client", () => {
  it("gets the same message as connect-node's gRPC client", async () => {
    const { err, body } = await call({ contractAddress: COLLECTION, limit: 7, marketplace: "BLUR" }, t.f.key);
    expect(err).toBeNull();
    const viaConnect = await clientsFor(transportFor("grpc", t.server.baseUrl)).asset.listSales(
      { contractAddress: COLLECTION, limit: 7, marketplace: "BLUR" },
      { headers: { "x-api-key": t.f.key } },
    );
    expect(fromBinary(ListSalesResponseSchema, body!)).toEqual(viaConnect);
    expect(viaConnect.data.length).toBe(7);
  });

  it("sends gzip-compressed requests that are understood", async () => {
    const { err, body } = await call({ contractAddress: COLLECTION, limit: 3 }, t.f.key, { "grpc.default_compression_algorithm": 2 });
    expect(err).toBeNull();
    expect(fromBinary(ListSalesResponseSchema, body!).data.length).toBe(3);
  });

  it.each([
    ["no key", { contractAddress: COLLECTION }, undefined, grpc.status.UNAUTHENTICATED, "missing API key: send it in the x-api-key header"],
    ["bad key", { contractAddress: COLLECTION }, "mdk_nope", grpc.status.UNAUTHENTICATED, "invalid or revoked API key"],
    ["bad limit", { contractAddress: COLLECTION, limit: 99 }, "KEY", grpc.status.INVALID_ARGUMENT, "limit must be between 1 and 50, got 99"],
    ["unknown collection", { contractAddress: `0x${"c".repeat(40)}` }, "KEY", grpc.status.NOT_FOUND, `collection 0x${"c".repeat(40)} not found`],
  ])("gets status and message for %s", async (_, request, key, code, message) => {
    const { err } = await call(request, key === "KEY" ? t.f.key : key);
    expect(err?.code).toBe(code);
    expect(err?.details).toBe(message);
  });

  it("gets UNIMPLEMENTED for a method the server does not have", async () => {
    const { err } = await call({}, t.f.key, {}, "/marketdata.v1.AssetService/Nope");
    expect(err?.code).toBe(grpc.status.UNIMPLEMENTED);
  });
});
