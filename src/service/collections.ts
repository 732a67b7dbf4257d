import { describeRef } from "../domain/chains.js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { CollectionsRepository } from "../store/ports/reads.js";

/** The store id of a collection (`ref`: domain/chains.ts collectionRef), or not_found naming it. */
export async function knownCollection(collections: CollectionsRepository, ref: string): Promise<number> {
  const id = await collections.collectionId(ref);
  if (id === undefined) {
    throw new ConnectError(`collection ${describeRef(ref)} not found`, Code.NotFound);
  }
  return id;
}
