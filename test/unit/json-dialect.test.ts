import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ListListingsResponseSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListCollectionsResponseSchema, ListTweetsResponseSchema } from "../../gen/marketdata/v1/collection_service_pb.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import type { DescMessage, Message } from "@bufbuild/protobuf";
import { compileJsonWriter } from "../../src/domain/wire/json-writer.js";
import { toRestJson as oracle } from "../support/rest-json-oracle.js";

/** The compiled writer's output, checked against the reflective oracle on every call. */
function toRestJson(desc: DescMessage, msg: Message): Record<string, unknown> {
  const json = JSON.parse(compileJsonWriter(desc)(msg)) as Record<string, unknown>;
  expect(json).toEqual(oracle(desc, msg));
  return json;
}

describe("REST JSON dialect", () => {
  it("writes every field, defaults included, int64 as numbers and enums by short name", () => {
    const msg = create(ListListingsResponseSchema, {
      success: 1,
      data: [{ marketplaceId: "0x1f", createdAt: 1_700_000_000n, status: ListingStatus.FULFILLED }],
    });
    expect(toRestJson(ListListingsResponseSchema, msg)).toEqual({
      success: 1,
      cursor: "",
      data: [
        {
          marketplaceId: "0x1f",
          marketplace: "",
          contractAddress: "",
          assetId: "",
          createdAt: 1_700_000_000,
          lastUpdatedAt: 0,
          price: "",
          currency: "",
          maker: "",
          expiresAt: 0,
          quantity: "",
          block: 0,
          blockHash: "",
          status: "FULFILLED",
        },
      ],
    });
  });

  it("writes unset message fields as null and set ones as objects", () => {
    const msg = create(ListTweetsResponseSchema, {
      success: 1,
      data: [{ id: "1", retweetedStatus: { id: "0", interaction: 3n } }, { id: "2" }],
    });
    const json = toRestJson(ListTweetsResponseSchema, msg) as { data: Record<string, unknown>[] };
    expect(json.data[1]!.retweetedStatus).toBeNull();
    expect(json.data[1]!.user).toBeNull();
    expect(json.data[0]!.retweetedStatus).toMatchObject({ id: "0", interaction: 3, retweetedStatus: null, possiblySensitive: false });
  });

  it("writes an unset optional scalar as null and a set one as its value, as the oracle", () => {
    const msg = create(ListCollectionsResponseSchema, { data: [{ floorChange1d: 0 }, {}] });
    const json = toRestJson(ListCollectionsResponseSchema, msg) as { data: { floorChange1d: number | null }[] };
    expect(json.data.map((d) => d.floorChange1d)).toEqual([0, null]);
  });

  it("keeps the unspecified enum value's short name", () => {
    const msg = create(ListListingsResponseSchema, { data: [{}] });
    expect((toRestJson(ListListingsResponseSchema, msg) as { data: { status: string }[] }).data[0]!.status).toBe("UNSPECIFIED");
  });

  it("writes escapes, doubles, non-finite doubles, 64-bit numbers and unknown enum numbers like the oracle", () => {
    const msg = create(ListTweetsResponseSchema, {
      success: 1,
      data: [{ id: 'q"\\\n\u2028', text: "é", retweetCount: 7n, retweetedStatus: { interaction: 2n ** 53n } }],
    });
    expect(toRestJson(ListTweetsResponseSchema, msg).data).toBeDefined();
    const listing = create(ListListingsResponseSchema, { data: [{ status: 99 as ListingStatus }] });
    expect((toRestJson(ListListingsResponseSchema, listing) as { data: { status: unknown }[] }).data[0]!.status).toBe(99);
  });
});
