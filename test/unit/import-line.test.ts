import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { importLine, KINDS } from "../../src/domain/kinds/index.js";
import { SaleSchema } from "../../gen/marketdata/v1/resources_pb.js";

// An ingest RPC's record becomes the import line its kind's checker takes:
// by the declaration's fromMessage, or, where the message's fields are the
// shape's, by name (an int64 a number when it is one exactly, else its
// digits, which the checker refuses by name).

describe("an RPC record as its import line", () => {
  it("takes the shape's fields by name, an int64 as a number", () => {
    const sale = create(SaleSchema, {
      hash: `0x${"ab".repeat(32)}`, from: "0x1", to: "0x2", contractAddress: "0x3", assetId: "7",
      timestamp: 1_700_000_000n, block: 18_000_000n, price: "10", amountReceived: "9", currency: "ETH", marketplace: "OPENSEA",
    });
    expect(importLine("sales")(sale)).toEqual({
      hash: `0x${"ab".repeat(32)}`, from: "0x1", to: "0x2", contractAddress: "0x3", assetId: "7",
      timestamp: 1_700_000_000, block: 18_000_000, price: "10", amountReceived: "9", currency: "ETH", marketplace: "OPENSEA", blockHash: "",
      marketplaceFee: "", royaltyFee: "",
      // An answer's finality and wash fields, taken and dropped by the kind's check.
      finality: "", washFlags: [], washScore: 0, priceUsd: "",
      // Left out of the message: "", which the check reads as 1.
      quantity: "",
    });
  });

  it("keeps an int64 past 2^53 as its digits", () => {
    const sale = create(SaleSchema, { block: 2n ** 60n });
    expect(importLine("sales")(sale).block).toBe(String(2n ** 60n));
  });

  it("exists for every kind", () => {
    for (const kind of KINDS) expect(typeof importLine(kind)).toBe("function");
  });
});
