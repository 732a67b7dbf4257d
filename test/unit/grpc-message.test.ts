import { describe, expect, it } from "vitest";
import { percentEncode } from "../../src/transport/rpc/errors.js";

describe("grpc-message percent-encoding", () => {
  it("keeps printable ASCII, encodes %, control characters and UTF-8 bytes", () => {
    expect(percentEncode("limit must be between 1 and 50, got 99")).toBe("limit must be between 1 and 50, got 99");
    expect(percentEncode("100% é\n")).toBe("100%25 %C3%A9%0A");
    expect(decodeURIComponent(percentEncode('a "quoted" value: ü'))).toBe('a "quoted" value: ü');
  });
});
