import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { decodePageToken, encodePageToken, queryDigest } from "../../src/service/page-token.js";
import { SALE_KEY } from "../../src/store/ports/reads.js";

describe("page tokens", () => {
  const digest = queryDigest(["sales", "0xab", { marketplace: "BLUR" }]);
  const key = [1_700_000_000, 18_000_000, `0x${"f".repeat(64)}`, "7"];

  it("round-trip a keyset position, URL-safe", () => {
    const token = encodePageToken(digest, key);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodePageToken("cursor", token, digest, SALE_KEY)).toEqual(key);
  });

  it("are empty exactly when there is no next page", () => {
    expect(encodePageToken(digest, null)).toBe("");
    expect(decodePageToken("cursor", "", digest, SALE_KEY)).toBeNull();
  });

  it("differ per query, and are refused for another query", () => {
    const other = queryDigest(["sales", "0xab", { marketplace: "OPENSEA" }]);
    expect(other).not.toBe(digest);
    expect(() => decodePageToken("cursor", encodePageToken(digest, key), other, SALE_KEY)).toThrow(
      expect.objectContaining({ code: Code.InvalidArgument }),
    );
  });

  it.each([
    ["not base64url", "a+b/c"],
    ["not JSON", Buffer.from("{nope").toString("base64url")],
    ["wrong key arity", encodePageToken(digest, [1, 2])],
    ["wrong key types", encodePageToken(digest, ["1", 2, "h", "7"])],
  ])("refuse a token that does not decode: %s", (_, token) => {
    expect(() => decodePageToken("cursor", token, digest, SALE_KEY)).toThrow(/cursor is not a valid page token/);
  });
});
