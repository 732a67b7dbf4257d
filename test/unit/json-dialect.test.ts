import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ListListingsResponseSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListTweetsResponseSchema } from "../../gen/marketdata/v1/collection_service_pb.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import { toRestJson } from "../../src/transport/rest/json-dialect.js";

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

  it("keeps the unspecified enum value's short name", () => {
    const msg = create(ListListingsResponseSchema, { data: [{}] });
    expect((toRestJson(ListListingsResponseSchema, msg) as { data: { status: string }[] }).data[0]!.status).toBe("UNSPECIFIED");
  });
});
