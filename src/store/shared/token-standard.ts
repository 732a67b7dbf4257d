// A collection's token standard (decisions.md, "ERC-1155"), as both engines'
// SQL asks it: its row found by its primary key wherever a statement needs
// to tell an ERC-1155 collection's rules (balances, units) from an ERC-721
// one's (each token's one owner).

export type TokenStandard = "ERC721" | "ERC1155";

/** Whether the collection of id `collectionId` (an SQL expression) has the standard `standard`. */
export const standardIs = (collectionId: string, standard: TokenStandard): string =>
  `(SELECT token_standard FROM collections WHERE id = ${collectionId}) = '${standard}'`;
