import { describe, expect, it } from "vitest";
import { Ingest } from "../../src/service/ingest-service.js";
import { type WriteNotice, WriteNotices } from "../../src/service/write-notices.js";
import type { ImportCounts, IngestWriter } from "../../src/store/ports/writes.js";
import { C, VALID } from "../ingest/records.js";

// The write notification (service/write-notices.ts): the ingest path tells
// every subscriber of each batch that changed the store, and of nothing
// else; the live feeds and webhooks subscribe in the composition root.

function writerAnswering(counts: ImportCounts): IngestWriter {
  return { write: async () => counts, close: async () => {} };
}

describe("the write notification", () => {
  it("tells every subscriber the kind and the lower-case collections of a batch that changed the store", async () => {
    const notices = new WriteNotices();
    const heard: WriteNotice[] = [];
    notices.subscribe((n) => heard.push(n));
    const ingest = new Ingest(writerAnswering({ inserted: 1, updated: 0, unchanged: 0 }), { notices, now: () => 1_800_000_000_000 });
    await ingest.batch("sales", [{ line: 1, value: VALID.sales }], false);
    expect(heard).toEqual([{ kind: "sales", collections: new Set([C.toLowerCase()]) }]);
  });

  it("says nothing of a batch that changed nothing", async () => {
    const notices = new WriteNotices();
    const heard: WriteNotice[] = [];
    notices.subscribe((n) => heard.push(n));
    const ingest = new Ingest(writerAnswering({ inserted: 0, updated: 0, unchanged: 1 }), { notices, now: () => 1_800_000_000_000 });
    await ingest.batch("sales", [{ line: 1, value: VALID.sales }], false);
    expect(heard).toEqual([]);
  });

  it("keeps telling the others when one subscriber throws, and the write is answered", async () => {
    const notices = new WriteNotices();
    const heard: string[] = [];
    notices.subscribe(() => {
      throw new Error("a broken listener");
    });
    const unsubscribe = notices.subscribe((n) => heard.push(n.kind));
    const ingest = new Ingest(writerAnswering({ inserted: 0, updated: 1, unchanged: 0 }), { notices, now: () => 1_800_000_000_000 });
    await expect(ingest.batch("listings", [{ line: 1, value: VALID.listings }], false)).resolves.toMatchObject({ accepted: 1 });
    unsubscribe();
    await ingest.batch("listings", [{ line: 1, value: VALID.listings }], false);
    expect(heard).toEqual(["listings"]);
  });
});
