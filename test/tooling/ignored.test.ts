import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

// What the README's own steps make in the work tree is ignored by git
// (issue 49, item 19): the Python stubs of `buf generate --template
// clients/python/…` and the packed client of `npm pack ./packages/client`.

describe("the work tree after the README's steps", () => {
  it("shows none of what they made as untracked", () => {
    const paths = ["py/marketdata/v1/asset_service_pb2.py", "marketdata-client-0.1.0.tgz", "packages/client/marketdata-client-0.1.0.tgz", "data/marketdata.sqlite"];
    const ignored = execFileSync("git", ["check-ignore", "--no-index", ...paths], { encoding: "utf8" }).trim().split("\n");
    expect(ignored).toEqual(paths);
  });
});
