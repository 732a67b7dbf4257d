import { Code, ConnectError } from "@connectrpc/connect";
import type { CollectionsRepository } from "../store/ports/reads.js";

/** The store id of a collection, or not_found naming the address. */
export async function knownCollection(collections: CollectionsRepository, address: string): Promise<number> {
  const id = await collections.collectionId(address);
  if (id === undefined) {
    throw new ConnectError(`collection ${address} not found`, Code.NotFound);
  }
  return id;
}
