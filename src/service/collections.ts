import { Code, ConnectError } from "@connectrpc/connect";
import type { ReadStore } from "../store/read-store.js";

/** The store id of a collection, or not_found naming the address. */
export function knownCollection(store: ReadStore, address: string): number {
  const id = store.collectionId(address);
  if (id === undefined) {
    throw new ConnectError(`collection ${address} not found`, Code.NotFound);
  }
  return id;
}
