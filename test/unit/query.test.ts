import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ListAppraisalsRequestSchema, ListListingsRequestSchema, ListListingsResponseSchema, ListSalesRequestSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import { parse as parseQueryString } from "node:querystring";
import type { DescMessage } from "@bufbuild/protobuf";
import { compileQueryParser, type QueryObject } from "../../src/transport/rest/query.js";

// Node's querystring gives the same shape as Fastify's parser: repeated keys as arrays.
const parse = (schema: DescMessage, q: string) =>
  compileQueryParser(schema)(parseQueryString(q) as QueryObject) as unknown as Record<string, unknown>;

function error(fn: () => unknown): ConnectError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConnectError);
    expect((e as ConnectError).code).toBe(Code.InvalidArgument);
    return e as ConnectError;
  }
  throw new Error("no error");
}

describe("query string to request message", () => {
  it("maps JSON names and proto names to fields", () => {
    expect(parse(ListSalesRequestSchema, "contractAddress=0xab&asset_id=7&limit=5")).toMatchObject({
      contractAddress: "0xab",
      assetId: "7",
      limit: 5,
    });
  });

  it("parses 64-bit integers as bigint and leaves absent optionals unset", () => {
    const m = parse(ListSalesRequestSchema, "since=1700000000");
    expect(m.since).toBe(1_700_000_000n);
    expect(m.until).toBeUndefined();
    expect(m.limit).toBeUndefined();
  });

  it("splits repeated fields on commas and accepts repeated keys", () => {
    expect(parse(ListAppraisalsRequestSchema, "assetId=1,2&assetId=3").assetId).toEqual(["1", "2", "3"]);
  });

  it("accepts short and full enum names", () => {
    expect(parse(ListListingsRequestSchema, "status=EXPIRED").status).toBe(ListingStatus.EXPIRED);
    expect(parse(ListListingsRequestSchema, "status=LISTING_STATUS_CREATED").status).toBe(ListingStatus.CREATED);
    // In any case, as addresses are (issue 49, item 20).
    expect(parse(ListListingsRequestSchema, "status=expired").status).toBe(ListingStatus.EXPIRED);
    expect(parse(ListListingsRequestSchema, "status=listing_status_created").status).toBe(ListingStatus.CREATED);
    expect(error(() => parse(ListListingsRequestSchema, "status=sold")).rawMessage).toBe(
      'status must be one of CREATED, FULFILLED, CANCELLED, EXPIRED, got "sold"',
    );
  });

  it("rejects unknown parameters, listing the accepted ones", () => {
    expect(error(() => parse(ListAppraisalsRequestSchema, "page=2")).rawMessage).toBe(
      'unknown query parameter "page"; accepted: contractAddress, assetId, limit, cursor, chain',
    );
  });

  it("rejects a non-repeated parameter given twice, even with the other name", () => {
    expect(error(() => parse(ListSalesRequestSchema, "limit=1&limit=2")).rawMessage).toBe("limit must be given at most once");
    expect(error(() => parse(ListSalesRequestSchema, "marketplace=A&marketplace=B")).rawMessage).toBe("marketplace must be given at most once");
    expect(error(() => parse(ListListingsRequestSchema, "assetId=1&asset_id=1")).rawMessage).toBe("assetId must be given at most once");
  });

  it("takes ListSales' assetId as a comma-separated list, repeated keys too (issue 49, item 20)", () => {
    expect(parse(ListSalesRequestSchema, "assetId=1&asset_id=2,3").assetId).toBe("1,2,3");
    expect(parse(ListSalesRequestSchema, "assetId=7").assetId).toBe("7");
  });

  it.each([
    ["limit=1.5", 'limit must be an integer, got "1.5"'],
    ["limit=", 'limit must be an integer, got ""'],
    ["limit=2147483648", "limit is out of range, got 2147483648"],
    ["since=9223372036854775808", "since is out of range, got 9223372036854775808"],
    ["since=1e9", 'since must be an integer, got "1e9"'],
    ["limit=-2147483649", "limit is out of range, got -2147483649"],
    ["limit=99999999999999999999", "limit is out of range, got 99999999999999999999"],
  ])("rejects %s", (q, message) => {
    expect(error(() => parse(ListSalesRequestSchema, q)).rawMessage).toBe(message);
  });

  it("converts integers at both ends of their ranges, small and large", () => {
    expect(parse(ListSalesRequestSchema, "limit=-2147483648").limit).toBe(-2147483648);
    expect(parse(ListSalesRequestSchema, "limit=007").limit).toBe(7);
    expect(parse(ListSalesRequestSchema, "since=9223372036854775807").since).toBe(9223372036854775807n);
    expect(parse(ListSalesRequestSchema, "until=-5").until).toBe(-5n);
  });

  it("refuses, at compile time, request types it cannot parse from a query", () => {
    expect(() => compileQueryParser(ListListingsResponseSchema)).toThrow(/message and map fields cannot be query parameters/);
  });
});
